"""The idle claims an index partition holds, and whether records came to their inputs since.

An input partition caught up and quiet sends an infinite watermark, an *idle claim*, so that it
holds nobody back; its worker takes the claim back when records come again (`FingerprintPartition
._taking_back`). A worker that cannot (stopped, starved of CPU, stuck in a call) leaves the claim
standing while records wait, and the index partitions would pass other inputs' pages above them:
each a late match (`after_idle`). So an index partition notes where the input ended when the claim
came (its end offset, asked of the broker), and asks again before it passes its watermark on: an
input whose end moved since has records its owner has not taken in, and counts at the last place
it sent before it went idle until its owner sends a watermark again. The cost of a false doubt (an
aborted transaction's records, which the owner reads past without a page) is a hold until the
owner wakes and goes idle again, within its idle interval.
"""

from __future__ import annotations

from collections.abc import Callable

# an input partition's end offset now (None: not known); `fresh`: asked of the broker, not cached
InputEnd = Callable[[int, bool], "int | None"]


class IdleClaims:
    """The idle claims of input partitions, and which of them records have overtaken.

    Per input partition whose watermark is an idle claim: its last finite watermark before the
    claim, and its end offset when the claim came; and which claims records have overtaken."""

    def __init__(self, input_end: InputEnd | None = None) -> None:
        self.input_end = input_end
        self._before: dict[int, bytes] = {}  # input -> its last finite watermark before the claim (b"": none)
        self._ends: dict[int, int | None] = {}  # input -> its end offset when the claim came (None: not yet asked)
        self.doubted: set[int] = set()  # claims records have overtaken: not trusted
        self.found = 0  # claims doubted so far (the metric)

    def claimed(self, source: int, before: bytes, ask: bool = True) -> None:
        """`source` sent an idle claim; its last finite watermark was `before`.

        `ask`: its end is asked now (not for a claim replayed into a store: its end is asked at the
        next check)."""
        self._before[source] = before
        self._ends[source] = self._end(source, fresh=True) if ask else None
        self.doubted.discard(source)

    def restored(self, source: int, before: bytes) -> None:
        """An idle claim read back from the store (a restart): its end is asked at the next check."""
        if source not in self._before:
            self._before[source], self._ends[source] = before, None

    def woke(self, source: int) -> None:
        """`source` sent a finite watermark: it is not idle (any more)."""
        self._before.pop(source, None)
        self._ends.pop(source, None)
        self.doubted.discard(source)

    def watching(self) -> bool:
        """Whether any claim is trusted for now (a check may doubt it)."""
        return self.input_end is not None and len(self._ends) > len(self.doubted)

    def check(self) -> None:
        """Doubt the claims whose inputs' ends moved since they came (counted in `found`)."""
        if not self.watching():
            return
        for source, end in self._ends.items():
            if source in self.doubted:
                continue
            now = self._end(source, fresh=False)
            if end is None:  # not asked yet (restored, or the broker did not answer): from now on
                self._ends[source] = now
            elif now is not None and now > end:
                self.doubted.add(source)
                self.found += 1

    def watermark(self, source: int, watermark: bytes) -> bytes:
        """What `source`'s watermark counts as: its last finite one while its claim is doubted."""
        return self._before.get(source, b"") if source in self.doubted else watermark

    def _end(self, source: int, fresh: bool) -> int | None:
        return None if self.input_end is None else self.input_end(source, fresh)
