"""The command line's detector options and argument types: flags (and --config) -> `DetectorConfig`."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from streamdedup.clean.extract import EXTRACTORS, check_extractor
from streamdedup.config import DEFAULT_METHODS, DetectorConfig, parse_duration, read_toml
from streamdedup.fingerprints.registry import METHODS

EXTRACTOR_HELP = ("main-content extractor (default fast: resiliparse steered by trafilatura's rules, "
                  "trafilatura where that looks wrong)")


def add_detector_options(parser: argparse.ArgumentParser, with_methods: bool = True) -> None:
    """The detector's options of a command that runs it (dedup, eval, worker, faust, demo)."""
    group = parser.add_argument_group("detector")
    group.add_argument("--config", type=Path, help="TOML file: methods, params, policy, extractor, retention... "
                       "(Kafka commands also read its [worker] and [kafka] tables)")
    if with_methods:
        group.add_argument("--methods", help=f"comma-separated methods to run (registered: {', '.join(METHODS)})")
    group.add_argument("--policy", help="rules for candidates from other sites, e.g. "
                       "'exact|minhash|simhash+a12' (| = or, + = and, minhash>=0.8 = stricter)")
    group.add_argument("--same-site-policy", help="rules for candidates from the page's own site while its "
                       "template is unknown (default: --policy), e.g. 'exact|minhash>=0.8'")
    group.add_argument("--max-new-share", type=float, metavar="SHARE",
                       help="a match is the page's duplicate only if the page's text absent from it is at most "
                       "this share of the page (default 0.10) or 8 word pairs; otherwise the page is unique "
                       "and names it (supersedes / related_to)")
    group.add_argument("--param", action="append", default=[], metavar="METHOD.NAME=VALUE",
                       help="a method parameter, e.g. minhash.threshold=0.6 (repeatable)")
    group.add_argument("--extractor", choices=EXTRACTORS, help=EXTRACTOR_HELP)
    group.add_argument("--retention", help="forget pages older than this event-time span, e.g. 7d")
    group.add_argument("--max-clock-skew", help="trust a page's fetch time up to this far ahead of the clock "
                       "(default 1d); later ones are not used (the page says so in dedup.time_note)")
    group.add_argument("--batch-size", type=int, help="pages per atomic store write")
    group.add_argument("--batch-bytes", type=int, help="a batch also ends once its pages hold this many bytes "
                       "(default 64 MiB: a batch is held in memory whole)")
    group.add_argument("--prepare-threads", type=int, metavar="N",
                       help="pages parsed and fingerprinted side by side, each thread with its own extraction "
                       "process (default 0: one per CPU; 1: one at a time); verdicts do not depend on it")
    group.add_argument("--no-learned-extraction", dest="learned_extraction", action="store_false", default=None,
                       help="read every page by the extractor, never from the container its site's earlier pages "
                       "taught (config: learned_extraction = false)")
    group.add_argument("--lexicon", help="collection statistics: 'wordfreq' (default) or a file made by "
                       "`streamdedup lexicon build`")


def _parse_value(text: str) -> Any:
    """A --param value: JSON (numbers, booleans, lists) where it parses, else the text itself."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text


def read_config(path: Path | None) -> dict[str, Any]:
    """The --config file's tables (none without one)."""
    return {} if path is None else read_toml(path)


def detector_config(args: argparse.Namespace, at_first_page: bool = False) -> DetectorConfig:
    """The detector's configuration, with its extractor's libraries imported.

    The detector's configuration (--config's top-level keys, then flags); its extractor's libraries are imported here,
    so a broken install stops the command before any page; `at_first_page`: at its first HTML page instead
    (`check_extractor`: file mode, whose input may hold none)."""
    return scoring_config(args, (), at_first_page)[0]


def scoring_config(args: argparse.Namespace, scored: Sequence[str],
                   at_first_page: bool = False) -> tuple[DetectorConfig, tuple[str, ...]]:
    """The detector's configuration with the `scored` methods enabled too, and the methods configured without them.

    eval scores each of its --methods alone: they are enabled after the configured ones, so that their parameters
    (--param, [params.x]) are accepted as they would be by `dedup --methods`; its default runs the configured ones.
    `at_first_page`: as `detector_config`'s."""
    data = {key: value for key, value in read_config(args.config).items() if key not in ("worker", "kafka")}
    configured = data.get("methods", DEFAULT_METHODS)
    if scored and isinstance(configured, list | tuple) and all(isinstance(m, str) for m in configured):
        data["methods"] = list(dict.fromkeys([*configured, *scored]))  # (a malformed list is named by from_mapping)
    try:
        config = DetectorConfig.from_mapping(data) if args.config else DetectorConfig()
    except ValueError as err:  # the file named: a key's value alone did not say it was the file's, not a flag's
        raise ValueError(f"{args.config}: {err}") from None
    params = {name: dict(values) for name, values in config.method_params.items()}
    for item in args.param:
        name, sep, value = item.partition("=")
        method, dot, key = name.partition(".")
        if not sep or not dot:
            raise ValueError(f"--param {item!r}: expected METHOD.NAME=VALUE, e.g. minhash.threshold=0.6")
        params.setdefault(method, {})[key] = _parse_value(value)
    methods = None if args.methods is None else tuple(m.strip() for m in args.methods.split(","))
    if methods is not None and not all(methods):  # '' ran the defaults, 'exact,,minhash' named '' a method
        raise ValueError(f"--methods {args.methods!r} names an empty method: give methods separated by commas, "
                         f"e.g. exact,minhash (registered: {', '.join(METHODS)})")
    cleaning = config.cleaning
    if args.extractor:
        from dataclasses import replace

        cleaning = replace(cleaning, extractor=args.extractor)
    check_extractor(cleaning.extractor, at_first_page)
    enabled = methods if methods is not None else tuple(dict.fromkeys(configured))
    if scored:
        methods = tuple(dict.fromkeys([*enabled, *scored]))
    return config.with_overrides(
        methods=methods, method_params=params, policy=args.policy,
        same_site_policy=args.same_site_policy, max_new_share=args.max_new_share, cleaning=cleaning,
        retention=parse_duration(args.retention, "--retention") if args.retention else None,
        max_clock_skew=parse_duration(args.max_clock_skew, "--max-clock-skew") if args.max_clock_skew else None,
        batch_size=args.batch_size, batch_bytes=args.batch_bytes, lexicon=args.lexicon,
        prepare_threads=args.prepare_threads, learned_extraction=getattr(args, "learned_extraction", None)), enabled


