"""The extraction helper process: `python -m streamdedup.clean.isolated_main`.

It serves `extract.page_texts` over its stdin and stdout, in `isolated`'s protocol, until the
parent closes the pipe or kills it."""

from __future__ import annotations

import signal
import sys


def main() -> None:
    """Serve pages until stdin closes; a terminal's Ctrl-C is the parent's to act on, not ours."""
    # the parent decides when a helper ends (it closes the pipe, or kills an overrunning one): a
    # terminal's Ctrl-C reaches the whole process group, and a helper that took it printed a
    # KeyboardInterrupt traceback under the parent's clean stop
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from streamdedup.clean.extract import page_texts  # after the signal: a Ctrl-C while importing too
    from streamdedup.clean.isolated import serve

    serve(page_texts, sys.stdin.buffer, sys.stdout.buffer)


if __name__ == "__main__":
    main()
