"""The two stateful scale-out steps on their own (real RocksDB, no broker): the race between
two near-duplicates in flight, answers in any order, repeated ids."""

from __future__ import annotations

import orjson

from streamdedup.config import DetectorConfig
from streamdedup.fingerprinter import Fingerprinted, Fingerprinter
from streamdedup.record.readers import RawRecord
from streamdedup.runtime.scaleout.gather_stage import (
    AFTER_IDLE,
    LATE_PAGE,
    RELEASED_EARLY,
    Decided,
    GatherPartition,
    LateMatch,
    verdict_of,
)
from streamdedup.runtime.scaleout.index_stage import IndexPartition, supplements_of
from streamdedup.runtime.scaleout.messages import INFINITE, Answer, IndexRequest, Match, PageHeader, Supplement
from streamdedup.runtime.scaleout.routing import page_order
from streamdedup.runtime.topologies.scaleout import index_requests
from streamdedup.store.signature_store import method_tags
from streamdedup.testing import make_article
from streamdedup.verdict.policy import SitePolicy


def request(detector: Fingerprinter, url: str, text: str, order: bytes) -> IndexRequest:
    item = detector.prepare(RawRecord("t", data=orjson.dumps({"url": url, "content": text, "content_type": "text/plain"})))
    assert isinstance(item, Fingerprinted)
    doc, keys = index_requests(item, detector.methods, method_tags([m.name for m in detector.methods]), 0, 1)
    return IndexRequest(order, doc, keys[0])

def test_a_later_page_filed_first_is_reported_to_the_earlier_one(tmp_path):
    detector = Fingerprinter(DetectorConfig())
    text = "\n\n".join(make_article(7))
    early = request(detector, "https://a.example/1", text, page_order(1000, 5, 0, 0))
    late = request(detector, "https://b.example/1", text, page_order(2000, 6, 1, 0))
    policy = SitePolicy.parse(DetectorConfig().policy, DetectorConfig().site_policy)
    index = IndexPartition(tmp_path / "index", detector.methods, policy, detector.store_config, partition=0)
    late_answer = index.answer(late)  # the later page reaches this partition first
    early_answer = index.answer(early)
    assert late_answer.earlier == () and late_answer.later == ()
    assert [m.page_id for m in early_answer.later] == [late.doc.page_id] and early_answer.earlier == ()
    index.commit()
    # a third copy, after both: sees both as earlier; its root is the earliest page
    third = request(detector, "https://c.example/1", text, page_order(3000, 7, 2, 0))
    third_answer = index.answer(third)
    assert sorted(m.page_id for m in third_answer.earlier) == sorted([early.doc.page_id, late.doc.page_id])
    index.close()

    # the verdicts: nobody is a duplicate of a later page; the later page gets a supplement
    def header(req: IndexRequest) -> PageHeader:
        return PageHeader(req.doc.page_id, req.order, (0,), {"url": "x"}, "t")

    supplements = supplements_of(early_answer)
    assert [(s.page_id, s.order, s.match.page_id, s.match.root_id, s.partition) for s in supplements] == \
        [(late.doc.page_id, late.order, early.doc.page_id, early.doc.page_id, 0)]
    assert [Supplement.from_json(orjson.loads(s.encode())) for s in supplements] == supplements
    assert verdict_of(header(late), [late_answer])["status"] == "unique"  # without it: as emitted before
    late_dedup = verdict_of(header(late), [late_answer], [s.match for s in supplements])
    early_dedup = verdict_of(header(early), [early_answer])
    third_dedup = verdict_of(header(third), [third_answer])
    assert early_dedup["status"] == "unique"
    assert late_dedup["duplicate_of"] == early.doc.page_id and late_dedup["cluster_id"] == early.doc.page_id
    assert third_dedup["duplicate_of"] == early.doc.page_id and third_dedup["cluster_id"] == early.doc.page_id


