"""Static members: one of three closes; do the other two take its partitions? Plain confluent-kafka, no streamdedup code.

    python bench/static_shrink.py [noida|tansu]

Three consumers with group.instance.id (static members, session.timeout.ms 10 s) split a topic of 6
partitions; one closes (librdkafka sends no LeaveGroup for a static member, by design: KIP-345).
Apache Kafka ends its session after session.timeout.ms and gives its partitions to the others.
Measured with noida-db and Tansu: after 90 s the other two still owned only their own (the
departed member's 2 partitions owned by no one alive). Prints what each owned before and after."""
import sys
import tempfile
import threading
import time

from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

from streamdedup.runtime.broker import EmbeddedBroker


def member(bootstrap, name, owned, stop):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "g", "group.instance.id": name,
                  "session.timeout.ms": 10000, "auto.offset.reset": "earliest", "partition.assignment.strategy": "range"})
    def on_assign(c, parts): owned[name] = {p.partition for p in parts}
    def on_revoke(c, parts): owned[name] = set()
    c.subscribe(["t"], on_assign=on_assign, on_revoke=on_revoke)
    while not stop.is_set():
        c.poll(0.2)
    c.close()

with EmbeddedBroker(tempfile.mkdtemp(), kind=sys.argv[1] if len(sys.argv) > 1 else "noida") as broker:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic("t", 6, 1)])["t"].result(10)
    owned, stops, threads = {}, {}, {}
    for n in ("a", "b", "c"):
        stops[n] = threading.Event()
        threads[n] = threading.Thread(target=member, args=(broker.bootstrap_servers, n, owned, stops[n]))
        threads[n].start()
    t0 = time.time()
    while time.time() - t0 < 60 and not (len(owned) == 3 and all(owned.values())):
        time.sleep(0.5)
    print("formed", round(time.time() - t0, 1), {k: sorted(v) for k, v in owned.items()}, flush=True)
    stops["c"].set()
    threads["c"].join()
    owned.pop("c")
    t0 = time.time()
    while time.time() - t0 < 90 and sum(len(v) for v in owned.values()) < 6:
        time.sleep(0.5)
    print("after c left", round(time.time() - t0, 1), {k: sorted(v) for k, v in owned.items()}, flush=True)
    for n in ("a", "b"):
        stops[n].set()
    for n in ("a", "b"):
        threads[n].join()
