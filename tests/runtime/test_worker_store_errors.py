"""`streamdedup worker` on a store another process holds ends in one line naming the fix (the
real broker, a real RocksDB store held open by a second process)."""

import shutil
import subprocess
import sys
import textwrap

import orjson
import pytest
from confluent_kafka import Producer
from conftest import make_article

from runtime.conftest import read_topic
from streamdedup.cli import main
from streamdedup.runtime.topics import ensure_topics

HOLD = textwrap.dedent("""
    import sys, time
    from streamdedup.fingerprints.exact import ExactMethod
    from streamdedup.store.signature_store import SignatureStore
    store = SignatureStore(sys.argv[1], [ExactMethod()], {"held": "by a test"})
    print("open", flush=True)
    time.sleep(120)
""")


def test_a_worker_whose_store_is_in_use_stops_with_one_line(settings, monkeypatch, capsys):
    topics = settings.topics
    for name in ("pages", "unique", "duplicates", "rejected", "clusters", "index", "parts"):
        monkeypatch.setenv(f"STREAMDEDUP_TOPIC_{name.upper()}", getattr(topics, name))
    store = settings.state_dir / f"{topics.index}-0"  # the index partition's store (global topology)
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(store)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        code = main(["worker", "--bootstrap-servers", settings.bootstrap_servers, "--state-dir",
                     str(settings.state_dir), "--group-id", settings.group_id, "--exit-when-idle", "20"])
    finally:
        holder.kill()
        holder.wait()
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    line = [line for line in err.splitlines() if line.startswith("streamdedup: error:")]
    assert len(line) == 1 and "in use by another process" in line[0] and str(store) in line[0], err


def test_a_second_worker_on_a_running_ones_state_stops_alone(settings, monkeypatch, capsys):
    """Started again on a running worker's --state, a worker stopped with the store in use only
    once the group had given it partitions: it had joined under the same worker id (the host
    name), the group fenced the running one, and both stopped. It stops before it joins, and the
    running worker goes on."""
    import os
    import signal
    import time

    env = dict(os.environ)
    for name in ("pages", "unique", "duplicates", "rejected", "clusters", "index", "parts"):
        monkeypatch.setenv(f"STREAMDEDUP_TOPIC_{name.upper()}", getattr(settings.topics, name))
        env[f"STREAMDEDUP_TOPIC_{name.upper()}"] = getattr(settings.topics, name)
    args = ["worker", "--bootstrap-servers", settings.bootstrap_servers, "--state", str(settings.state_dir),
            "--group-id", settings.group_id]
    running = subprocess.Popen([sys.executable, "-m", "streamdedup", *args, "--exit-when-idle", "60"], env=env,
                               stderr=subprocess.PIPE, text=True)
    try:
        lock = settings.state_dir / "worker.lock"
        deadline = time.monotonic() + 60
        while not (lock.exists() and lock.read_text().startswith("pid")) and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(3)  # it joins its group
        assert main([*args, "--exit-when-idle", "5"]) == 2
        err = capsys.readouterr().err
        line = [line for line in err.splitlines() if line.startswith("streamdedup: error:")]
        assert len(line) == 1 and "in use by another worker" in line[0] and f"pid {running.pid}" in line[0], err
        time.sleep(5)  # a fenced worker stopped ~2 s after the second one joined
        assert running.poll() is None, running.stderr.read() if running.stderr else ""
    finally:
        running.send_signal(signal.SIGTERM)
        _, stderr = running.communicate(timeout=60)
    assert running.returncode == 0, stderr
    assert "fenced" not in stderr


def test_a_worker_on_a_store_from_before_band_checks_names_the_params_that_keep_it(settings, monkeypatch, capsys):
    """A worker upgraded past 2026-12-02 (MinHash's 8-bit values with band checks) finds its
    stores built with 16-bit values, their description without band_check_bits: it stops in one
    error naming the flags that keep them, and with those flags it runs on."""
    from streamdedup.fingerprints.a12 import A12Params
    from streamdedup.fingerprints.base import Params
    from streamdedup.fingerprints.minhash import MinHashParams

    topics = settings.topics
    for name in ("pages", "unique", "duplicates", "rejected", "clusters", "index", "parts"):
        monkeypatch.setenv(f"STREAMDEDUP_TOPIC_{name.upper()}", getattr(topics, name))
    # no input: each run that starts stops 1 s after the group gave it its partitions (stores opened)
    worker = ["worker", "--bootstrap-servers", settings.bootstrap_servers, "--state-dir", str(settings.state_dir),
              "--group-id", settings.group_id, "--exit-when-idle", "1"]
    kept = ["--param", "minhash.value_bits=16", "--param", "minhash.band_check_bits=0", "--param", "a12.word_bits=64"]
    with monkeypatch.context() as before:  # the description a store of before records
        before.setattr(MinHashParams, "__str__", lambda self: Params.__str__(self).replace(",band_check_bits=0", ""))
        before.setattr(A12Params, "__str__", lambda self: Params.__str__(self).replace(",word_bits=64", ""))
        assert main([*worker, *kept]) == 0
    assert (settings.state_dir / f"{topics.index}-0").is_dir()
    capsys.readouterr()
    assert main(worker) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    [line] = [line for line in err.splitlines() if line.startswith("streamdedup: error:")]
    assert "built with other parameters" in line, err
    assert "(--param a12.word_bits=64 --param minhash.value_bits=16 --param minhash.band_check_bits=0, or" in err
    assert main([*worker, *kept]) == 0