def test_gather_waits_for_every_partition_in_any_order_and_survives_a_restart(tmp_path):
    order = page_order(1, 1, 0, 0)
    header = PageHeader("p1", order, (0, 3), {"url": "https://a.example/"}, "pages[0]@0")
    gather = GatherPartition(tmp_path / "g", hold=False)
    assert gather.add_answer(Answer("p1", order, 3)) == []
    gather.commit()
    gather.close()
    gather = GatherPartition(tmp_path / "g", hold=False)  # state survives
    assert gather.waiting() == 1
    assert gather.add_header(header) == []  # partition 0 has not answered
    [decided] = gather.add_answer(Answer("p1", order, 0))
    assert isinstance(decided, Decided) and decided.dedup["status"] == "unique"
    gather.commit()
    assert gather.waiting() == 0
    # a second page under the same id (another input offset) is a dead letter, not a verdict
    again = PageHeader("p1", page_order(2, 2, 0, 1), (), {"url": "https://a.example/"}, "pages[0]@1")
    [rejected] = gather.add_header(again)
    assert isinstance(rejected, Decided) and rejected.dedup["reason"] == "duplicate_id"
    gather.close()


def match(page_id: str, order: bytes) -> Match:
    return Match(page_id, order, "exact", 1.0, order, page_id)


def test_a_held_page_waits_for_its_index_partitions_watermarks_and_takes_its_supplements(tmp_path):
    """Final verdicts: L is complete before the earlier page E reached index partition 1; L is held
    until partitions 0 and 1 have passed it, and E's supplement makes it E's duplicate."""
    early, late, after = page_order(1, 1, 0, 0), page_order(2, 2, 1, 0), page_order(3, 3, 0, 1)
    gather = GatherPartition(tmp_path / "g")
    assert gather.add_header(PageHeader("L", late, (0, 1), {}, "t"), at_ms=1000) == []
    assert gather.add_answer(Answer("L", late, 0), at_ms=1000) == []
    assert gather.add_answer(Answer("L", late, 1), at_ms=1000) == []  # complete: held
    assert gather.add_watermark(0, after) == []  # partition 1 has not passed it
    gather.commit()
    gather.close()
    gather = GatherPartition(tmp_path / "g")  # held pages and watermarks survive a restart
    assert gather.add_supplement(Supplement("L", late, match("E", early))) == []
    [first] = gather.add_watermark(1, late)  # at its order: passed (nothing at or below it is to come)
    assert isinstance(first, Decided) and first.dedup["duplicate_of"] == "E"
    gather.discard()  # the batch is consumed again: back to the committed state, L held
    assert gather.waiting() == 1
    assert gather.add_supplement(Supplement("L", late, match("E", early))) == []
    [decided] = gather.add_watermark(1, after)
    assert isinstance(decided, Decided) and decided.by == "watermark"
    assert decided.dedup["duplicate_of"] == "E" and decided.dedup["cluster_id"] == "E"
    gather.commit()
    # a supplement once it is out: one counted late match, however many partitions send it
    other = match("D", page_order(0, 0, 2, 0))
    [late_match] = gather.add_supplement(Supplement("L", late, other))
    assert isinstance(late_match, LateMatch) and late_match.event["duplicate_of"] == "D"
    assert gather.add_supplement(Supplement("L", late, other)) == []
    assert gather.add_supplement(Supplement("L", late, match("E", early))) == []  # known when decided
    gather.close()


def test_the_bounded_wait_releases_by_a_marker_and_only_once(tmp_path):
    order = page_order(5, 5, 0, 0)
    gather = GatherPartition(tmp_path / "g")
    gather.add_header(PageHeader("P", order, (0,), {}, "t"), at_ms=1000)
    assert gather.add_answer(Answer("P", order, 0), at_ms=1000) == []
    assert gather.due(now_ms=1500, wait_ms=1000) == []
    due = gather.due(now_ms=2000, wait_ms=1000)
    assert due == [("P", order)]
    gather.mark(due)
    assert gather.due(now_ms=3000, wait_ms=1000) == []  # marked: not sent twice
    [decided] = gather.add_release(due)
    assert isinstance(decided, Decided) and decided.by == "timeout" and decided.dedup["status"] == "unique"
    assert gather.add_release(due) == []  # a second marker (resent after a crash) changes nothing
    assert gather.add_watermark(0, page_order(9, 9, 0, 0)) == []
    gather.close()


