"""Near-duplicate detection for web crawls: files in, folders out (dedup), or a Kafka stream (worker)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from streamdedup.clean.errors import CleaningStackMissing
from streamdedup.clean.extract import EXTRACTORS
from streamdedup.cli_options import (
    EXAMPLES,
    EXTRACTOR_HELP,
    add_detector_options,
    detector_config,
    port_arg,
    rate_arg,
    scoring_config,
    seconds_arg,
    time_arg,
)
from streamdedup.extras import MissingExtra, check_extra
from streamdedup.fingerprints.registry import METHODS

if TYPE_CHECKING:  # imported where used: `streamdedup dedup` needs no Kafka client
    from streamdedup.config import DetectorConfig
    from streamdedup.runtime.settings import WorkerSettings

SAMPLE_CRAWL = Path(__file__).parent / "data" / "sample_crawl.jsonl.gz"
CONNECT_TIMEOUT_S = 15.0


def package_version() -> str:
    """The version of the code that runs (`streamdedup.__version__`).

    Not the installed distribution's metadata: an editable install keeps the version it was
    installed at, and a tree pulled since would name an older one."""
    from streamdedup import __version__

    return __version__


def cmd_dedup(args: argparse.Namespace) -> int:
    """Deduplicate into --out: `streamdedup.api.dedup_files`, with what it did on the terminal."""
    from streamdedup.api.file_mode import STDIN, dedup_files

    def notify(line: str) -> None:
        print(line, file=sys.stderr)

    run = dedup_files(args.inputs, args.out, detector_config(args), state=args.state, fresh=args.fresh,
                      append=args.append, batch_wait=args.batch_wait, progress=not args.quiet,
                      notify=None if args.quiet else notify)
    if run.summary is None:  # an unchanged rerun of a finished job
        if not args.quiet:
            print(f"{run.out} already holds this finished run ({run.consumed} records): nothing to do "
                  "(--fresh starts over)")
        return 0
    if run.stopped:
        print(f"streamdedup: stopped by {run.stopped} after the batch in hand: the {run.consumed} records read are in "
              f"{run.out}/ with their summary" + ("; what stdin held past them was not read (--append takes more)"
                                                  if STDIN in args.inputs else _resume_hint(args)), file=sys.stderr)
        if STDIN not in args.inputs:
            return 128 + signal.Signals[run.stopped].value
    if not args.quiet:
        print(orjson.dumps({k: run.summary[k] for k in ("records", "unique", "duplicates", "rejected",
                                                         "clusters", "records_per_s")}).decode())
        print(f"outputs in {args.out}/ (unique.jsonl, duplicates.jsonl, rejected.jsonl, verdicts.jsonl, "
              "clusters.jsonl, summary.json)")
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from streamdedup.evaluate.run import DEFAULT as DEFAULT_SCENARIO
    from streamdedup.evaluate.run import run_evaluation

    methods = ([m for m, cls in METHODS.items() if cls.can_match] if args.eval_methods == "all"
               else [m.strip() for m in args.eval_methods.split(",")])
    config, configured = scoring_config(args, methods)  # the parameters of every method scored are accepted
    metrics = run_evaluation(args.dataset, args.out, config, methods, quiet=args.quiet, default_methods=configured)
    if not args.quiet:
        for name, row in metrics["methods"].items():
            print(f"{name:>12}  P={row['precision']:.3f}  R={row['recall']:.3f}  F1={row['f1']:.3f}  "
                  f"ARI={row['ari']:.3f}")
            if name == DEFAULT_SCENARIO:  # the figures the README's Results give (metrics.json: directional.all)
                edges = row["directional"]["all"]
                print(f"{'':>12}  edges={edges['edges']} (content-loss {edges['content_loss_edges']})  "
                      f"edge precision={edges['edge_precision']:.3f}  edge recall={edges['edge_recall']:.3f}")
        print(f"report: {args.out / 'report.html'}")
    return 0


def cmd_store(args: argparse.Namespace) -> int:
    from streamdedup.store.maintenance import delete_pages, expire_pages, store_info

    if args.store_command == "info":
        print(orjson.dumps(store_info(args.state), option=orjson.OPT_INDENT_2).decode())
    elif args.store_command == "delete":
        missing = delete_pages(args.state, args.ids)
        print(f"deleted {len(args.ids) - len(missing)} page(s); not found: {missing or 'none'}")
        return 1 if missing else 0
    elif args.store_command == "expire":
        expired = expire_pages(args.state, args.before)
        print(f"expired {expired} page(s) fetched before {args.before.isoformat()}")
    return 0


def cmd_lexicon(args: argparse.Namespace) -> int:
    from streamdedup.clean.pipeline import CleaningConfig
    from streamdedup.stats.build import build_from_files

    cleaning = CleaningConfig(extractor=args.extractor) if args.extractor else CleaningConfig()
    lexicon = build_from_files(args.inputs, args.out, cleaning, min_df=args.min_df)
    sizes = {lang: len(words) for lang, words in lexicon.df_table.items()}
    print(orjson.dumps({"version": lexicon.version, "documents": lexicon.n_docs,
                        "avg_length": round(lexicon.avg_length, 1), "words_per_language": sizes}).decode())
    print(f"use it with --lexicon {args.out} (or lexicon = \"{args.out}\" in the config file)")
    return 0


def _worker_settings(args: argparse.Namespace, **extra: Any) -> WorkerSettings:
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


def _worker_command_settings(args: argparse.Namespace) -> WorkerSettings:
    """`streamdedup worker`'s settings: the config file, the environment, then its own flags."""
    return _worker_settings(args, state_dir=args.state, group_id=args.group_id, on_topic_reset=args.on_topic_reset,
                            adopt_settings=args.adopt_settings or None, worker_id=args.worker_id,
                            topology=args.topology)


