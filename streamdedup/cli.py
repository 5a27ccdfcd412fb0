"""Near-duplicate detection for web crawls: files in, folders out (dedup), or a Kafka stream (worker)."""

from __future__ import annotations

import argparse
import difflib
import os
import re
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import orjson

from streamdedup.clean.errors import CleaningStackMissing
from streamdedup.clean.extract import EXTRACTORS
from streamdedup.cli_kafka import CONNECT_TIMEOUT_S, BrokerUnreachable, add_commands, reach_broker, worker_settings
from streamdedup.cli_options import (
    EXAMPLES,
    EXTRACTOR_HELP,
    add_detector_options,
    detector_config,
    scoring_config,
    seconds_arg,
    time_arg,
)
from streamdedup.extras import MissingExtra, check_extra
from streamdedup.fingerprints.registry import METHODS


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

    config = detector_config(args, at_first_page=True)  # (an input of plain text never needs the HTML stack)
    run = dedup_files(args.inputs, args.out, config, state=args.state, fresh=args.fresh,
                      append=args.append, batch_wait=args.batch_wait, progress=not args.quiet,
                      notify=None if args.quiet else notify)
    if run.summary is None:  # an unchanged rerun of a finished job
        if not args.quiet:
            if run.settings_changed:
                judged = "; ".join(f"{name} {old}, these settings say {new}" for name, old, new in run.settings_changed)
                print(f"{run.out} already holds this finished run ({run.consumed} records): nothing to do; its records "
                      f"were judged with {judged} (--fresh judges them again)")
            else:
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
                                                         "rejected_by_reason", "clusters", "records_per_s")}).decode())
        for note in rejection_notes(run.summary):
            print(note, file=sys.stderr)
        print(f"outputs in {args.out}/ (unique.jsonl, duplicates.jsonl, rejected.jsonl, verdicts.jsonl, "
              "clusters.jsonl, summary.json)")
    return 0


def rejection_notes(summary: dict[str, Any]) -> list[str]:
    """Lines that say why a dedup run's records were rejected, where the counts alone leave a newcomer guessing.

    The same crawl given again to a kept store (duplicate_id), and inputs of which no record could be
    read as a page: a CSV or text file (not JSON), or JSON Lines whose url or content has another name."""
    from streamdedup.record.page import FIELD_ALIASES

    reasons: dict[str, int] = summary["rejected_by_reason"]
    notes = []
    if reasons.get("duplicate_id"):  # most often the same crawl given again to a kept store
        notes.append(f"{reasons['duplicate_id']} records refused as duplicate_id: their id (or url and fetch time) "
                     f"came before, in these inputs or in a run the store {summary['state']} holds; a new --state "
                     "(or --fresh) starts from an empty store")
    fixes = {"invalid_json": "give JSON Lines (a JSON object a line; .gz ok) or WARC files",
             "invalid_shape": "give JSON Lines (a JSON object a line; .gz ok) or WARC files",
             "missing_url": f"name each page's url one of: {', '.join(FIELD_ALIASES['url'])}",
             "missing_content": f"name each page's body one of: {', '.join(FIELD_ALIASES['content'])}"}
    if reasons and summary["unique"] + summary["duplicates"] == 0:
        reason = max(reasons, key=reasons.__getitem__)
        if reason in fixes:
            notes.append(f"no record was read as a page ({reasons[reason]} of {summary['rejected']} rejected as "
                         f"{reason}): {fixes[reason]}")
    return notes


def cmd_eval(args: argparse.Namespace) -> int:
    """Score methods on a labelled set (`streamdedup eval`) and print each one's figures."""
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
    """Inspect a store, or delete or expire pages of it (`streamdedup store ACTION`)."""
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
    """Build a lexicon from a corpus and print its size (`streamdedup lexicon build`)."""
    from streamdedup.clean.pipeline import CleaningConfig
    from streamdedup.stats.build import build_from_files

    cleaning = CleaningConfig(extractor=args.extractor) if args.extractor else CleaningConfig()
    lexicon = build_from_files(args.inputs, args.out, cleaning, min_df=args.min_df)
    sizes = {lang: len(words) for lang, words in lexicon.df_table.items()}
    print(orjson.dumps({"version": lexicon.version, "documents": lexicon.n_docs,
                        "avg_length": round(lexicon.avg_length, 1), "words_per_language": sizes}).decode())
    print(f"use it with --lexicon {args.out} (or lexicon = \"{args.out}\" in the config file)")
    return 0


def cmd_clusters(args: argparse.Namespace) -> int:
    """Print the stories of a dedup --out folder or of the cluster view topic (`streamdedup clusters`)."""
    from streamdedup.clusters import read_folder, read_topic_stories, table

    if args.out is not None:
        if not args.out.is_dir():
            raise NotADirectoryError(f"{args.out} is not a folder: give --out the folder of a streamdedup dedup run")
        stories = read_folder(args.out).stories()
    else:
        settings = worker_settings(args)
        reach_broker(settings, args.connect_timeout)
        client = {k: v for k, v in settings.client().items() if k != "bootstrap.servers"}
        topic = args.topic or settings.topics.cluster_view
        stories = read_topic_stories(settings.bootstrap_servers, topic, args.connect_timeout, **client).stories()
    if not stories:  # an empty answer said nothing: a newcomer's first look before a worker has decided a page
        where = (f"the run in {args.out} filed no page (every record rejected: rejected.jsonl)" if args.out is not None
                 else f"{topic} on {settings.bootstrap_servers} holds no page yet (workers write it as they decide)")
        print(f"streamdedup: no stories: {where}", file=sys.stderr)
    if args.format == "table":
        print(table(stories))
    else:
        for story in stories:
            print(orjson.dumps(story).decode())
    return 0


