"""The CLI's Kafka commands: broker, worker, feed, faust, demo, topics; their flags and settings.

Each command's settings come from the config file's [worker] and [kafka] tables, then the
STREAMDEDUP_* environment, then its flags (`worker_settings`); a command that talks to Kafka first
asks the brokers once (`reach_broker`), so that none answering ends it in one line. `cli.py`
builds the parser (with `add_commands`) and runs the command.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from streamdedup.cli_options import add_detector_options, detector_config, port_arg, rate_arg, seconds_arg

if TYPE_CHECKING:  # imported where used: `streamdedup dedup` needs no Kafka client
    from streamdedup.config import DetectorConfig
    from streamdedup.runtime.settings import WorkerSettings

SAMPLE_CRAWL = Path(__file__).parent / "data" / "sample_crawl.jsonl.gz"
CONNECT_TIMEOUT_S = 15.0


def worker_settings(args: argparse.Namespace, **extra: Any) -> WorkerSettings:
    """The worker's settings: the config file, then the environment, then the flags.

    Worker settings: --config's [worker] and [kafka] tables (or the file of the deprecated --worker-config), then
    STREAMDEDUP_* variables, then flags."""
    from streamdedup.runtime.settings import WorkerSettings

    return WorkerSettings.load(getattr(args, "worker_config", None) or getattr(args, "config", None),
                               bootstrap_servers=args.bootstrap_servers,
                               replication_factor=getattr(args, "replication_factor", None), **extra)


class BrokerUnreachable(Exception):
    """No Kafka broker answered; the message names the address and what to do."""


def reach_broker(settings: WorkerSettings, timeout: float) -> None:
    """Check that the brokers answer before a command starts its clients.

    Ask the brokers for their metadata once, before a command starts its clients: a broker that is not there ends the
    command in one line instead of librdkafka's retries and a traceback."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(settings.client(log_level=0))  # its connection errors are ours to report
    try:
        admin.list_topics(timeout=timeout)
    except KafkaException as err:
        problem = err.args[0].str() if err.args and hasattr(err.args[0], "str") else str(err)
        raise BrokerUnreachable(f"no Kafka broker answered at {settings.bootstrap_servers} within {timeout:g} s "
                                f"({problem}): start one (`streamdedup broker` for development) or give its address "
                                "with --bootstrap-servers or STREAMDEDUP_BOOTSTRAP_SERVERS") from None


def cmd_broker(args: argparse.Namespace) -> int:
    """Run a development Kafka-protocol broker (noida-db) until Ctrl-C or SIGTERM (`streamdedup broker`)."""
    from streamdedup.runtime.broker import BrokerExited, EmbeddedBroker

    broker = EmbeddedBroker(args.data_dir, port=args.port, die_with_parent=True)
    try:
        broker.start()
    except BrokerExited as err:  # its cause, from its log, and the fix: one line, not a traceback
        if "already running" in err.cause:
            fix = f"Stop the one running on {args.data_dir}, or give this one another --data-dir"
        elif "in use" in err.cause:
            fix = f"Give another --port, or stop what listens on port {broker.port}"
        else:
            fix = "See the rest of its log"
        print(f"streamdedup: error: noida-db did not start on {broker.bootstrap_servers} with data in {args.data_dir}, "
              f"and its log ({err.log}) says: {err.cause or f'nothing (it exited with {err.code})'}. {fix}",
              file=sys.stderr)
        return 2
    print(f"Kafka-protocol broker (noida-db) on {broker.bootstrap_servers}, data in {args.data_dir}; "
          "Ctrl-C or SIGTERM stops it", flush=True)
    return broker.run_until_stopped()


def worker_command_settings(args: argparse.Namespace) -> WorkerSettings:
    """`streamdedup worker`'s settings: the config file, the environment, then its own flags."""
    return worker_settings(args, state_dir=args.state, group_id=args.group_id, on_topic_reset=args.on_topic_reset,
                            adopt_settings=args.adopt_settings or None, worker_id=args.worker_id,
                            topology=args.topology)