def test_a_late_match_tells_a_late_page_from_a_page_released_early(tmp_path):
    """L went out by the watermark of index partition 0; then E, earlier than that watermark,
    reaches partition 0: E was late (its input partition was behind its own watermark), and the
    fix is the allowed lateness. P went out by its wait before partition 0 passed it; then F,
    above partition 0's watermark, reaches it: P was released early, and the fix is the wait.
    A supplement written before it named its partition cannot tell: released early. Q went out
    while every input of partition 1 was idle: its earlier copy came after the idle spell."""
    gather = GatherPartition(tmp_path / "g")
    l_order, p_order, passed = page_order(5, 5, 0, 0), page_order(8, 8, 0, 0), page_order(6, 6, 0, 0)
    gather.add_header(PageHeader("L", l_order, (0,), {}, "t"), at_ms=1000)
    assert gather.add_answer(Answer("L", l_order, 0), at_ms=1000) == []
    [released] = gather.add_watermark(0, passed)
    assert isinstance(released, Decided) and released.by == "watermark"
    [late] = gather.add_supplement(Supplement("L", l_order, match("E", page_order(3, 3, 1, 0)), partition=0))
    assert isinstance(late, LateMatch) and late.cause == LATE_PAGE and late.event["duplicate_of"] == "E"

    gather.add_header(PageHeader("P", p_order, (0,), {}, "t"), at_ms=1000)
    assert gather.add_answer(Answer("P", p_order, 0), at_ms=1000) == []  # held: partition 0 is at 6
    [timed_out] = gather.add_release(gather.due(now_ms=9000, wait_ms=1000))
    assert isinstance(timed_out, Decided) and timed_out.by == "timeout"
    [early] = gather.add_supplement(Supplement("P", p_order, match("F", page_order(7, 7, 1, 0)), partition=0))
    assert isinstance(early, LateMatch) and early.cause == RELEASED_EARLY
    [unknown] = gather.add_supplement(Supplement("L", l_order, match("G", page_order(4, 4, 1, 0))))
    assert isinstance(unknown, LateMatch) and unknown.cause == RELEASED_EARLY

    # every input of partition 1 idle: Q goes out at once; an earlier copy after that came
    # from an input that had been idle (a burst after a quiet spell), not from one out of order
    q_order = page_order(20, 20, 0, 0)
    assert gather.add_watermark(1, INFINITE) == []
    gather.add_header(PageHeader("Q", q_order, (1,), {}, "t"), at_ms=1000)
    [idle_released] = gather.add_answer(Answer("Q", q_order, 1), at_ms=1000)
    assert isinstance(idle_released, Decided) and idle_released.by == "watermark"
    [after_idle] = gather.add_supplement(Supplement("Q", q_order, match("H", page_order(19, 19, 2, 0)), partition=1))
    assert isinstance(after_idle, LateMatch) and after_idle.cause == AFTER_IDLE
    gather.close()


def test_an_index_partition_judges_rescued_own_site_pages_by_their_article_elements(tmp_path):
    """The global topology's index partitions call the same engine: a request carries the page's
    element text signature (`DocRecord.steered`, in the request's record), the partition keeps it
    with the page, and two rescued pages of one site whose elements differ do not match there
    either, while the same pages with agreeing elements do."""
    detector = Fingerprinter(DetectorConfig())
    tags = method_tags([m.name for m in detector.methods])
    text = "\n\n".join(make_article(9))

    def rescued(url: str, element: str, at: int) -> IndexRequest:
        item = detector.prepare(RawRecord("t", data=orjson.dumps({"url": url, "content": text,
                                                                  "content_type": "text/plain"})))
        assert isinstance(item, Fingerprinted)
        item = item.but(steered=detector.steered_signature(element, None))
        doc, keys = index_requests(item, detector.methods, tags, 0, 1)
        return IndexRequest(page_order(at, at, 0, 0), doc, keys[0])

    briefs = [f"Brief {n}\n" + make_article(n)[0] for n in (20, 21)]
    first, other, revision = (rescued("https://a.example/1", briefs[0], 1), rescued("https://a.example/2", briefs[1], 2),
                              rescued("https://a.example/3", briefs[0] + " updated", 3))
    assert first.doc.steered and IndexRequest.decode(first.encode()).doc == first.doc
    policy = SitePolicy.parse(DetectorConfig().policy, DetectorConfig().site_policy)
    index = IndexPartition(tmp_path / "index", detector.methods, policy, detector.store_config, partition=0)
    assert index.answer(first).earlier == ()
    assert index.answer(other).earlier == ()  # the same main text, another element: no match
    assert [m.page_id for m in index.answer(revision).earlier] == [first.doc.page_id]
    index.close()
