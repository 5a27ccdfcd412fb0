"""The libraries a benchmark compares with or profiles by, checked before it runs.

A benchmark run without the `[bench]` extra stops in one line naming the fix, not with a
traceback half-way through its runs."""

from __future__ import annotations

import importlib


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
