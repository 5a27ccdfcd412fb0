"""Two one-line texts whose only lines differ: a one-for-one swap with no line found on either side.

`counted_new` read the copy's edges from its first and last found line; with none found (each page
one line, absent from the other, so `swapped`), it indexed an empty array: an IndexError out of
`add_many` (the whole batch lost) and out of `streamdedup dedup` (the job stopped, exit 1).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from streamdedup import Deduplicator, dedup_files

FIRST = "Thread 0 item 139: the quick brown fox jumps over the lazy dog number 0"
SECOND = "Thread 1 item 55: the quick brown fox jumps over the lazy dog number 55"


def test_a_one_line_text_swapped_for_another_is_judged() -> None:
    """Each gets its verdict, the second judged against the first (no IndexError, no item lost)."""
    with Deduplicator() as dedup:
        first, second = dedup.add_many([FIRST, SECOND])
        assert first.status == "unique" and second.status in ("unique", "duplicate")
        assert second.duplicate_of in (None, first.page_id)
        assert dedup.query(FIRST).duplicate_of == first.page_id  # the store took both; it still answers


@pytest.mark.xfail(strict=True, reason="three numbers replaced in a 15-word line: `numbers_changed` finds it no "
                   "counterpart (3 of 4 sketch values, or 2 in place), and 5 new word pairs are under the 8 "
                   "an update stamp may add, so it is the first's duplicate (docs/limitations.md, Directions)")
def test_three_numbers_replaced_in_a_one_line_text_are_new_text() -> None:
    """A number replaced in a line of 12+ words is new text (limitations.md); three in one line are not."""
    with Deduplicator() as dedup:
        _, second = dedup.add_many([FIRST, SECOND])
    assert second.status == "unique"


def test_many_such_lines_in_one_batch_are_all_judged() -> None:
    """A notebook's generated rows (a number or two changed in each): every row gets its verdict."""
    rows = ([f"Thread 0 item {i}: the quick brown fox jumps over the lazy dog number 0" for i in range(200)]
            + [f"Thread 1 item {i}: the quick brown fox jumps over the lazy dog number {i}" for i in range(200)])
    with Deduplicator() as dedup:
        results = dedup.add_many(rows)
    assert len(results) == 400 and all(r.status in ("unique", "duplicate") for r in results)


def test_file_mode_finishes_a_crawl_holding_such_a_pair(tmp_path: Path) -> None:
    """The same pair on two sites in a crawl file: the job writes every record once."""
    crawl = tmp_path / "crawl.jsonl"
    crawl.write_text("".join(json.dumps({"url": f"https://{site}.example/1", "text": text}) + "\n"
                             for site, text in (("a", FIRST), ("b", SECOND))))
    run = dedup_files([crawl], tmp_path / "out")
    assert run.summary is not None and run.summary["records"] == 2 and run.summary["rejected"] == 0
    assert run.summary["unique"] + run.summary["duplicates"] == 2