OLD_DEFAULTS = ["--param", "a12.word_bits=64", "--param", "minhash.value_bits=16", "--param", "minhash.band_check_bits=0"]


@pytest.mark.parametrize("maker_named", [True, False], ids=["maker-named", "earlier-version"])
def test_an_index_store_rebuilt_under_other_params_refuses_the_requests_filed_before(settings, monkeypatch, capsys,
                                                                                        tmp_path, maker_named):
    """The global topology rebuilds an index store that was moved away from `pages.index`, where
    the workers before filed their pages' signatures. Under other parameters it would file them
    and never match them (their keys and values are not its own): it stops in one line naming the
    fix instead, and the parameters they were filed with rebuild it. A request that names its
    maker's signature id is told by it; one of a version before 2026-12-02, which named none, by
    its MinHash and A12 signatures' sizes (the old defaults)."""
    import streamdedup.fingerprinter as fingerprinter

    topics = settings.topics
    for name in ("pages", "unique", "duplicates", "rejected", "clusters", "index", "parts"):
        monkeypatch.setenv(f"STREAMDEDUP_TOPIC_{name.upper()}", getattr(topics, name))
    ensure_topics(settings)
    producer = Producer(settings.client())
    story = "\n\n".join(make_article(4100, paragraphs=4))
    for i, site in enumerate(("alpha", "beta")):
        producer.produce(topics.pages, key=site.encode(), value=orjson.dumps(
            {"url": f"https://{site}.example/story", "content": story, "content_type": "text/plain",
             "fetched_at": f"2024-03-01T0{i}:00:00Z"}))
    assert producer.flush(30) == 0
    worker = ["worker", "--bootstrap-servers", settings.bootstrap_servers, "--state-dir", str(settings.state_dir),
              "--group-id", settings.group_id, "--exit-when-idle", "5"]
    with monkeypatch.context() as earlier:
        if not maker_named:  # a version that named no maker in its requests
            earlier.setattr(fingerprinter, "signature_identity", lambda config: b"")
        assert main([*worker, *OLD_DEFAULTS]) == 0
    assert len(read_topic(settings, topics.duplicates, expect_at_least=1)) == 1
    shutil.move(settings.state_dir, tmp_path / "moved-away")  # every store is rebuilt from Kafka
    capsys.readouterr()
    assert main(worker) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    [line] = [line for line in err.splitlines() if line.startswith("streamdedup: error:")]
    assert f"{topics.index}[0]@" in line and "STREAMDEDUP_TOPIC_INDEX" in line, err
    if maker_named:
        assert "was filed by a worker whose signatures were made with other parameters" in line
    else:
        assert "was filed by an earlier version of streamdedup" in line and "its a12, minhash signature" in line
        assert " ".join(OLD_DEFAULTS) in line
    assert main([*worker, *OLD_DEFAULTS]) == 0  # the store it left held nothing yet: it opens under these
    assert len(read_topic(settings, topics.duplicates)) == 1  # rebuilt, not emitted again


def test_a_state_folder_deleted_while_the_worker_runs_stops_it_unhealthy(settings):
    """Issue 56: RocksDB went on writing into the deleted folder's open files; the worker stayed
    healthy and exited 0, and its next start found empty stores."""
    import threading
    import time

    from runtime.test_worker import crawl, send
    from streamdedup.config import DetectorConfig
    from streamdedup.runtime.worker import StateLost, Worker

    records = crawl(3)
    send(settings, records)
    worker = Worker(settings, DetectorConfig())
    stopped: list[Exception] = []

    def run() -> None:
        try:
            worker.run(idle_timeout_s=8)
        except StateLost as err:
            stopped.append(err)

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 60
    while worker.stats.decided < len(records) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert worker.health()[0]
    shutil.rmtree(settings.state_dir)
    thread.join(20)
    assert not thread.is_alive() and stopped, "the worker ran on without its stores"
    assert str(settings.state_dir) in str(stopped[0]) and "\n" not in str(stopped[0])
    healthy, details = worker.health()
    assert not healthy and "is gone" in details["failed"]