def cmd_worker(args: argparse.Namespace) -> int:
    from streamdedup.runtime.watchdog import CallWatchdog, exit_stuck
    from streamdedup.runtime.worker import Worker, WorkerStopped

    config = detector_config(args)
    settings = _worker_command_settings(args)
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
    from tqdm import tqdm

    from streamdedup.record.readers import check_inputs, read_inputs
    from streamdedup.runtime.feed import FeedFailed, feed
    from streamdedup.runtime.topics import ensure_topics, topic_exists

    check_inputs(args.inputs)  # before the broker is asked for anything
    settings = _worker_settings(args)
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
    from streamdedup.fingerprinter import Fingerprinter
    from streamdedup.runtime.worker.state_lock import StateInUse, lock_state_dir

    config = detector_config(args)
    settings = _worker_settings(args, state_dir=args.state, group_id=args.group_id, on_topic_reset=args.on_topic_reset,
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
    from streamdedup.record.readers import check_inputs
    from streamdedup.runtime.demo import run_demo

    check_inputs([str(args.crawl)])  # before a broker is started for it
    run_demo(args.crawl, args.workdir, detector_config(args))
    return 0


def cmd_topics(args: argparse.Namespace) -> int:
    from streamdedup.runtime.topics import ensure_topics

    settings = _worker_settings(args)
    reach_broker(settings, args.connect_timeout)
    print(orjson.dumps(ensure_topics(settings, timeout=args.connect_timeout)).decode())
    return 0


def cmd_clusters(args: argparse.Namespace) -> int:
    from streamdedup.clusters import read_folder, read_topic_stories, table

    if args.out is not None:
        if not args.out.is_dir():
            raise NotADirectoryError(f"{args.out} is not a folder: give --out the folder of a streamdedup dedup run")
        stories = read_folder(args.out).stories()
    else:
        settings = _worker_settings(args)
        reach_broker(settings, args.connect_timeout)
        client = {k: v for k, v in settings.client().items() if k != "bootstrap.servers"}
        stories = read_topic_stories(settings.bootstrap_servers, args.topic or settings.topics.cluster_view,
                                     args.connect_timeout, **client).stories()
    if args.format == "table":
        print(table(stories))
    else:
        for story in stories:
            print(orjson.dumps(story).decode())
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="streamdedup", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  streamdedup dedup crawl.jsonl.gz --out out/crawl\n  streamdedup demo\n\n"
               "`streamdedup COMMAND --help` shows a command's options and an example.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}",
                        help="show the installed version and exit")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO (default: warnings and errors)")
    # -v after the command too; SUPPRESS: absent there, it leaves the value given before the command
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                        help="log at INFO (default: warnings and errors)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help: str, **kwargs: Any) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help, description=help[:1].upper() + help[1:] + ".",
                              epilog=EXAMPLES[name], parents=[common],
                              formatter_class=argparse.RawDescriptionHelpFormatter, **kwargs)

    inputs_help = "JSON Lines (.gz ok), WARC (.gz ok), or - for stdin"
    quiet_help = "print nothing but errors (no progress bar, no summary)"

    dedup = command("dedup", "deduplicate JSON Lines / WARC files (or - for stdin) into a folder")
    dedup.add_argument("inputs", nargs="+", help=inputs_help)
    dedup.add_argument("--out", type=Path, required=True,
                       help="folder for unique.jsonl, duplicates.jsonl, rejected.jsonl, verdicts.jsonl, clusters.jsonl "
                            "and summary.json")
    dedup.add_argument("--state", type=Path, help="store folder (default OUT/state); give the same one to later runs "
                       "so they find duplicates of these pages")
    dedup.add_argument("--fresh", action="store_true", help="start over: delete the store (only a streamdedup "
                       "store) and this command's files in --out")
    dedup.add_argument("--append", action="store_true", help="add other inputs to an --out that holds a finished "
                       "run (pages it already holds come out as duplicate_id)")
    dedup.add_argument("--batch-wait", type=seconds_arg, default=1.0, metavar="SECONDS",
                       help="reading stdin, a batch also ends this long after its first page if it has not filled "
                       "(default 1): a slow stream's pages come out within about that")
    dedup.add_argument("-q", "--quiet", action="store_true", help=quiet_help)
    add_detector_options(dedup)
    dedup.set_defaults(func=cmd_dedup)

    evaluate = command("eval", "score methods on a labelled JSON Lines set (field 'cluster')")
    evaluate.add_argument("dataset", type=Path, help="labelled JSON Lines: pages with a 'cluster' field "
                          "(e.g. made by `streamdedup devset`)")
    evaluate.add_argument("--out", type=Path, required=True, help="folder for metrics.json and report.html")
    evaluate.add_argument("--methods", dest="eval_methods", default="all",
                          help="methods to score alone, comma-separated, or 'all' (default)")
    evaluate.add_argument("-q", "--quiet", action="store_true", help=quiet_help)
    add_detector_options(evaluate, with_methods=False)
    evaluate.set_defaults(func=cmd_eval, methods=None)

    store = command("store", "inspect or maintain a state store")
    store_commands = store.add_subparsers(dest="store_command", required=True, metavar="ACTION")

    def store_command(name: str, help: str) -> argparse.ArgumentParser:
        """One parser per action, so that options and ids come in any order (`delete --state DIR ID…`)."""
        action = store_commands.add_parser(name, help=help, parents=[common], epilog=EXAMPLES["store"],
                                           formatter_class=argparse.RawDescriptionHelpFormatter)
        action.add_argument("--state", type=Path, required=True, help="the store's folder")
        action.set_defaults(func=cmd_store)
        return action

    store_command("info", "counts and configuration, after a scan that verifies every block's checksum "
                  "(of each partition's store, given a worker's state folder)")
    store_command("delete", "forget pages by id").add_argument("ids", nargs="+", metavar="ID", help="page ids")
    store_command("expire", "forget pages fetched before a time").add_argument(
        "--before", required=True, type=time_arg, help="ISO-8601 time, e.g. 2024-01-01T00:00:00Z")

    lexicon = command("lexicon", "build frozen collection statistics from a corpus")
    lexicon.add_argument("action", choices=("build",), help="build: count words per language over the inputs")
    lexicon.add_argument("inputs", nargs="+", help=inputs_help)
    lexicon.add_argument("--out", type=Path, required=True, help="lexicon file to write (.json or .json.gz)")
    lexicon.add_argument("--min-df", type=int, default=2, help="drop words seen in fewer documents (default 2)")
    lexicon.add_argument("--extractor", choices=EXTRACTORS, help=EXTRACTOR_HELP)
    lexicon.set_defaults(func=cmd_lexicon)

    def kafka_options(parser: argparse.ArgumentParser, with_config: bool) -> None:
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

    def topic_reset_option(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--on-topic-reset", choices=("refuse", "restart"),
                            help="a partition whose store read a topic that has since started over (deleted and "
                                 "created again, a broker that lost its data, another cluster): refuse to start "
                                 "(default) or judge it from its beginning, keeping what the store knows (env "
                                 "STREAMDEDUP_ON_TOPIC_RESET)")

    def worker_id_option(parser: argparse.ArgumentParser, help: str) -> None:
        parser.add_argument("--worker-id", help=f"{help} (env STREAMDEDUP_WORKER_ID; default the host name and a "
                                                "hash of the state folder: its own for every state folder on a host, "
                                                "the same at every restart)")

    def state_option(parser: argparse.ArgumentParser, help: str) -> None:
        parser.add_argument("--state", type=Path, help=help)
        parser.add_argument("--state-dir", type=Path, dest="state", help=argparse.SUPPRESS)  # deprecated: --state

    broker = command("broker", "run a local Kafka-protocol broker (noida-db) in the foreground, for development")
    broker.add_argument("--port", type=int, default=9092, help="port on 127.0.0.1 (default 9092)")
    broker.add_argument("--data-dir", type=Path, default=Path("broker-data"),
                        help="folder for the broker's data (default ./broker-data)")
    broker.set_defaults(func=cmd_broker)

    worker = command("worker", "consume pages from Kafka, produce verdicts (exactly once)")
    kafka_options(worker, with_config=False)
    state_option(worker, "folder of the RocksDB stores of the partitions this worker owns (env "
                         "STREAMDEDUP_STATE_DIR; default ./state)")
    worker.add_argument("--group-id", help="Kafka consumer group: workers of one group share the pages "
                        "(env STREAMDEDUP_GROUP_ID; default streamdedup)")
    worker_id_option(worker, "this worker's name in its group, its own on every worker")
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
    topic_reset_option(worker)
    worker.add_argument("--adopt-settings", action="store_true",
                        help="make this worker's verdict settings (policies, retention, clock skew) its group's new "
                             "ones; without it, a worker whose settings are not its group's refuses to start. "
                             "Restart every worker of the group with the new settings, one of them with this (env "
                             "STREAMDEDUP_ADOPT_SETTINGS=1)")
    add_detector_options(worker)
    worker.set_defaults(func=cmd_worker)

    feeder = command("feed", "produce JSON Lines / WARC pages into Kafka")
    feeder.add_argument("inputs", nargs="+", help=inputs_help)
    kafka_options(feeder, with_config=True)
    feeder.add_argument("--topic", help="topic to produce to (default: the pages topic, 'pages')")
    feeder.add_argument("--rate", type=rate_arg, metavar="PAGES_PER_S",
                        help="pages per second, above 0 (default: as fast as possible)")
    feeder.set_defaults(func=cmd_feed)

    faust_worker = command("faust", "the same detector as a faust-streaming app (at-least-once, "
                           "idempotent re-emission)")
    kafka_options(faust_worker, with_config=False)
    state_option(faust_worker, "folder of the app's RocksDB stores (default ./state)")
    faust_worker.add_argument("--group-id", help="Faust app id, its consumer group (env STREAMDEDUP_GROUP_ID; default "
                              "streamdedup-faust, not the worker's group)")
    worker_id_option(faust_worker, "this app's name in its group (its static member id streamdedup-faust-<id>), "
                                   "its own on every app")
    topic_reset_option(faust_worker)
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
    kafka_options(topics, with_config=True)
    topics.set_defaults(func=cmd_topics)

    clusters = command("clusters", "print the current stories (clusters with their pages) of a dedup --out folder "
                       "or of the worker's cluster view topic")
    where = clusters.add_mutually_exclusive_group(required=True)
    where.add_argument("--out", type=Path, help="the folder of a streamdedup dedup run")
    where.add_argument("--bootstrap-servers", help="Kafka brokers: read the cluster view topic to its end")
    clusters.add_argument("--topic", help="the cluster view topic (default: STREAMDEDUP_TOPIC_CLUSTER_VIEW or "
                          "'pages.cluster_view'); the cluster events topic works too")
    clusters.add_argument("--config", type=Path, help="TOML file with [worker] and [kafka] tables (TLS, SASL)")
    clusters.add_argument("--connect-timeout", type=float, default=CONNECT_TIMEOUT_S, metavar="SECONDS",
                          help=f"give up when no broker answers within this long (default {CONNECT_TIMEOUT_S:g})")
    clusters.add_argument("--format", choices=("jsonl", "table"), default="jsonl",
                          help="one JSON line per story (default), or a table")
    clusters.set_defaults(func=cmd_clusters)

    # its own parser (streamdedup/evaluate/construct.py) reads everything after `devset`
    sub.add_parser("devset", help="build a labelled near-duplicate set from real pages "
                                  "(see streamdedup devset --help)", add_help=False)
    return parser


