"""The command starts numba's CPU target without scipy.linalg (streamdedup/jit.py), and scipy is whole after it;
a library import of streamdedup leaves numba as it is."""

import importlib.util
import subprocess
import sys
import types
from pathlib import Path

import pytest
from conftest import page, write_jsonl

from streamdedup.hidden import hidden_modules

# a fresh interpreter: whether scipy.linalg is imported depends on what ran before in this one
AFTER_A_KERNEL = """
import sys
import numpy as np
from streamdedup.hash_arrays import distinct_counts
if sys.argv[1] == "command":
    from streamdedup.jit import start_cpu_target
    start_cpu_target()
distinct_counts(np.arange(10, dtype=np.uint64) % 3)
import numba.np.arraymath
print("scipy.linalg" in sys.modules, numba.np.arraymath._HAVE_BLAS)
import scipy.linalg.cython_blas
print(scipy.linalg.norm([3.0, 4.0]))
"""


@pytest.mark.skipif(importlib.util.find_spec("scipy") is None, reason="scipy not installed: nothing to hide")
def test_a_kernel_runs_without_scipy_linalg_and_scipy_imports_after() -> None:
    done = subprocess.run([sys.executable, "-c", AFTER_A_KERNEL, "command"], capture_output=True, text=True,
                          check=True)
    assert done.stdout.split() == ["False", "False", "5.0"]


@pytest.mark.skipif(importlib.util.find_spec("scipy") is None, reason="scipy not installed: nothing to hide")
def test_a_library_import_leaves_numba_as_it_starts() -> None:
    """A notebook's process: numba's BLAS check sees scipy, as without streamdedup."""
    done = subprocess.run([sys.executable, "-c", AFTER_A_KERNEL, "library"], capture_output=True, text=True,
                          check=True)
    assert done.stdout.split() == ["True", "True", "5.0"]


def test_the_command_starts_the_target_after_its_imports_and_before_any_kernel() -> None:
    """No kernel is compiled or loaded while the command imports (else the target starts with scipy)."""
    probe = ("import sys; import streamdedup.__main__ as m; import streamdedup.cli; "
             "print('numba.np.arraymath' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False"]


def test_hidden_module_halts_its_import_and_puts_it_back() -> None:
    name = "streamdedup_test_hidden_module"
    with hidden_modules(name):
        with pytest.raises(ImportError):
            __import__(name)
    assert name not in sys.modules


def test_hidden_module_leaves_an_imported_module_alone() -> None:
    name = "streamdedup_test_imported_module"
    module = types.ModuleType(name)
    sys.modules[name] = module
    try:
        with hidden_modules(name):
            assert __import__(name) is module
        assert sys.modules[name] is module
    finally:
        del sys.modules[name]


# the command on a file, then which of the modules a run of plain text need not import are in its process
COMMAND_MODULES = """
import sys
from streamdedup.__main__ import main
sys.argv = ["streamdedup", "dedup", sys.argv[1], "--out", sys.argv[2], "-q"]
assert main() == 0
print(*sorted(name for name in ("lxml", "lxml.html.clean", "scipy", "yaml") if name in sys.modules))
"""


def _command_modules(tmp_path: Path, records: list[dict[str, str]]) -> list[str]:
    path = write_jsonl(tmp_path / "pages.jsonl", records)
    done = subprocess.run([sys.executable, "-c", COMMAND_MODULES, str(path), str(tmp_path / "out")],
                          capture_output=True, text=True, check=True)
    return done.stdout.split()


def test_a_run_of_plain_text_imports_no_html_stack_nor_what_numba_only_asks_for(tmp_path: Path) -> None:
    """lxml (trafilatura's stack, ~0.025 CPU-s) is imported at the first HTML page; scipy and yaml, which
    numba's import only asks for, are hidden from it (`streamdedup/__main__.py`)."""
    text = "A plain page of words that says what it says, with no markup in it at all. " * 12
    pages = [page(f"https://s{i}.example/p", text + str(i), content_type="text/plain") for i in range(3)]
    assert _command_modules(tmp_path, pages) == []


def test_an_html_page_imports_the_extractors_stack(tmp_path: Path) -> None:
    """The first HTML page imports what the extractor runs on (`clean.extract.import_stack`), before it is read."""
    html = "<html><body><article><p>" + "An article of words that says what it says. " * 12 + "</p></article></body></html>"
    pages = [page("https://a.example/text", "plain words " * 40, content_type="text/plain"),
             page("https://a.example/html", html)]
    assert {"lxml", "lxml.html.clean"} <= set(_command_modules(tmp_path, pages))