def cmd_worker(args: argparse.Namespace) -> int:
    """Run a Kafka worker until it is stopped (`streamdedup worker`)."""
    from streamdedup.runtime.watchdog import CallWatchdog, exit_stuck
    from streamdedup.runtime.worker import Worker, WorkerStopped

    config = detector_config(args)
    settings = worker_command_settings(args)
    reach_broker(settings, args.connect_timeout)
    try:
        worker = Worker(settings, config, CallWatchdog(exit_stuck))
        if args.metrics_port:
            worker.metrics.serve(args.metrics_port, args.metrics_host)
        stats = worker.run(idle_timeout_s=args.exit_when_idle)
    except WorkerStopped as err:  # fenced, store ahead of Kafka, store not writable: one line naming the fix
        print(f"streamdedup: error: {err}", file=sys.stderr)
        return 2
    # accounting: input records by topic against outputs by topic (see outputs/kafka.py)
    print(orjson.dumps({"consumed": stats.consumed, "inputs": dict(stats.inputs), "decided": stats.decided,
                        "produced": dict(stats.produced), "refused": stats.refused, "replayed": stats.replayed,
                        "batches": stats.batches, "aborted": stats.aborted}).decode())
    return 0


def cmd_feed(args: argparse.Namespace) -> int:
    """Produce input files' records to the input topic (`streamdedup feed`)."""
    from tqdm import tqdm

    from streamdedup.record.readers import check_inputs, read_inputs
    from streamdedup.runtime.feed import FeedFailed, feed
    from streamdedup.runtime.topics import ensure_topics, topic_exists

    check_inputs(args.inputs)  # before the broker is asked for anything
    settings = worker_settings(args)
    reach_broker(settings, args.connect_timeout)
    partitions = ensure_topics(settings, timeout=args.connect_timeout)
    topic = args.topic or settings.topics.pages
    if topic not in partitions and not topic_exists(settings, topic, args.connect_timeout):
        # a broker that creates topics on first use would make it with its defaults (1 MB records,
        # 1 partition), and no worker reads it: a typo must not send a crawl nowhere
        print(f"streamdedup: error: topic {topic!r} does not exist on {settings.bootstrap_servers}, so no worker "
              f"reads it: leave out --topic to feed the workers' pages topic ({settings.topics.pages!r}), or create "
              f"{topic!r} first and run the workers with STREAMDEDUP_TOPIC_PAGES={topic}", file=sys.stderr)
        return 2
    records = tqdm(read_inputs(args.inputs), unit="page", desc="feed", disable=None, file=sys.stderr)
    refused: list[dict] = []
    by_reader: Counter[str] = Counter()  # records the reader rejected (a WARC response not 2xx, a cut file)
    try:
        sent = feed(records, settings.client(), topic, args.rate,
                    rejected_topic=settings.topics.rejected, refused=refused, by_reader=by_reader)
    except FeedFailed as err:
        print(f"streamdedup: error: {err}", file=sys.stderr)
        return 2
    reasons = ", ".join(f"{reason} {count}" for reason, count in by_reader.items())
    rejected = by_reader.total()
    print(f"sent {sent - len(refused) - rejected} pages to {topic} on {settings.bootstrap_servers}"
          + (f"; {len(refused)} too large for the broker went to {settings.topics.rejected} as too_large_for_broker"
             if refused else "")
          + (f"; {rejected} the reader rejected ({reasons}) went to {settings.topics.rejected}"
             if rejected else ""))
    return 0


def cmd_faust(args: argparse.Namespace) -> int:
    """Run the detector as a Faust app (`streamdedup faust`)."""
    from streamdedup.fingerprinter import Fingerprinter
    from streamdedup.runtime.worker.state_lock import StateInUse, lock_state_dir

    config = detector_config(args)
    settings = worker_settings(args, state_dir=args.state, group_id=args.group_id, on_topic_reset=args.on_topic_reset,
                                worker_id=args.worker_id)
    # the app builds its detectors at a partition's first record: a method parameter that does not
    # exist is refused here, in one line, not there in a traceback with the group joined
    Fingerprinter(config)
    try:  # as the worker's: before joining the group, a second app on this --state stops alone (state_lock.py)
        state_lock = lock_state_dir(Path(settings.state_dir))
    except StateInUse as err:
        print(f"streamdedup: error: {err}", file=sys.stderr)
        return 2
    try:
        return _run_faust(args, settings, config)
    finally:  # on every path: main() may be called again in this process
        os.close(state_lock)