def _resume_hint(args: argparse.Namespace) -> str:
    """How an interrupted command goes on: dedup's job resumes where its last batch was committed."""
    if args.command != "dedup":
        return ""
    again = "the same command again" + (" without --fresh" if args.fresh else "")
    return f"; run {again} to finish it: the records written to {args.out} stand and the rest are decided once"


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's flush at exit meets no closed pipe (Python's docs, "SIGPIPE")."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # a stdout without a descriptor (a test's): nothing to flush
        pass


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["devset"]:  # its own parser: streamdedup/evaluate/construct.py
        from streamdedup.evaluate import construct

        return construct.main(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    from streamdedup.logs import configure, interrupts_kept

    configure(args.verbose)
    try:
        check_extra(args.command)
    except MissingExtra as err:
        print(err, file=sys.stderr)
        return 2
    from streamdedup.store.signature_store import StoreError, store_error

    try:
        with interrupts_kept():  # a Ctrl-C the Kafka client lost is still an interrupt
            return args.func(args)
    except BrokenPipeError:  # the reader of our output stopped (`clusters | head`): nothing more to say
        _quiet_stdout()
        return 0
    except KeyboardInterrupt:  # Ctrl-C is the user's: one line, not the traceback of whichever thread held a page
        lead = "\n" if sys.stderr.isatty() else ""  # after a progress bar's line
        print(f"{lead}streamdedup: interrupted{_resume_hint(args)}", file=sys.stderr)
        return 130
    except (ValueError, OSError, StoreError, CleaningStackMissing, BrokerUnreachable) as err:
        print(f"streamdedup: error: {err}", file=sys.stderr)
        return 2
    except Exception as err:
        if type(err).__name__ == "KafkaException":  # a broker that went away mid-command
            problem = err.args[0].str() if err.args and hasattr(err.args[0], "str") else str(err)
            print(f"streamdedup: error: Kafka: {problem}", file=sys.stderr)
            return 2
        known = store_error(err)  # RocksDB's lock and corruption errors, raised by a read or write
        if known is None:
            raise
        print(f"streamdedup: error: {known}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
