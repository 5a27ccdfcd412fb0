"""Run an extractor in a helper process that is killed when it overruns.

SIGALRM cannot stop C code: resiliparse's main-content pass costs about (elements x depth), so
one crafted page (50 k nested divs; or 100 k spans 1,000 levels deep: 25 s) would hold the
stream for minutes. The helper gets each page over a pipe and has `seconds` to answer; if it
does not, it is killed (and a new one started for the next page) and the page is rejected with
`timeout`. A helper that crashes (a segfault in C) costs its page, not the worker.

Protocol (stdin/stdout of `python -m streamdedup.clean.isolated_main`): a request is a header
(extractor name length, html length, 1 if the visible text is wanted) then name and html, UTF-8
(the name of `fast` reading by a learned layout carries its request after a newline: `page_texts`);
an answer is a 4-byte mark of this protocol's version (`_MARK`), (status, and the lengths of the
main, visible and steered text and the layout observation: `extract.Texts`) and the four texts,
or the error (as the main text) for status 1 (the page failed) and 2 (the extractor's libraries
cannot load). The mark comes first so that a helper of another version (streamdedup's files
changed under a running process, and a helper started since runs the new ones) is told at once,
not waited on for bytes it never sends.
"""

from __future__ import annotations

import os
import select
import site
import struct
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import IO

from streamdedup.clean.errors import CleaningStackMissing
from streamdedup.clean.page_text import Texts
from streamdedup.record.rejection import Reason, Rejected

_HEADER = struct.Struct("<III")  # a request's
_MARK = b"sdx4"  # an answer's first bytes: this protocol's version (4: four texts)
_ANSWER = struct.Struct("<IIIII")
_STACK_MISSING = 2  # an answer's status: the extractor's libraries cannot load (1: the page failed)