def _run_faust(args: argparse.Namespace, settings: WorkerSettings, config: DetectorConfig) -> int:
    """The Faust app of `cmd_faust`, its --state held: the topics, then the app until it stops."""
    from dataclasses import replace

    from streamdedup.runtime.errors import WorkerStopped
    from streamdedup.runtime.faust_app import (
        JOURNAL_KEEP,
        StartedOver,
        create_app,
        default_group_id,
        partitions_started_over,
    )
    from streamdedup.runtime.group_settings import FAUST, agree_on_settings
    from streamdedup.runtime.topics import ensure_topics

    if args.group_id is None and "STREAMDEDUP_GROUP_ID" not in os.environ:  # not the worker's default group
        settings = replace(settings, group_id=default_group_id(Path(settings.state_dir)))
    reach_broker(settings, args.connect_timeout)
    # the worker's topics (32 MiB records); the changelogs of the global topology are not the app's
    ensure_topics(replace(settings, topology="local"), timeout=args.connect_timeout)
    try:  # as a worker's: one mode per group and set of topics, and one set of verdict settings per group
        agree_on_settings(replace(settings, topology=FAUST), config)
    except WorkerStopped as err:
        print(f"streamdedup: error: {err}", file=sys.stderr)
        return 2
    try:
        started_over = partitions_started_over(settings, settings.group_id, timeout=args.connect_timeout)
    except StartedOver as err:  # on_topic_reset = refuse
        print(f"streamdedup: error: {err}", file=sys.stderr)
        return 2
    app = create_app(settings, config, app_id=settings.group_id, journal_keep=max(1, args.journal_keep or JOURNAL_KEEP),
                     started_over=started_over)
    sys.argv = ["streamdedup-faust", "worker", "-l", "info" if args.verbose else "warn", "--without-web"]
    app.main()
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """Run the demo: a broker, a worker and a crawl fed to them, then a summary (`streamdedup demo`)."""
    from streamdedup.record.readers import check_inputs
    from streamdedup.runtime.demo import run_demo

    check_inputs([str(args.crawl)])  # before a broker is started for it
    run_demo(args.crawl, args.workdir, detector_config(args))
    return 0


def cmd_topics(args: argparse.Namespace) -> int:
    """Create the topics the worker needs that are missing, and print each one's partitions (`streamdedup topics`)."""
    from streamdedup.runtime.topics import ensure_topics

    settings = worker_settings(args)
    reach_broker(settings, args.connect_timeout)
    print(orjson.dumps(ensure_topics(settings, timeout=args.connect_timeout)).decode())
    return 0


def _kafka_options(parser: argparse.ArgumentParser, with_config: bool) -> None:
    """The flags every Kafka command takes: where the brokers are, how long to wait for them."""
    parser.add_argument("--bootstrap-servers", default=os.environ.get("STREAMDEDUP_BOOTSTRAP_SERVERS"),
                        help="Kafka brokers (env STREAMDEDUP_BOOTSTRAP_SERVERS; default 127.0.0.1:9092)")
    if with_config:
        parser.add_argument("--config", type=Path, help="TOML file with [worker] and [kafka] tables "
                            "(env STREAMDEDUP_* and flags win)")
    parser.add_argument("--worker-config", type=Path, help=argparse.SUPPRESS)  # deprecated: --config
    parser.add_argument("--connect-timeout", type=seconds_arg, metavar="SECONDS",
                        default=os.environ.get("STREAMDEDUP_CONNECT_TIMEOUT", str(CONNECT_TIMEOUT_S)),
                        help="give up when no broker answers within this long (env "
                             f"STREAMDEDUP_CONNECT_TIMEOUT; default {CONNECT_TIMEOUT_S:g})")

def _topic_reset_option(parser: argparse.ArgumentParser) -> None:
    """`--on-topic-reset`: what a worker or app does with a partition that started over."""
    parser.add_argument("--on-topic-reset", choices=("refuse", "restart"),
                        help="a partition whose store read a topic that has since started over (deleted and "
                             "created again, a broker that lost its data, another cluster): refuse to start "
                             "(default) or judge it from its beginning, keeping what the store knows (env "
                             "STREAMDEDUP_ON_TOPIC_RESET)")

def _worker_id_option(parser: argparse.ArgumentParser, help: str) -> None:
    """`--worker-id`: a worker's or app's name in its group."""
    parser.add_argument("--worker-id", help=f"{help} (env STREAMDEDUP_WORKER_ID; default the host name and a "
                                            "hash of the state folder: its own for every state folder on a host, "
                                            "the same at every restart)")

def _state_option(parser: argparse.ArgumentParser, help: str) -> None:
    """`--state` (and the deprecated `--state-dir`): the stores' folder."""
    parser.add_argument("--state", type=Path, help=help)
    parser.add_argument("--state-dir", type=Path, dest="state", help=argparse.SUPPRESS)  # deprecated: --state


