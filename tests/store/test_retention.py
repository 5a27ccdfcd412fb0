"""Event time and the retention clock: one page's clock must not switch deduplication off."""

from __future__ import annotations

from datetime import timedelta

from conftest import make_article, page, wrap_in_template

from streamdedup.store.retention import EARLIEST_EVENT_MS, RetentionClock
from streamdedup.testing import run_records

DAY = 86_400_000
NOW = 1_780_000_000_000  # 2026-05-28
T2024 = 1_709_294_400_000  # 2024-03-01T12:00Z


# -- the rule, pure ---------------------------------------------------------------------------
def test_plausible_page_times_are_used_and_drive_retention():
    clock = RetentionClock(30 * DAY, DAY)
    stamp = clock.stamp(T2024, None, NOW)
    assert (stamp.event_ms, stamp.trusted, stamp.note) == (T2024, True, None)
    assert clock.expire_before() == T2024 - 30 * DAY


def test_a_time_beyond_now_plus_skew_is_not_used_and_says_why():
    clock = RetentionClock(30 * DAY, DAY)
    clock.stamp(T2024, None, NOW)
    far = clock.stamp(253_402_214_400_000, None, NOW)  # 9999-12-31
    assert far.event_ms == T2024 and not far.trusted
    assert far.note is not None and "9999-12-31" in far.note and "ahead" in far.note
    assert clock.expire_before() == T2024 - 30 * DAY  # the clock did not move
    near = clock.stamp(NOW + DAY - 1, None, NOW)  # within the allowed skew: trusted
    assert near.trusted and near.event_ms == NOW + DAY - 1 and clock.now_ms == NOW  # the clock: now at most


def test_times_before_the_web_are_unknown_times():
    clock = RetentionClock(30 * DAY, DAY)
    for bogus in (0, -5, EARLIEST_EVENT_MS - 1):
        stamp = clock.stamp(bogus, 1_700_000_000_000, NOW)
        assert not stamp.trusted and stamp.event_ms == 1_700_000_000_000
        assert stamp.note is not None and "before 1991" in stamp.note


def test_undated_pages_take_the_newest_page_time_else_arrival_else_now():
    clock = RetentionClock(30 * DAY, DAY)
    assert clock.stamp(None, T2024, NOW).event_ms == T2024  # arrival (a Kafka timestamp)
    assert clock.stamp(None, NOW + 10 * DAY, NOW).event_ms == NOW  # an implausible arrival: now
    assert clock.stamp(None, None, NOW).event_ms == NOW  # file mode: now
    assert clock.stamp(None, None, NOW).note is None  # undated is not an error
    clock.stamp(T2024, None, NOW)
    assert clock.stamp(None, NOW, NOW).event_ms == T2024  # once page times exist, they are the clock


def test_page_times_drive_expiry_once_seen_so_earlier_arrival_stamps_are_kept_not_expired():
    clock = RetentionClock(30 * DAY, DAY)
    clock.stamp(None, None, NOW)  # an undated page, filed at now
    assert clock.expire_before() == NOW - 30 * DAY
    clock.stamp(T2024, None, NOW)  # an archived crawl's dated page
    assert clock.expire_before() == T2024 - 30 * DAY  # the 2024 crawl is not expired by the 2026 stamp


def test_watermarks_survive_a_reload():
    clock = RetentionClock(30 * DAY, DAY)
    clock.stamp(T2024, None, NOW)
    clock.stamp(None, None, NOW)
    meta: dict[str, bytes] = {}
    clock.stage(meta.__setitem__)
    again = RetentionClock.load(30 * DAY, DAY, lambda name, default: int(meta[name]) if name in meta else default)
    assert (again.page_ms, again.arrival_ms) == (clock.page_ms, clock.arrival_ms)


# -- the engine on a real store ----------------------------------------------------------------
def _story_pages(copies: int, start_day: int = 2) -> tuple[dict, list[dict]]:
    story = make_article(31)
    original = page("https://planet.example/story", wrap_in_template(story, "Planet"), "2024-03-01T10:00:00Z")
    recrawls = [page(f"https://mirror{i}.example/story", wrap_in_template(story, f"Mirror {i}"),
                     f"2024-03-{start_day + i // 24:02d}T{i % 24:02d}:00:00Z") for i in range(copies)]
    return original, recrawls


def test_one_page_dated_9999_does_not_expire_the_store(tmp_path):
    """Before: the far-future page moved the watermark to 9999 and every later copy was forgotten
    right after its batch (half the copies came out unique)."""
    original, recrawls = _story_pages(24)
    attacker = page("https://evil.example/x", wrap_in_template(make_article(99), "Evil"), "9999-12-31T00:00:00Z")
    outcomes = run_records([original, attacker, *recrawls], tmp_path, retention=timedelta(days=30), batch_size=2)
    assert outcomes[0].status == "unique"
    assert outcomes[1].status == "unique" and "9999-12-31" in outcomes[1].dedup["time_note"]
    assert [o.status for o in outcomes[2:]] == ["duplicate"] * len(recrawls)
    assert "time_note" not in outcomes[2].dedup


