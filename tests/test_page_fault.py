"""A page whose judging raises (a bug in the engine) is one `processing_error` dead letter; the rest are judged.

The fault is injected into the engine's pure logic for one page id (`verdict.relations._steered_agree`,
which `judged` asks of every page with candidates); the store is real RocksDB. File mode, the
`Deduplicator`, the Faust app's record path (`outputs_for`); the Kafka worker in
tests/runtime/test_worker_page_fault.py."""

from __future__ import annotations

import orjson
import pytest
from conftest import make_article, page, wrap_in_template

from streamdedup.cli import main
from streamdedup.config import DetectorConfig
from streamdedup.detector import Detector
from streamdedup.store.errors import StoreCorrupt
from streamdedup.verdict import relations
from streamdedup.verdict.page_fault import page_fault

FAULTY = "https://beta.example/story-1"  # a copy of an earlier page: it has candidates to judge
DETAIL = "IndexError: injected fault for a test"


def fault_records() -> list[dict]:
    """Three stories on three sites each (copies), in time order; FAULTY is one of the copies."""
    records = []
    for i in range(3):
        story = make_article(700 + i, paragraphs=4)
        for j, site in enumerate(("Alpha", "Beta", "Gamma")):
            url = f"https://{site.lower()}.example/story-{i}"
            records.append(page(url, wrap_in_template(story, site), f"2024-03-01T0{i}:{j:02d}:00Z", id=url))
    return records


def inject_fault(monkeypatch: pytest.MonkeyPatch, page_id: str = FAULTY,
                 error: Exception | None = None) -> None:
    """Make the engine raise `error` (an IndexError, as the one-line swap's bug did) while it judges `page_id`."""
    real = relations._steered_agree

    def faulty(page, methods):  # type: ignore[no-untyped-def]
        if page.page_id == page_id:
            raise error or IndexError("injected fault for a test")
        return real(page, methods)

    monkeypatch.setattr(relations, "_steered_agree", faulty)


def read_jsonl(path) -> list[dict]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def dedup_run(tmp_path, name: str, records: list[dict]) -> tuple[int, dict[str, list[dict]]]:
    crawl = tmp_path / "crawl.jsonl"
    crawl.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    out = tmp_path / name
    code = main(["dedup", str(crawl), "--out", str(out)])
    files = {kind: read_jsonl(out / f"{kind}.jsonl") for kind in ("unique", "duplicates", "rejected")
             if (out / f"{kind}.jsonl").exists()}
    return code, files


def assert_one_dead_letter(code: int, files: dict) -> None:
    """The run ended well, wrote every output, and the faulty page alone is a `processing_error` naming DETAIL."""
    assert code == 0 and set(files) == {"unique", "duplicates", "rejected"}
    [rejected] = files["rejected"]
    assert rejected["url"] == FAULTY
    assert rejected["dedup"]["reason"] == "processing_error" and DETAIL in rejected["dedup"]["detail"]


def test_file_mode_writes_every_output_and_the_faulty_page_as_a_processing_error(tmp_path, monkeypatch, capsys):
    records = fault_records()
    _, clean = dedup_run(tmp_path, "clean", records)
    inject_fault(monkeypatch)
    capsys.readouterr()
    code, files = dedup_run(tmp_path, "faulty", records)
    assert_one_dead_letter(code, files)
    # every other page judged as without the fault (the faulty page was a copy: no one named it)
    for kind in ("unique", "duplicates"):
        assert [r["dedup"] for r in files[kind]] == [r["dedup"] for r in clean[kind] if r["url"] != FAULTY]
    logged = [orjson.loads(line) for line in capsys.readouterr().err.splitlines() if line.startswith("{")]
    errors = [line for line in logged if line["level"] == "ERROR"]
    assert len(errors) == 1 and FAULTY in errors[0]["message"]  # one line, with the traceback
    assert "Traceback" in errors[0]["exception"] and DETAIL.split(": ")[1] in errors[0]["exception"]


def test_file_mode_resumed_gives_the_faulty_page_the_same_dead_letter(tmp_path, monkeypatch):
    records = fault_records()
    inject_fault(monkeypatch)
    _, first = dedup_run(tmp_path, "first", records)
    _, again = dedup_run(tmp_path, "again", records)
    assert first == again  # the same outputs, the faulty page failing the same way


def test_add_many_gives_the_faulty_item_a_rejection_and_judges_the_rest(tmp_path, monkeypatch):
    from streamdedup.api import Deduplicator

    records = fault_records()
    with Deduplicator(state=tmp_path / "clean") as dedup:
        clean = dedup.add_many(records)
    inject_fault(monkeypatch)
    with Deduplicator(state=tmp_path / "faulty") as dedup:
        results = dedup.add_many(records)
        assert len(results) == len(records)
        index = [r["url"] for r in records].index(FAULTY)
        failed = results[index]
        assert failed.status == "rejected" and failed.reason == "processing_error" and DETAIL in failed.detail
        assert [r for i, r in enumerate(results) if i != index] == [r for i, r in enumerate(clean) if i != index]
        # nothing of it filed: judged again (the fault gone), it is a copy of what it copied, not a repeated id
        monkeypatch.undo()
        [again] = dedup.query_many([records[index]])
        assert again.status == "duplicate" and again.duplicate_of == clean[index].duplicate_of


def test_the_faust_apps_record_path_rejects_the_faulty_page(tmp_path, monkeypatch):
    from streamdedup.runtime.faust_app import outputs_for

    records = fault_records()
    inject_fault(monkeypatch)
    with Detector(DetectorConfig(), tmp_path) as detector:
        outs = [outputs_for(detector, "pages", 0, offset, None, orjson.dumps(r), 1000)
                for offset, r in enumerate(records)]
        again = [outputs_for(detector, "pages", 0, offset, None, orjson.dumps(r), 1000)
                 for offset, r in enumerate(records)]
    assert again == outs  # a replay re-emits the journaled dead letter
    index = [r["url"] for r in records].index(FAULTY)
    [(target, _, value, headers)] = [o for o in outs[index] if o[0] in ("unique", "duplicate", "rejected")]
    assert target == "rejected" and dict(headers)["dedup.reason"] == b"processing_error"
    assert DETAIL in orjson.loads(value)["dedup"]["detail"]
    assert all(o[0] != "rejected" for i, out in enumerate(outs) if i != index for o in out)


def test_the_machines_and_the_stores_errors_are_no_pages_fault():
    assert all(page_fault(err) for err in (IndexError("i"), KeyError("k"), ValueError("v"), RecursionError("r")))
    # rocksdict raises plain Exceptions; a full disk, a damaged store, memory: the run stops and retries
    assert not any(page_fault(err) for err in (Exception("IO error: No space left on device"), OSError(28, "full"),
                                               StoreCorrupt("damaged"), MemoryError()))


@pytest.mark.parametrize("error", [Exception("IO error: While pread offset 0 len 4096: Input/output error"),
                                   MemoryError()], ids=["rocksdb-io", "memory"])
def test_a_store_error_while_judging_still_stops_add_many_with_nothing_filed(tmp_path, monkeypatch, error):
    from streamdedup.api import Deduplicator

    records = fault_records()
    inject_fault(monkeypatch, error=error)
    with Deduplicator(state=tmp_path / "state") as dedup:
        with pytest.raises(type(error)):
            dedup.add_many(records)
        monkeypatch.undo()
        assert dedup.query_many(records[:1])[0].status == "unique"  # the batch was not filed: retried whole