def add_commands(command: Callable[..., argparse.ArgumentParser], inputs_help: str) -> None:
    """The Kafka commands' parsers, made by `command(name, help)` (`cli.build_parser`'s), in --help's order."""
    broker = command("broker", "run a local Kafka-protocol broker (noida-db) in the foreground, for development")
    broker.add_argument("--port", type=int, default=9092, help="port on 127.0.0.1 (default 9092)")
    broker.add_argument("--data-dir", type=Path, default=Path("broker-data"),
                        help="folder for the broker's data (default ./broker-data)")
    broker.set_defaults(func=cmd_broker)

    worker = command("worker", "consume pages from Kafka, produce verdicts (exactly once)")
    _kafka_options(worker, with_config=False)
    _state_option(worker, "folder of the RocksDB stores of the partitions this worker owns (env "
                         "STREAMDEDUP_STATE_DIR; default ./state)")
    worker.add_argument("--group-id", help="Kafka consumer group: workers of one group share the pages "
                        "(env STREAMDEDUP_GROUP_ID; default streamdedup)")
    _worker_id_option(worker, "this worker's name in its group, its own on every worker")
    worker.add_argument("--topology", choices=("global", "local"),
                        help="global: copies are found across input partitions (default); local: within each "
                             "partition only. Every worker of a group runs the same (env STREAMDEDUP_TOPOLOGY)")
    worker.add_argument("--metrics-port", type=port_arg, default=os.environ.get("STREAMDEDUP_METRICS_PORT", "0"),
                        help="serve Prometheus metrics on this port (env STREAMDEDUP_METRICS_PORT; 0 = off)")
    worker.add_argument("--metrics-host", default=os.environ.get("STREAMDEDUP_METRICS_HOST", "127.0.0.1"),
                        help="address the metrics endpoint binds (env STREAMDEDUP_METRICS_HOST; default 127.0.0.1, "
                             "loopback only: it has no authentication; 0.0.0.0 in a container)")
    worker.add_argument("--exit-when-idle", type=seconds_arg, metavar="SECONDS",
                        help="stop after this long without input (default: run until killed)")
    _topic_reset_option(worker)
    worker.add_argument("--adopt-settings", action="store_true",
                        help="make this worker's verdict settings (policies, retention, clock skew) its group's new "
                             "ones; without it, a worker whose settings are not its group's refuses to start. "
                             "Restart every worker of the group with the new settings, one of them with this (env "
                             "STREAMDEDUP_ADOPT_SETTINGS=1)")
    add_detector_options(worker)
    worker.set_defaults(func=cmd_worker)

    feeder = command("feed", "produce JSON Lines / WARC pages into Kafka")
    feeder.add_argument("inputs", nargs="+", help=inputs_help)
    _kafka_options(feeder, with_config=True)
    feeder.add_argument("--topic", help="topic to produce to (default: the pages topic, 'pages')")
    feeder.add_argument("--rate", type=rate_arg, metavar="PAGES_PER_S",
                        help="pages per second, above 0 (default: as fast as possible)")
    feeder.set_defaults(func=cmd_feed)

    faust_worker = command("faust", "the same detector as a faust-streaming app (at-least-once, "
                           "idempotent re-emission)")
    _kafka_options(faust_worker, with_config=False)
    _state_option(faust_worker, "folder of the app's RocksDB stores (default ./state)")
    faust_worker.add_argument("--group-id", help="Faust app id, its consumer group (env STREAMDEDUP_GROUP_ID; default "
                              "streamdedup-faust, not the worker's group)")
    _worker_id_option(faust_worker, "this app's name in its group (its static member id streamdedup-faust-<id>), "
                                   "its own on every app")
    _topic_reset_option(faust_worker)
    faust_worker.add_argument("--journal-keep", type=int, metavar="N",
                              help="verdicts kept per partition for replays after a crash: those at or after the "
                                   "group's committed offset, and at least the last N (default 10,000)")
    add_detector_options(faust_worker)
    faust_worker.set_defaults(func=cmd_faust)

    demo = command("demo", "broker + worker + the sample crawl, end to end, then stop")
    demo.add_argument("--crawl", type=Path, default=SAMPLE_CRAWL, help="pages to feed (default: the sample crawl "
                      "shipped with streamdedup)")
    demo.add_argument("--workdir", type=Path, help="keep broker data and stores here (default: a temporary folder, "
                      "removed at the end)")
    add_detector_options(demo)
    demo.set_defaults(func=cmd_demo)

    topics = command("topics", "create the topics the worker uses (existing ones are kept)")
    topics.add_argument("action", choices=("create",), help="create: the pages, output and internal topics")
    for creates in (topics, worker):
        creates.add_argument("--replication-factor", type=int, help="replicas of each topic it creates (env "
                             "STREAMDEDUP_REPLICATION_FACTOR; default 1, a dev broker; production: 3)")
    _kafka_options(topics, with_config=True)
    topics.set_defaults(func=cmd_topics)