class IsolatedExtractor:
    """One helper process per thread that uses it (a forked child starts its own).

    A request and its answer share one pipe, so two threads on one helper would read each other's
    pages."""

    def __init__(self) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self._owner = 0
        self._answered = False  # whether the running helper answered a page (else it may not have started)

    def extract(self, extractor: str, html: str, seconds: float, visible: bool = False,
                utf8: bytes | None = None) -> Texts:
        """The `Texts` of `html` (`utf8`: its UTF-8 bytes, if the caller has them) by `extractor`, within `seconds`."""
        process = self._running()
        name = extractor.encode()
        data = html.encode("utf-8", "surrogatepass") if utf8 is None else utf8
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(_HEADER.pack(len(name), len(data), int(visible)) + name)
            process.stdin.write(data)  # apart: not copied into a new bytes with its header first
            process.stdin.flush()
            if not _readable(process.stdout, seconds):
                self.stop()
                raise Rejected(Reason.TIMEOUT,
                               f"extraction ({extractor.partition(chr(10))[0]}) took longer than {seconds:g} s; "
                               "it was stopped")  # (the name without the learned layout's request after it)
            if (mark := _read_exactly(process.stdout, len(_MARK))) != _MARK:
                self.stop()
                raise CleaningStackMissing(
                    f"the extraction helper answered in another protocol ({mark!r}, expected {_MARK!r}): "
                    "streamdedup's files changed under this running process; restart it")
            status, *sizes = _ANSWER.unpack(_read_exactly(process.stdout, _ANSWER.size))
            text, everything, steered, layout = (_read_exactly(process.stdout, size).decode("utf-8", "surrogatepass")
                                                 for size in sizes)
        except (Rejected, CleaningStackMissing):
            raise
        except (EOFError, OSError) as err:  # the helper died (a crash in C): this page is lost, not the stream
            answered, code = self._answered, self.stop()
            if not answered and code == 1:  # a Python error before its first answer: it could not import streamdedup
                raise CleaningStackMissing(
                    f"the extraction helper ({' '.join(HELPER_COMMAND)}) could not start (exit code 1; its error is "
                    "on stderr): the Python that runs streamdedup must import it in a new process too") from err
            raise RuntimeError(f"the {extractor.partition(chr(10))[0]} extractor process ended (exit code {code}) "
                               "on this page") from err
        except BaseException:  # interrupted mid-request (an alarm, Ctrl-C): its answer must not reach the next page
            self.stop()
            raise
        self._answered = True
        if status == _STACK_MISSING:
            raise CleaningStackMissing(text)
        if status != 0:
            raise RuntimeError(text)
        return Texts(text, everything, steered, layout)

    def _running(self) -> subprocess.Popen[bytes]:
        if self._process is None or self._owner != os.getpid() or self._process.poll() is not None:
            self._process = subprocess.Popen([sys.executable, "-P", *HELPER_COMMAND], env=helper_environment(),
                                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            self._owner = os.getpid()
            self._answered = False
        return self._process

    def __del__(self) -> None:
        # a thread's helper goes with the thread: without this, Popen's own __del__ keeps the
        # process object (and the pipe the helper reads) alive to reap it later, and the helper,
        # never reaching the end of its input, lives as long as the parent (~60-90 MB each)
        self.stop()

    def stop(self) -> int | None:
        """Kill the helper (the next page starts a new one); returns its exit code."""
        process, self._process = self._process, None
        if process is None or self._owner != os.getpid():
            return None
        process.kill()
        code = process.wait()
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                stream.close()
        return code


HELPER_COMMAND = ("-m", "streamdedup.clean.isolated_main")
# the folder that holds the streamdedup package imported here (streamdedup/clean/isolated.py: up 3)
_IMPORTED_FROM = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def helper_environment() -> dict[str, str]:
    """The helper's environment: this one, with the folder streamdedup was imported from first on PYTHONPATH.

    So the helper imports the same streamdedup as its parent, also one found only through the
    parent's `sys.path` (a notebook's `sys.path.insert(0, "..")`: every HTML page was a
    processing_error). Not for a site-packages folder, which the same Python finds anyway (and which,
    on PYTHONPATH, would come before the standard library). `-P` keeps the working directory off the
    helper's path: a checkout there would otherwise be imported instead."""
    environment = dict(os.environ)
    if _IMPORTED_FROM not in {*site.getsitepackages(), site.getusersitepackages()}:
        paths = [_IMPORTED_FROM, *filter(None, environment.get("PYTHONPATH", "").split(os.pathsep))]
        environment["PYTHONPATH"] = os.pathsep.join(paths)
    return environment


_helpers = threading.local()


def helper() -> IsolatedExtractor:
    """This thread's helper, started on its first page (it ends with the thread: its pipe closes)."""
    extractor: IsolatedExtractor | None = getattr(_helpers, "extractor", None)
    if extractor is None:
        extractor = _helpers.extractor = IsolatedExtractor()
    return extractor


def _readable(stream: IO[bytes], seconds: float) -> bool:
    ready, _, _ = select.select([stream], [], [], seconds if seconds > 0 else None)
    return bool(ready)


def _read_exactly(stream: IO[bytes], size: int) -> bytes:
    data = stream.read(size)
    if len(data) < size:
        raise EOFError(f"expected {size} bytes, got {len(data)}")
    return data


def serve(texts: Callable[[str, str, bool], Texts], stdin: IO[bytes], stdout: IO[bytes]) -> None:
    """The helper's loop: one page in, its texts (or its error) out, until stdin closes."""
    while True:
        header = stdin.read(_HEADER.size)
        if len(header) < _HEADER.size:
            return
        name_size, size, visible = _HEADER.unpack(header)
        name = _read_exactly(stdin, name_size).decode()
        html = _read_exactly(stdin, size).decode("utf-8", "surrogatepass")
        answer: tuple[str, ...]
        try:
            got = texts(html, name, bool(visible))  # its four texts (`main_cut` is the pipeline's, after it)
            answer, status = (got.main, got.visible, got.steered, got.layout), 0
        except CleaningStackMissing as err:  # the parent stops the run, naming the fix
            answer, status = (str(err), "", "", ""), _STACK_MISSING
        except Exception as err:  # noqa: BLE001 - reported to the parent, which rejects the page
            answer, status = (f"{type(err).__name__}: {err}", "", "", ""), 1
        out = [text.encode("utf-8", "surrogatepass") for text in answer]
        try:
            stdout.write(_MARK + _ANSWER.pack(status, *map(len, out)) + b"".join(out))
            stdout.flush()
        except BrokenPipeError:  # the parent is gone (killed, or it stopped this helper): so is its page
            return
