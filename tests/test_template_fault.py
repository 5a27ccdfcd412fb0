"""A page whose template step raises (a bug in `own_text`) is one `processing_error` dead letter; the rest are judged.

The fault is injected into the template step's pure logic for one page id (`own_text._judged`, which
every page's own text passes, or `own_text._marked_shown`, its last step); the store is real RocksDB.
Nothing of the page is learned: its site's model is the one a run without it leaves. The worker is in
tests/runtime/test_worker_page_fault.py."""

from __future__ import annotations

import pytest
from test_page_fault import DETAIL, FAULTY, assert_one_dead_letter, dedup_run, fault_records

from streamdedup import own_text
from streamdedup.config import DetectorConfig
from streamdedup.detector import Detector
from streamdedup.testing import raw_records


def inject_template_fault(monkeypatch: pytest.MonkeyPatch, step: str = "_judged", page_id: str = FAULTY) -> None:
    """Make the template step `step` (a function of `own_text` whose first argument is the page) raise for `page_id`."""
    real = getattr(own_text, step)

    def faulty(item, *args, **kwargs):  # type: ignore[no-untyped-def]
        if item.page.id == page_id:
            raise IndexError("injected fault for a test")
        return real(item, *args, **kwargs)

    monkeypatch.setattr(own_text, step, faulty)


@pytest.mark.parametrize("step", ["_judged", "_marked_shown"])
def test_file_mode_writes_every_output_and_the_faulty_page_as_a_processing_error(tmp_path, monkeypatch, step):
    records = fault_records()
    _, without = dedup_run(tmp_path, "without", [r for r in records if r["url"] != FAULTY])
    inject_template_fault(monkeypatch, step)
    code, files = dedup_run(tmp_path, "faulty", records)
    assert_one_dead_letter(code, files)
    # the others judged as in a crawl without it: nothing of it filed or learned
    for kind in ("unique", "duplicates"):
        assert [r["dedup"] for r in files[kind]] == [r["dedup"] for r in without[kind]]
    _, again = dedup_run(tmp_path, "again", records)  # resumed: the same page fails the same way
    assert again == files


@pytest.mark.parametrize("step", ["_judged", "_marked_shown"])
def test_the_faulty_page_teaches_its_site_nothing(tmp_path, monkeypatch, step):
    records = fault_records()
    beta = [r for r in records if r["url"].startswith("https://beta.")]
    with Detector(DetectorConfig(), tmp_path / "without") as detector:
        _, batch = detector.decide_staged(detector.prepare_many(raw_records(r for r in beta if r["url"] != FAULTY)))
        site = [fp.template_hash for fp in detector.prepare_many(raw_records(beta[:1]))][0]
        expected = batch.template(site)
    inject_template_fault(monkeypatch, step)
    with Detector(DetectorConfig(), tmp_path / "faulty") as detector:
        outcomes, batch = detector.decide_staged(detector.prepare_many(raw_records(beta)))
        assert [o.dedup["reason"] for o in outcomes if o.dedup["status"] == "rejected"] == ["processing_error"]
        got = batch.template(site)
    assert got == expected and got.encode() == expected.encode() and got.layout == expected.layout
    assert [(key, page.tolist(), document) for key, page, document in got.learned] == \
        [(key, page.tolist(), document) for key, page, document in expected.learned]


def test_add_many_gives_the_faulty_item_a_rejection_and_judges_the_rest(tmp_path, monkeypatch):
    from streamdedup.api import Deduplicator

    records = fault_records()
    index = [r["url"] for r in records].index(FAULTY)
    with Deduplicator(state=tmp_path / "without") as dedup:
        without = dedup.add_many(records[:index] + records[index + 1:])
    inject_template_fault(monkeypatch)
    with Deduplicator(state=tmp_path / "faulty") as dedup:
        results = dedup.add_many(records)
        assert len(results) == len(records)
        failed = results.pop(index)
        assert failed.status == "rejected" and failed.reason == "processing_error" and DETAIL in failed.detail
        assert results == without
