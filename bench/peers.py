"""The libraries a benchmark compares with or profiles by, checked before it runs.

A benchmark run without the `[bench]` extra stops in one line naming the fix, not with a
traceback half-way through its runs."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from pathlib import Path


def require(script: str, *modules: str, otherwise: str = "") -> None:
    """Exit in one line naming the fix if any of `modules` cannot be imported."""
    missing = []
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    if missing:
        alternative = f", or {otherwise}" if otherwise else ""
        raise SystemExit(f"{script}: {' and '.join(missing)} not installed: run `make bench` "
                         f"(installs the [bench] extra){alternative}")


def kafka_client(script: str) -> None:
    """Exit in one line naming the fix if the Kafka client (the `kafka` extra) cannot be imported."""
    try:
        importlib.import_module("confluent_kafka")
    except ImportError:
        raise SystemExit(f"{script}: confluent_kafka not installed: run `make run` or `make bench` (they install "
                         "the [kafka] and [broker] extras)") from None


def archives(script: str, paths: Sequence[Path]) -> list[Path]:
    """The real-page archives of `paths` that exist; none: exit in one line naming where they go and how to build them.

    They are not in this repository (the pages are their publishers'): ../shared/data beside the checkout."""
    present = [path for path in paths if path.exists()]
    if not present:
        raise SystemExit(f"{script}: {' and '.join(path.name for path in paths)} not found in {paths[0].parent}: "
                         "the real pages it is built from are not in this repository; build them as docs/evaluation.md "
                         "says (\"The archives are not in this repository\") and put them there")
    return present