def test_a_second_group_on_a_groups_topics_or_store_is_refused_naming_the_fix(settings):
    """An operator review: a second group on the same topic names read the first one's internal
    topics and added outputs (1,190 for 300 inputs); on a stopped worker's state directory it
    judged nothing, exit 0. Each is refused before anything is read, in one line naming the fix."""
    from dataclasses import replace

    from runtime.test_worker import outputs, send
    from streamdedup.config import DetectorConfig
    from streamdedup.runtime.errors import WorkerStopped
    from streamdedup.runtime.worker import StoreOfAnotherGroup, Worker

    records = [{"url": f"https://a.example/{i}", "content": "<p>" + " ".join(make_article(i)) + "</p>",
                "fetched_at": "2024-03-01T12:00:00Z"} for i in range(6)]
    send(settings, records)
    assert Worker(settings, DetectorConfig()).run(idle_timeout_s=1).decided == 6
    other = replace(settings, group_id=settings.group_id + "-b", state_dir=settings.state_dir.parent / "state-b")
    with pytest.raises(WorkerStopped) as same_outputs:
        Worker(other, DetectorConfig()).run(idle_timeout_s=1)
    assert "already judges" in str(same_outputs.value) and "STREAMDEDUP_TOPIC_UNIQUE" in str(same_outputs.value)
    own_outputs = replace(settings.topics, **{name: getattr(settings.topics, name) + "-b" for name in
                                              ("unique", "duplicates", "rejected", "clusters", "verdicts",
                                               "cluster_view")})
    with pytest.raises(WorkerStopped) as same_internal:
        Worker(replace(other, topics=own_outputs), DetectorConfig()).run(idle_timeout_s=1)
    line = str(same_internal.value)
    assert "internal topics of group" in line and f"STREAMDEDUP_TOPIC_INDEX={settings.topics.index}." in line
    own = replace(own_outputs, index=settings.topics.index + "-b", parts=settings.topics.parts + "-b")
    with pytest.raises(StoreOfAnotherGroup) as same_store:  # its own topics, but the first group's store
        Worker(replace(other, topics=own, state_dir=settings.state_dir), DetectorConfig()).run(idle_timeout_s=1)
    assert "would skip those records" in str(same_store.value) and "\n" not in str(same_store.value)
    assert Worker(replace(other, topics=own), DetectorConfig()).run(idle_timeout_s=1).decided == 6
    assert len(outputs(settings)["unique"]) == 6  # the first group's outputs: nothing added to them


def test_a_group_stopped_for_good_leaves_its_topics_to_a_new_group_with_a_warning(settings, caplog):
    """A migration to a new group id and new internal topics (docs/scaleout.md): once the old group has no
    member, the new one takes its input and outputs, with a WARNING; it is refused while the old one has
    members (test above), and on the old one's internal topics always."""
    from dataclasses import replace

    from runtime.test_worker import send
    from streamdedup.config import DetectorConfig
    from streamdedup.runtime.errors import WorkerStopped
    from streamdedup.runtime.worker import Worker

    records = [{"url": f"https://a.example/{i}", "content": "<p>" + " ".join(make_article(i)) + "</p>",
                "fetched_at": "2024-03-01T12:00:00Z"} for i in range(3)]
    send(settings, records)
    old = replace(settings, static_membership=False)  # it leaves the group when it stops
    assert Worker(old, DetectorConfig()).run(idle_timeout_s=1).decided == 3
    caplog.set_level("WARNING")
    new = replace(old, group_id=settings.group_id + "-v2", state_dir=settings.state_dir.parent / "state-v2",
                  topics=replace(settings.topics, index=settings.topics.index + "-v2",
                                 parts=settings.topics.parts + "-v2"))
    with pytest.raises(WorkerStopped, match="internal topics of group"):  # its records there: judged again
        Worker(replace(new, topics=settings.topics), DetectorConfig()).run(idle_timeout_s=1)
    assert Worker(new, DetectorConfig()).run(idle_timeout_s=1).decided == 3
    assert f"group {settings.group_id!r}, which has no member now" in caplog.text