class _MissingRequired(Exception):
    """A command's required option was not given: raised instead of exiting, so the error can name a typo of it."""

    def __init__(self, parser: argparse.ArgumentParser, message: str) -> None:
        super().__init__(message)
        self.parser, self.message = parser, message


class _Parser(argparse.ArgumentParser):
    """An argument parser (and its commands' parsers) whose "required" error names a typo of the option missing."""

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        """The options parsed and the arguments left, as argparse's; a required option missing: `_refuse_missing`."""
        given = list(sys.argv[1:] if args is None else args)
        try:
            return super().parse_known_args(given, namespace)
        except _MissingRequired as missing:
            _refuse_missing(missing, given)

    def error(self, message: str) -> NoReturn:
        """Raise `_MissingRequired` for a missing required option; exit 2 with the message for any other error."""
        if message.startswith(("the following arguments are required", "one of the arguments")):
            raise _MissingRequired(self, message)
        super().error(message)


def build_parser() -> argparse.ArgumentParser:
    """The `streamdedup` command line: every command's parser with its options, help and examples."""
    parser = _Parser(
        prog="streamdedup", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  streamdedup dedup crawl.jsonl.gz --out out/crawl\n  streamdedup demo\n\n"
               "`streamdedup COMMAND --help` shows a command's options and an example.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}",
                        help="show the installed version and exit")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO (default: warnings and errors)")
    # -v after the command too; SUPPRESS: absent there, it leaves the value given before the command
    common = _Parser(add_help=False)
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

    add_commands(command, inputs_help)  # broker, worker, feed, faust, demo, topics (`cli_kafka`)

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


def _refuse_unknown(parser: argparse.ArgumentParser, args: argparse.Namespace, unknown: list[str]) -> NoReturn:
    """Exit 2 on arguments no option takes, naming the command and its option closest to a typo'd one.

    argparse's own error names neither: it shows the top-level usage (`streamdedup [-h] ... COMMAND`)
    and "unrecognized arguments: --fersh", where the user meant `dedup --fresh`."""
    chosen = parser  # down to the command's parser (`store info`: the action's)
    while (sub := next((a for a in chosen._actions if isinstance(a, argparse._SubParsersAction)), None)) is not None \
            and getattr(args, sub.dest, None) in sub.choices:
        chosen = sub.choices[getattr(args, sub.dest)]
    hint = _typo_hint(chosen, unknown)
    chosen.error(f"unrecognized arguments: {' '.join(unknown)}" + (f" ({hint})" if hint else "")
                 + f"; `{chosen.prog} --help` lists its options")


def _typos(parser: argparse.ArgumentParser, unknown: list[str]) -> dict[str, str]:
    """Each of the unknown arguments that is close to one of the parser's options, and that option."""
    options = [o for action in parser._actions for o in action.option_strings if o.startswith("--")]
    return {arg: close[0] for arg in unknown if arg.startswith("-")
            for close in [difflib.get_close_matches(arg.split("=", 1)[0], options, n=1, cutoff=0.6)] if close}


def _typo_hint(parser: argparse.ArgumentParser, unknown: list[str]) -> str:
    """"did you mean --fresh?" for each of the unknown arguments that is close to one of the parser's options."""
    typos = _typos(parser, unknown)
    return " ".join(f"did you mean {meant}" + (f" for {arg}" if len(typos) > 1 else "") + "?"
                    for arg, meant in typos.items())


def _refuse_missing(missing: _MissingRequired, argv: list[str]) -> NoReturn:
    """Exit 2 on a required option not given, naming the typo'd option that was meant as it if there is one.

    argparse's own line ("the following arguments are required: --out") hid the cause of `dedup FILE --otu DIR`."""
    parser = missing.parser
    known = {o for action in parser._actions for o in action.option_strings}
    given = [arg for arg in argv if arg.startswith("--") and arg.split("=", 1)[0] not in known
             and not any(o.startswith(arg.split("=", 1)[0]) for o in known)]  # (an abbreviation is known)
    typos = _typos(parser, given)
    if not typos:
        argparse.ArgumentParser.error(parser, missing.message)
    named = re.findall(r"--[\w-]+", missing.message)  # the options missing (not a typo's: then said too)
    also = "" if any(meant in named for meant in typos.values()) else f"; {missing.message}"
    hint = _typo_hint(parser, list(typos))
    argparse.ArgumentParser.error(parser, f"unrecognized arguments: {' '.join(typos)} ({hint}){also}; "
                                  f"`{parser.prog} --help` lists its options")


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's flush at exit meets no closed pipe (Python's docs, "SIGPIPE")."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # a stdout without a descriptor (a test's): nothing to flush
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """Run one `streamdedup` command line; its exit status (2 and one line for a user's error)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["devset"]:  # its own parser: streamdedup/evaluate/construct.py
        from streamdedup.evaluate import construct

        return construct.main(argv[1:])
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if isinstance(getattr(args, "inputs", None), list) and all(a == "-" or not a.startswith("-") for a in unknown):
        args.inputs += unknown  # inputs after an option (`dedup a --out o b`): argparse takes the first run only
    elif unknown:
        _refuse_unknown(parser, args, unknown)
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
