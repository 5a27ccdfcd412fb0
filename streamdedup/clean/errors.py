"""The cleaning stage's one error that stops a run rather than rejecting a page."""

from __future__ import annotations


class CleaningStackMissing(RuntimeError):
    """The extractor's libraries cannot be imported: every HTML page would fail; the message (one line) names the fix.

    Raised before the first page, or at the first page that imports trafilatura (in this process or
    the helper's), which stops the run: never a page's rejection."""