def test_undated_pages_of_a_new_store_survive_the_first_dated_page(tmp_path):
    """Before: undated pages were filed at 1970 in a new store, so one dated page expired them all."""
    stories = [make_article(40 + i) for i in range(4)]
    undated = [{"url": f"https://undated.example/{i}", "content": wrap_in_template(s, "Undated")}
               for i, s in enumerate(stories)]
    dated = page("https://other.example/new", wrap_in_template(make_article(77), "Other"), "2024-03-01T10:00:00Z")
    copies = [page(f"https://copy.example/{i}", wrap_in_template(s, "Copy"), "2024-03-02T10:00:00Z")
              for i, s in enumerate(stories)]
    outcomes = run_records([*undated, dated, *copies], tmp_path, retention=timedelta(days=30), batch_size=2)
    assert [o.status for o in outcomes[-4:]] == ["duplicate"] * 4


def test_a_backlog_of_expired_pages_drains_over_batches_and_its_pages_are_not_matched_meanwhile(tmp_path, monkeypatch):
    """A retention set on a store that grew without one: each batch's commit expires a bounded
    part of the backlog (here one chunk of 4 pages: `EXPIRY_BUDGET_S` 0), not all of it at once
    (a worker would stop polling for minutes on a large store), and while the backlog drains a
    copy of a page it still holds is not called its duplicate (out of the retention window)."""
    from streamdedup.config import DetectorConfig
    from streamdedup.detector import Detector
    from streamdedup.store import removal, retention
    from streamdedup.testing import raw_records

    old = [page(f"https://old.example/{i}", wrap_in_template(make_article(100 + i), "Old"),
                f"2024-03-01T10:{i:02d}:00Z") for i in range(18)]
    run_records(old, tmp_path, batch_size=8)  # no retention: all kept
    june_ms = 1_717_200_000_000  # 2024-06-01T00:00Z
    monkeypatch.setattr(removal, "_EXPIRE_CHUNK", 4)
    monkeypatch.setattr(retention, "EXPIRY_BUDGET_S", 0.0)
    copies = [page(f"https://new.example/{i}", wrap_in_template(make_article(100 + i), "New"),
                   f"2024-06-01T10:{i:02d}:00Z") for i in range(6)]
    with Detector(DetectorConfig(batch_size=2, retention=timedelta(days=30)), tmp_path) as detector:
        statuses, stored = [], []
        for start in range(0, len(copies), 2):
            statuses += [o.status for o in detector.run(raw_records(copies[start: start + 2]))]
            stored.append(sum(1 for d in detector.store.iter_docs() if d.event_ms < june_ms))
        assert statuses == ["unique"] * 6
        assert stored == [14, 10, 6] and detector.work["pages_expired"] == 12
        again = page("https://again.example/0", wrap_in_template(make_article(100), "Again"), "2024-06-01T11:00:00Z")
        assert [o.status for o in detector.run(raw_records([again]))] == ["duplicate"]  # of new.example/0
    monkeypatch.setattr(retention, "EXPIRY_BUDGET_S", 1.0)
    with Detector(DetectorConfig(batch_size=2, retention=timedelta(days=30)), tmp_path) as detector:
        list(detector.run(raw_records([page("https://late.example/x", make_article(7), "2024-06-02T10:00:00Z")])))
        assert not [d for d in detector.store.iter_docs() if d.event_ms < june_ms]


def test_a_page_dated_ahead_of_the_clock_within_the_skew_does_not_move_retention_past_now(tmp_path):
    """--retention 6h under the default 1-day skew: a page dated 20 h ahead of this machine's
    clock is plausible, so it is filed under its own time, but the retention clock stops at now:
    before, it moved to now + 20 h and expired the whole 6-hour window, and the re-crawls of its
    stories that came after its batch were judged unique (9 of 12 here)."""
    import time as clock_module
    from datetime import UTC, datetime

    def iso(ms: int) -> str:
        return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    now = int(clock_module.time() * 1000)
    hour = 3_600_000
    stories = [make_article(200 + i) for i in range(12)]
    first = [page(f"https://news{i}.example/a", wrap_in_template(s, f"News {i}"), iso(now - 2 * hour))
             for i, s in enumerate(stories)]
    ahead = page("https://ahead.example/x", wrap_in_template(make_article(99), "Ahead"), iso(now + 20 * hour))
    again = [page(f"https://copy{i}.example/a", wrap_in_template(s, f"Copy {i}"), iso(now - hour))
             for i, s in enumerate(stories)]
    outcomes = run_records([*first, ahead, *again], tmp_path, retention=timedelta(hours=6), batch_size=4)
    assert outcomes[len(first)].status == "unique" and "time_note" not in outcomes[len(first)].dedup  # trusted
    assert [o.status for o in outcomes[-len(again):]] == ["duplicate"] * len(again)


def test_the_clock_is_moved_by_a_page_time_only_up_to_now():
    clock = RetentionClock(6 * 3_600_000, DAY)
    stamp = clock.stamp(NOW + 20 * 3_600_000, None, NOW)
    assert stamp.trusted and stamp.event_ms == NOW + 20 * 3_600_000  # filed under its own time
    assert clock.now_ms == NOW and clock.expire_before() == NOW - 6 * 3_600_000
    clock.observe(NOW + 5, trusted=True, now_ms=NOW + 2)  # as the global topology's index partitions do
    assert clock.now_ms == NOW + 2
