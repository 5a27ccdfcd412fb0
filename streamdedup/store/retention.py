"""Event time and the retention clock: which time a page is filed under, and which pages expire.

One rule for every mode (file mode, the local topology, the global topology's index partitions).

A page's own time (its fetch time) is trusted only when it is plausible: not before the web
existed (a fetch time of 0 or 1970 is a crawler's "unknown") and not beyond now plus an allowed
clock skew (a page dated 9999-12-31 would otherwise move the retention clock so far that every
page in the store expires). An implausible or missing time is replaced, and the page says why:

- by the newest trusted page time seen, when there is one: an undated page is as recent as the
  crawl around it, so an archived crawl replayed today keeps its own clock;
- otherwise by its arrival time (the Kafka message timestamp, itself bounded the same way; in
  file mode the wall clock).

A page dated ahead of this clock, within the skew, is filed under its own time, but it moves the
retention clock no further than now: the skew is how far a crawler's clock may be ahead, not how
far one page may push every other page out. Before, under `--retention 6h` and the 1-day skew, one
page dated 20 h ahead expired the whole window (37 of 50 later re-crawls came out unique); a
clamp of the skew to a share of the retention would still expire that share of the window, and a
refusal would forbid a setting that is sound. Capped at now, expiry lags a stream whose clock runs
ahead by at most that lead: pages are kept a little longer, none is forgotten early.

Retention follows page times when the stream has any, else arrival times: two watermarks are kept
and the first that is set drives expiry. So one dated page never expires the undated pages stamped
before it by a different clock (they are kept longer instead), and a stream of undated pages still
expires on arrival time.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import NamedTuple

from streamdedup.record.event_time import (
    DEFAULT_MAX_CLOCK_SKEW,  # noqa: F401 - imported from here too (the config)
    EARLIEST_EVENT_MS,
    plausible,
)

# after a batch commits, expiry starts no new chunk once it has run this long (one chunk always
# runs): steady state expires a batch's worth of pages in milliseconds, but a backlog (retention set
# on a store that grew without it, a clock that jumped past an archive's pages) drains over the next
# batches (~80,000 pages a second of budget at 600 k stored) instead of keeping a worker from polling for minutes
EXPIRY_BUDGET_S = 1.0
PAGE_WATERMARK = "watermark_ms"  # store meta names (the first is the one earlier stores kept)
ARRIVAL_WATERMARK = "arrival_watermark_ms"


class Stamp(NamedTuple):  # one a page: a tuple is made in half a frozen dataclass's time
    """The time a page is filed under, whether it is the page's own, and why not if not."""

    event_ms: int
    trusted: bool  # the page's own fetch time (drives the page watermark)
    note: str | None = None  # set when the page had a time that was not used


def _iso(ms: int) -> str:
    try:
        return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat()
    except (OverflowError, OSError, ValueError):
        return f"{ms} ms since 1970"


class RetentionClock:
    """The two watermarks of one store and the stamping rule; pure apart from its own state."""

    def __init__(self, retention_ms: int | None, max_skew_ms: int, page_ms: int = 0, arrival_ms: int = 0) -> None:
        if max_skew_ms < 0:
            raise ValueError(f"the allowed clock skew must not be negative, got {max_skew_ms} ms")
        self.retention_ms = retention_ms
        self.max_skew_ms = max_skew_ms
        self.page_ms = page_ms
        self.arrival_ms = arrival_ms

    @classmethod
    def load(cls, retention_ms: int | None, max_skew_ms: int,
             get_meta_int: Callable[[str, int], int]) -> RetentionClock:
        """The clock as a store's meta entries left it (its two watermarks)."""
        return cls(retention_ms, max_skew_ms, get_meta_int(PAGE_WATERMARK, 0), get_meta_int(ARRIVAL_WATERMARK, 0))

    def stage(self, set_meta: Callable[[str, bytes], None]) -> None:
        """Write both watermarks with the batch that moved them."""
        set_meta(PAGE_WATERMARK, str(self.page_ms).encode())
        set_meta(ARRIVAL_WATERMARK, str(self.arrival_ms).encode())

    def stamp(self, page_ms: int | None, arrival_ms: int | None, now_ms: int) -> Stamp:
        """The time to file a page under (see the module doc), advancing the watermarks."""
        skew = self.max_skew_ms
        if page_ms is not None and plausible(page_ms, now_ms, skew):
            self.observe(page_ms, trusted=True, now_ms=now_ms)
            return Stamp(page_ms, True)
        note = None
        if page_ms is not None:
            bound = "before 1991-08-06" if page_ms < EARLIEST_EVENT_MS else \
                f"more than {skew // 1000} s ahead of this clock ({_iso(now_ms)})"
            note = f"fetch time {_iso(page_ms)} is {bound}: not used"
        if self.page_ms > 0:
            return Stamp(self.page_ms, False, note and note + "; filed at the newest fetch time seen")
        arrival = arrival_ms if arrival_ms is not None and plausible(arrival_ms, now_ms, skew) else now_ms
        self.observe(arrival, trusted=False, now_ms=now_ms)
        return Stamp(arrival, False, note and note + "; filed at its arrival time")

    def observe(self, event_ms: int, trusted: bool, now_ms: int | None = None) -> None:
        """Advance a watermark with a time stamped elsewhere, to `now_ms` at most.

        Advance a watermark with a time (stamped elsewhere: the global topology's index
        partitions get times stamped by the fingerprint step), to `now_ms` at most: a time ahead
        of this clock does not move the retention clock past it (see the module doc)."""
        if now_ms is not None:
            event_ms = min(event_ms, now_ms)
        if trusted:
            self.page_ms = max(self.page_ms, event_ms)
        else:
            self.arrival_ms = max(self.arrival_ms, event_ms)

    @property
    def now_ms(self) -> int:
        """The retention clock: the newest page time if the stream has any, else arrival time."""
        return self.page_ms if self.page_ms > 0 else self.arrival_ms

    def oldest_kept(self, event_ms: int) -> int | None:
        """Candidates older than this are out of a page's retention window (None: no retention)."""
        return None if self.retention_ms is None else event_ms - self.retention_ms

    def expire_before(self) -> int | None:
        """Pages filed before this time are expired after a batch commits (None: keep all)."""
        if self.retention_ms is None or self.now_ms <= 0:
            return None
        return self.now_ms - self.retention_ms
