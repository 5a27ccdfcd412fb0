"""Whether a page's own time (its fetch time) can be believed.

Not before the web existed, not beyond now plus an allowed clock skew: `store.retention` files
pages by such a time, `record.page` tells fetches of a url apart by it."""

from __future__ import annotations

from datetime import timedelta

EARLIEST_EVENT_MS = 681_436_800_000  # 1991-08-06, the first web page: an earlier fetch time is not one
DEFAULT_MAX_CLOCK_SKEW = timedelta(days=1)  # time zones and clock drift of crawlers, with room to spare


def plausible(ms: int, now_ms: int, max_skew_ms: int) -> bool:
    """Whether `ms` is a time a page may have: from the first web page on, at most `max_skew_ms` past `now_ms`."""
    return EARLIEST_EVENT_MS <= ms <= now_ms + max_skew_ms
