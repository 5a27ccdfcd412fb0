"""Modules hidden from the import system for a span: what the command keeps numba from importing.

`hidden_modules(names)`: within, `import name` (and its submodules) raises ImportError, unless it is
imported already: a None in `sys.modules` halts an import (the language reference's "The module
cache"); the entries are taken out again at the end, so a later import of them imports as usual.
The command's process uses it where a library would import a module only to ask whether it is
there (`streamdedup/__main__.py`, `jit.start_cpu_target`)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def hidden_modules(*names: str) -> Iterator[None]:
    """Within: `import name` raises ImportError for each of `names` not imported already."""
    hidden = [name for name in names if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]  # None halts an import: documented
    try:
        yield
    finally:
        for name in hidden:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]