def _above_zero(value: str, what: str) -> float:
    """A finite number above 0 on the command line; else one line naming `what` it must be."""
    try:
        number = float(value)
    except ValueError:
        number = -1
    if not 0 < number < float("inf"):
        raise argparse.ArgumentTypeError(f"{value!r} is not {what}")
    return number


def seconds_arg(value: str) -> float:
    """A positive number of seconds on the command line; one line naming the form if not."""
    return _above_zero(value, "a number of seconds above 0 (e.g. 1 or 0.2)")


def port_arg(value: str) -> int:
    """The metrics endpoint's port (flag or STREAMDEDUP_METRICS_PORT); one line naming the range if not."""
    try:
        port = int(value)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{value!r} is not a port: give --metrics-port (STREAMDEDUP_METRICS_PORT) a "
                                         "whole number from 1 to 65535, or 0 for no metrics endpoint")
    return port


def rate_arg(value: str) -> float:
    """A positive number of pages a second on the command line; one line naming the form if not."""
    return _above_zero(value, "a number of pages a second above 0 (e.g. 50); leave --rate out to feed as "
                              "fast as the broker takes them")


def time_arg(value: str) -> datetime:
    """A time on the command line, as a page's fetch time is read; one line naming the forms if not."""
    from streamdedup.record.page import parse_timestamp

    try:
        return parse_timestamp(value)
    except (ValueError, OverflowError, OSError):
        raise argparse.ArgumentTypeError(f"{value!r} is not a time: give ISO-8601 (2024-01-01T00:00:00Z), a "
                                         "14-digit WARC date (20240101000000), epoch seconds or milliseconds, or "
                                         "an HTTP date (Mon, 01 Jan 2024 00:00:00 GMT)") from None


# each command's examples, the epilog of its --help
EXAMPLES = {
    "dedup": """examples:
  streamdedup dedup crawl.jsonl.gz --out out/crawl
  streamdedup dedup part-1.warc.gz part-2.warc.gz --out out/warc --state stores/warc
  zcat crawl.jsonl.gz | streamdedup dedup - --out out/stdin --fresh

Rerunning the same command after a crash finishes its job; rerunning it after it finished does
nothing. Other inputs into a finished --out are refused: use a new --out, --fresh, or --append.""",
    "eval": """example:
  streamdedup eval web-dev.jsonl --out out/eval-web --methods minhash,simhash""",
    "store": """examples:
  streamdedup store info --state out/crawl/state
  streamdedup store delete --state out/crawl/state PAGE_ID [PAGE_ID ...]
  streamdedup store expire --state out/crawl/state --before 2024-01-01T00:00:00Z""",
    "lexicon": """example:
  streamdedup lexicon build crawl.jsonl.gz --out lexicon.json.gz
  streamdedup dedup crawl.jsonl.gz --out out/crawl --lexicon lexicon.json.gz""",
    "broker": """example:
  streamdedup broker --port 9092 --data-dir broker-data""",
    "worker": """examples:
  streamdedup worker --bootstrap-servers 127.0.0.1:9092 --state state
  STREAMDEDUP_BOOTSTRAP_SERVERS=kafka:9092 streamdedup worker --config dedup.toml --metrics-port 9464""",
    "feed": """example:
  streamdedup feed crawl.jsonl.gz --bootstrap-servers 127.0.0.1:9092 --rate 100""",
    "faust": """example:
  streamdedup faust --bootstrap-servers 127.0.0.1:9092 --state faust-state""",
    "demo": """example:
  streamdedup demo --workdir demo-data""",
    "topics": """example:
  streamdedup topics create --bootstrap-servers 127.0.0.1:9092""",
    "clusters": """examples:
  streamdedup clusters --out out/crawl --format table
  streamdedup clusters --bootstrap-servers kafka:9092 > stories.jsonl

a story: {cluster_id, size, related, pages}; a page: {id, url, fetch_time, status, duplicate_of} and,
where its verdict names them, supersedes, merged, related_to (docs/news-feed.md, "Reading a story")""",
    "devset": """example:
  streamdedup devset --pages trafilatura-test-pages.tar.gz --family web --split dev --out web-dev.jsonl""",
}
