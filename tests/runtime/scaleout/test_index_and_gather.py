"""The two stateful scale-out steps on their own (real RocksDB, no broker): the race between
two near-duplicates in flight, answers in any order, repeated ids."""

from __future__ import annotations

import orjson

from streamdedup.config import DetectorConfig
from streamdedup.fingerprinter import Fingerprinted, Fingerprinter
from streamdedup.record.readers import RawRecord
from streamdedup.runtime.scaleout.gather_stage import GatherPartition, verdict_of
from streamdedup.runtime.scaleout.index_stage import IndexPartition
from streamdedup.runtime.scaleout.messages import Answer, IndexRequest, PageHeader
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

    # the verdicts: nobody is a duplicate of a later page, the late match is a correction event
    def header(req: IndexRequest) -> PageHeader:
        return PageHeader(req.doc.page_id, req.order, (0,), {"url": "x"}, "t")

    late_dedup, late_events = verdict_of(header(late), [late_answer])
    early_dedup, early_events = verdict_of(header(early), [early_answer])
    third_dedup, _ = verdict_of(header(third), [third_answer])
    assert late_dedup["status"] == "unique" and early_dedup["status"] == "unique"
    assert early_events == [{"type": "late_match", "page_id": late.doc.page_id, "duplicate_of": early.doc.page_id,
                             "cluster_id": early.doc.page_id, "similarity": 1.0, "method": "exact"}]
    assert third_dedup["duplicate_of"] == early.doc.page_id and third_dedup["cluster_id"] == early.doc.page_id
    assert late_dedup["duplicate_of"] is None


def test_gather_waits_for_every_partition_in_any_order_and_survives_a_restart(tmp_path):
    order = page_order(1, 1, 0, 0)
    header = PageHeader("p1", order, (0, 3), {"url": "https://a.example/"}, "pages[0]@0")
    gather = GatherPartition(tmp_path / "g")
    assert gather.add_answer(Answer("p1", order, 3)) is None
    gather.commit()
    gather.close()
    gather = GatherPartition(tmp_path / "g")  # state survives
    assert gather.waiting() == 1
    assert gather.add_header(header) is None  # partition 0 has not answered
    decided = gather.add_answer(Answer("p1", order, 0))
    assert decided is not None and decided.dedup["status"] == "unique"
    gather.commit()
    assert gather.waiting() == 0
    # a second page under the same id (another input offset) is a dead letter, not a verdict
    again = PageHeader("p1", page_order(2, 2, 0, 1), (), {"url": "https://a.example/"}, "pages[0]@1")
    rejected = gather.add_header(again)
    assert rejected is not None and rejected.dedup["reason"] == "duplicate_id"
    gather.close()
