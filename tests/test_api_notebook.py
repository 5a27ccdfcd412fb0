"""The library as a notebook user meets it: results read without isinstance, stories, Ctrl-C, DataFrame rows."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from streamdedup import Deduplicator, Rejection, Verdict
from streamdedup.testing import make_article

ROOT = Path(__file__).resolve().parents[1]
TEXT = ("The council voted on Monday to keep the library open on Sundays through the winter, "
        "after three hundred residents signed a letter asking for longer opening hours.")

# a notebook user's cell: the verdict's fields read straight off what `add` returns
USER_SNIPPET = '''
from streamdedup import Deduplicator

with Deduplicator() as dedup:
    v = dedup.add("An article about the harbour.")
    print(v.status, v.duplicate_of, v.cluster_id, v.similarity, v.method, v.new_share)
    print(v.supersedes, v.related_to, v.merged_clusters, v.time_note, v.text_cut, v.reason, v.detail)
    shared: str | None = v.duplicate_of
    links: tuple[str, ...] = v.supersedes + v.related_to
    for r in dedup.add_many(["", "text"]):
        print(r.page_id, r.status, r.cluster_id, r.reason)
'''


def test_a_result_s_fields_read_and_type_check_without_isinstance(tmp_path: Path, pytestconfig: Any) -> None:
    """`v = dedup.add(text); v.duplicate_of` failed mypy (union-attr: Rejection had no such field)."""
    snippet = tmp_path / "cell.py"
    snippet.write_text(USER_SNIPPET)
    cache = pytestconfig.cache.mkdir("mypy-snippet")  # kept between runs: a cold check of the package is ~7 s CPU
    checked = subprocess.run([sys.executable, "-m", "mypy", "--follow-imports=silent", "--cache-dir", str(cache),
                              str(snippet)], cwd=ROOT, capture_output=True, text=True,
                             env={**os.environ, "MYPYPATH": str(ROOT)}, timeout=300)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    with Deduplicator() as dedup:
        rejected, unique = dedup.add_many(["", TEXT])
    assert isinstance(rejected, Rejection) and isinstance(unique, Verdict)
    assert (rejected.duplicate_of, rejected.cluster_id, rejected.similarity, rejected.method, rejected.new_share,
            rejected.time_note) == (None,) * 6
    assert (rejected.supersedes, rejected.related_to, rejected.merged_clusters, rejected.text_cut) == ((),) * 3 + (
        False,)
    assert (unique.reason, unique.detail) == (None, None)
    assert rejected.as_dict() == {"status": "rejected", "reason": "empty_content", "detail": rejected.detail,
                                  "origin": "item 1"}  # the output form is unchanged
    assert "reason" not in unique.as_dict() and unique._fields == rejected._fields


class _Timestamp(datetime):
    """pandas' Timestamp as orjson meets it: a datetime subclass (which it does not write itself)."""


class _NaT(datetime):
    """pandas' NaT as the library meets it: a datetime unequal to itself whose isoformat is "NaT"."""

    def __new__(cls) -> _NaT:
        return super().__new__(cls, 1970, 1, 1)

    def __eq__(self, other: object) -> bool:
        return False

    def __ne__(self, other: object) -> bool:
        return True

    __hash__ = datetime.__hash__

    def isoformat(self, sep: str = "T", timespec: str = "auto") -> str:
        return "NaT"


def test_a_dataframe_s_rows_read_as_the_crawl_records_they_stand_for() -> None:
    """`add_many(df.to_dict("records"))`: NaT (pandas' or numpy's) and a float32 NaN fetch time were
    `invalid_field` ("Invalid isoformat string: 'NaT'"), a text row with NaN in the url column was
    `missing_url`, `add(fetched_at=pd.NaT)` was rejected. Now each row is judged as the record a user
    would write by hand: a time as its ISO text, a missing value as the field left out."""
    import numpy as np

    texts = ["\n\n".join(make_article(i, paragraphs=3)) for i in range(9)]
    urls = [f"https://news.example/{i}" for i in range(9)]
    rows = [  # as a DataFrame hands them over, and as a crawl file would hold them
        ({"id": np.int64(1), "fetched_at": _Timestamp(2024, 1, 2, 3, 4, 5, tzinfo=UTC)},
         {"id": 1, "fetched_at": "2024-01-02T03:04:05+00:00"}),
        ({"fetched_at": np.datetime64("2024-01-02T03:04:05.123456789")}, {"fetched_at": "2024-01-02T03:04:05.123456Z"}),
        ({"fetched_at": datetime(2024, 1, 3)}, {"fetched_at": "2024-01-03T00:00:00Z"}),
        ({"id": np.uint8(4), "fetched_at": np.int64(1704164645)}, {"id": 4, "fetched_at": 1704164645}),
        ({"fetched_at": _NaT()}, {}),
        ({"fetched_at": np.datetime64("NaT")}, {}),
        ({"fetched_at": float("nan")}, {}),
        ({"fetched_at": np.float32("nan"), "id": float("nan"), "lang": None}, {}),
    ]
    given = [{"url": url, "content": text, **row} for (row, _), url, text in zip(rows, urls, texts, strict=False)]
    written = [{"url": url, "content": text, **row} for (_, row), url, text in zip(rows, urls, texts, strict=False)]
    given.append({"id": np.int32(0), "url": float("nan"), "text": texts[8], "fetched_at": _NaT()})  # a text's row
    written.append({"id": 0, "text": texts[8]})
    with Deduplicator() as dedup:
        from_rows = dedup.add_many(given)
        nat = dedup.add(texts[0] + " Updated.", id="nat", fetched_at=_NaT())
        assert "fetched_at" not in dedup.record(TEXT, fetched_at=_NaT())
        assert dedup.record(TEXT, fetched_at=np.datetime64("2024-01-02"))["fetched_at"] == "2024-01-02T00:00:00.000000"
    with Deduplicator() as dedup:
        by_hand = dedup.add_many(written)
    assert [(r.status, r.reason) for r in from_rows] == [("unique", None)] * len(given), from_rows
    # the same ids: derived from the same fetch time (rows 2, 3) or, undated, from the same place (5-8)
    assert [r.page_id for r in from_rows] == [r.page_id for r in by_hand] and from_rows[-1].page_id == "0"
    assert (nat.status, nat.duplicate_of) == ("duplicate", "1")


def test_a_pandas_dataframe_s_rows_are_judged() -> None:
    """The same with pandas itself, where it is installed (the test extra installs it; the library does not need it)."""
    pd = pytest.importorskip("pandas")

    texts = ["\n\n".join(make_article(i, paragraphs=3)) for i in range(4)]
    frame = pd.DataFrame({
        "id": pd.array([1, 2, None, 4], dtype="Int64"),
        "url": ["https://a.example/1", None, "https://a.example/3", "https://a.example/4"],
        "text": [None, texts[1], None, None],
        "content": [texts[0], None, texts[2], texts[3]],
        "fetched_at": pd.to_datetime(["2024-01-02T03:04:05Z", None, "2024-01-03T00:00:00Z", None]),
        "lang": pd.array(["en", pd.NA, "en", "en"], dtype="string")})
    with Deduplicator() as dedup:
        results = dedup.add_many(frame.to_dict("records"))
        assert [(r.status, r.reason) for r in results] == [("unique", None)] * 4, results
        assert [r.page_id for r in results][:2] + [r.page_id for r in results][3:] == ["1", "2", "4"]
        assert dedup.add(texts[0] + " Updated.", id="nat", fetched_at=pd.NaT).duplicate_of == "1"



def test_a_dataframe_given_whole_is_read_row_by_row_with_its_int_ids() -> None:
    """`add_many(df)` judged the column names "id" and "text" as two texts, and ids 1.0 and 3.0 were refused.

    Iterated, a DataFrame gives its column names; an int column with a gap is floats in pandas."""
    pd = pytest.importorskip("pandas")

    texts = ["\n\n".join(make_article(i, paragraphs=3)) for i in range(3)]
    frame = pd.DataFrame({"id": [1, None, 3], "text": texts})
    assert frame["id"].dtype == "float64"
    with Deduplicator() as dedup:
        results = dedup.add_many(frame)
        assert [(r.status, r.reason) for r in results] == [("unique", None)] * 3, results
        assert [results[0].page_id, results[2].page_id] == ["1", "3"]
        assert dedup.query_many(frame[["text"]])[2].duplicate_of == "3"
        refused = dedup.add_many(pd.DataFrame({"id": [1.5], "text": [texts[0] + " Updated."]}))
        assert refused[0].reason == "invalid_field"  # a fraction is no id of ours
        rows = frame.assign(id=["r1", "r2", "r3"])  # a row as `itertuples` and `iterrows` give it
        assert [r.duplicate_of for r in dedup.add_many(list(rows.itertuples(index=False)))] == [r.page_id for r in results]
        assert dedup.add_many([rows.iloc[0]])[0].reason == "duplicate_id"  # read as the record r1
        with pytest.raises(TypeError, match=r"add_many\(\[record\]\)"):
            dedup.add(rows.iloc[1])

def _articles(count: int, start: int = 0) -> list[str]:
    return ["\n\n".join(make_article(i, paragraphs=3)) for i in range(start, start + count)]


def test_ctrl_c_in_add_many_files_whole_batches_and_says_how_many(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C in a long `add_many` raised a bare KeyboardInterrupt: 8 of 12 items filed, unsaid, their
    verdicts lost; the cell run again gave those 8 as `duplicate_id` (or, without ids, as duplicates
    of themselves). Now the batch in hand is forgotten whole and `AddInterrupted` names the items filed."""
    import streamdedup.fingerprinter
    from streamdedup import AddInterrupted, DetectorConfig

    texts = _articles(12)
    items = [{"id": f"p{i}", "text": text} for i, text in enumerate(texts[:6])] + texts[6:]  # ids given, and not
    real, reads = streamdedup.fingerprinter.page_from_record, [0]

    def interrupted_at_the_tenth(*args: Any, **kwargs: Any) -> Any:  # the record reader: pure
        reads[0] += 1
        if reads[0] == 10:  # in the third batch of four
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    state = tmp_path / "state"
    with Deduplicator(DetectorConfig(batch_size=4), state=state) as dedup:
        monkeypatch.setattr(streamdedup.fingerprinter, "page_from_record", interrupted_at_the_tenth)
        with pytest.raises(AddInterrupted) as stopped:
            dedup.add_many(items)
        monkeypatch.undo()
        err = stopped.value
        assert isinstance(err, KeyboardInterrupt) and (err.filed, err.total) == (8, 12)
        assert str(err) == ("add_many was interrupted: its first 8 of 12 items were filed (their verdicts: this "
                            "exception's .results), the other 4 were not: add_many(items[8:]) files them")
        assert [r.status for r in err.results] == ["unique"] * 8 and err.results[0].page_id == "p0"
        filed = [r.page_id for r in err.results]
        assert [r.duplicate_of for r in dedup.query_many(texts)] == filed + [None] * 4  # the third batch: not filed
        assert sum(story["size"] for story in dedup.stories()) == 8  # the filed pages only
        rest = dedup.add_many(items[err.filed:])  # as the message says
        assert [(r.status, r.reason) for r in rest] == [("unique", None)] * 4
        assert sum(story["size"] for story in dedup.stories()) == 12
    with Deduplicator(state=state) as dedup:  # each item filed once, in a store that reopens
        again = dedup.query_many(texts)
        assert [r.duplicate_of for r in again] == filed + [r.page_id for r in rest]


def test_ctrl_c_during_a_store_write_waits_for_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SIGINT between the batch's RocksDB write and its in-memory index update left pages on disk
    that no later page found (a copy of them was `unique`); now it is delivered after the write."""
    import signal

    from streamdedup import AddInterrupted, DetectorConfig

    texts = _articles(6, start=20)
    with Deduplicator(DetectorConfig(batch_size=3), state=tmp_path / "state") as dedup:
        dedup.add(TEXT, id="first")  # its session's number taken (a store write of its own, held alike)
        memory = dedup._detector.store.memory
        real, writes = memory.insert_ints, [0]

        def insert_after_ctrl_c(*args: Any, **kwargs: Any) -> Any:
            writes[0] += 1
            if writes[0] == 1:  # the first batch: on disk, not yet in the index
                signal.raise_signal(signal.SIGINT)
            return real(*args, **kwargs)

        monkeypatch.setattr(memory, "insert_ints", insert_after_ctrl_c)
        with pytest.raises(AddInterrupted) as stopped:
            dedup.add_many(texts)
        monkeypatch.undo()
        assert (stopped.value.filed, stopped.value.total) == (3, 6)
        assert [r.duplicate_of for r in dedup.query_many(texts)] == [r.page_id for r in stopped.value.results] + [
            None] * 3
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        with pytest.raises(AddInterrupted, match="add was interrupted after filing its item"):
            monkeypatch.setattr(memory, "insert_ints", insert_after_ctrl_c)
            writes[0] = 0
            dedup.add(texts[3], id="single")
        monkeypatch.undo()
        assert dedup.add(texts[3] + " Updated.").duplicate_of == "single"  # still usable, and it was filed


def _bridged_records() -> list[dict[str, Any]]:
    """Two stories a third page bridges (a merge), a copy of the first on another site, a rejection, a loner."""
    a, b = make_article(31, paragraphs=4), make_article(32, paragraphs=4)
    texts = ["\n\n".join(a), "\n\n".join(b), "\n\n".join(a + b), "\n\n".join(a), "", "\n\n".join(make_article(33))]
    return [{"url": f"https://{site}.example/{n}", "content": text, "content_type": "text/plain",
             "fetched_at": f"2024-01-0{n + 1}T00:00:00Z"}
            for n, (site, text) in enumerate(zip("xxxyzx", texts, strict=True))]


def test_stories_are_file_mode_s_clusters_for_the_pages_added(tmp_path: Path) -> None:
    """Story -> pages came only from file mode's clusters.jsonl or the Kafka cluster view: a notebook
    had to fold verdicts itself. `stories()` is clusters.jsonl's content, merges folded alike."""
    import json

    from streamdedup import DetectorConfig, dedup_files

    config = DetectorConfig(methods=("minhash",), policy="minhash", method_params={"minhash": {"threshold": 0.3}})
    records = _bridged_records()
    crawl = tmp_path / "crawl.jsonl"
    crawl.write_text("".join(json.dumps(record) + "\n" for record in records))
    dedup_files([crawl], tmp_path / "out", config)
    clusters = [json.loads(line) for line in (tmp_path / "out" / "clusters.jsonl").read_text().splitlines()]
    with Deduplicator(config) as dedup:
        assert dedup.stories() == []
        results = dedup.add_many(records)
        assert results[2].merged_clusters == (results[1].page_id,)  # the bridge: one story of a and b
        dedup.query_many([records[5]["content"] + " Queried, not filed."])
    stories = dedup.stories()  # after close too: it needs no store
    assert stories == clusters
    assert sorted((s["cluster_id"], s["size"]) for s in stories) == sorted([(results[0].page_id, 4),
                                                                             (results[5].page_id, 1)])
    merged = next(s for s in stories if s["size"] == 4)
    assert [p["id"] for p in merged["pages"]] == [r.page_id for r in results[:4]]  # in the order fetched
    merged["pages"][0]["url"] = "changed"  # a copy: the next answer is whole
    assert next(s for s in dedup.stories() if s["size"] == 4)["pages"][0]["url"] == "https://x.example/0"


def test_a_caller_changing_the_stories_it_got_changes_no_later_answer() -> None:
    """Each `stories()` answer is made afresh: a caller that changes every part of one (a story's fields, its
    `related` and `pages` lists, a page's fields and its `related_to` list) finds the next answer as before."""
    import copy

    story, other = make_article(12, paragraphs=10), make_article(13, paragraphs=10)
    texts = [story, story[:6] + other[:5], story]  # a story, a follow-up related to it, a copy of it
    with Deduplicator() as dedup:
        dedup.add_many([{"url": f"https://{site}.example/{n}", "content": "\n\n".join(text),
                         "content_type": "text/plain", "fetched_at": f"2024-01-0{n + 1}T00:00:00Z"}
                        for n, (site, text) in enumerate(zip("abc", texts, strict=True))])
        got = dedup.stories()
        before = copy.deepcopy(got)
        assert [len(s["pages"]) for s in got] == [1, 2] and got[0]["pages"][0]["related_to"] == [got[1]["cluster_id"]]
        for answer in got:
            answer["related"].append("changed")
            for page in answer["pages"]:
                page.get("related_to", []).append("changed")
                page["url"] = "changed"
            answer["pages"].append({"id": "changed"})
            answer["size"] = 0
        assert dedup.stories() == before


def test_stories_of_a_reopened_store_say_what_they_hold(tmp_path: Path) -> None:
    """A kept store keeps no cluster events: its earlier pages are in no story, and a warning says so."""
    from streamdedup import DetectorConfig

    config = DetectorConfig(methods=("minhash",), policy="minhash", method_params={"minhash": {"threshold": 0.3}})
    records = _bridged_records()
    with Deduplicator(config, state=tmp_path / "state") as dedup:
        first = dedup.add_many(records[:2])
    with Deduplicator(config, state=tmp_path / "state") as dedup:
        copy = dedup.add_many(records[3:4])[0]
        assert copy.duplicate_of == first[0].page_id
        with pytest.warns(UserWarning, match="the 2 pages filed into its store before it was opened are in none"):
            stories = dedup.stories()
        assert [(s["cluster_id"], s["size"], [p["id"] for p in s["pages"]]) for s in stories] == [
            (first[0].page_id, 1, [copy.page_id])]
    with Deduplicator(keep_stories=False) as dedup:
        dedup.add(TEXT)
        with pytest.raises(ValueError, match="opened with keep_stories=False"):
            dedup.stories()


def test_results_with_rejections_are_one_dataframe() -> None:
    """`pandas.DataFrame(results)` raised as soon as a rejection was in the list (TypeError "asdict()
    should be called on dataclass instances", or "object of type 'Rejection' has no len()"): a
    Rejection was a dataclass and a Verdict a NamedTuple. Both are tuples of the same 15 fields now."""
    import copy
    import pickle

    pd = pytest.importorskip("pandas")
    with Deduplicator() as dedup:
        results = dedup.add_many([TEXT, "", TEXT])
    unique, rejected, duplicate = results
    for rows in (results, [rejected, duplicate], [unique, rejected]):
        frame = pd.DataFrame(rows)
        assert list(frame.columns) == list(Verdict._fields) == list(Rejection._fields)
        assert frame["status"].tolist() == [r.status for r in rows]
        assert [x if isinstance(x, str) else None for x in frame["reason"]] == [r.reason for r in rows]
    assert pd.DataFrame(results)["duplicate_of"].iloc[2] == unique.page_id
    assert (rejected.reason, rejected.origin, rejected.page_id, rejected.status) == ("empty_content", "item 2",
                                                                                     None, "rejected")
    assert pickle.loads(pickle.dumps(rejected)) == rejected == copy.copy(rejected)
    assert repr(rejected).startswith("Rejection(reason='empty_content', detail=")


def test_a_gap_in_a_list_of_texts_is_that_item_s_rejection() -> None:
    """A list of texts with a gap (None, or NaN from a column's `tolist()`) raised a TypeError for the
    whole call ("got NoneType", naming no item); now that item is an `empty_content` rejection. An
    item of another kind still raises, naming its place in the list and what to give instead."""
    pd = pytest.importorskip("pandas")
    with Deduplicator() as dedup:
        results = dedup.add_many(pd.Series([TEXT, None, float("nan")], dtype=object).tolist() + [pd.NA])
        assert [(r.status, r.reason) for r in results] == [("unique", None)] + [("rejected", "empty_content")] * 3
        assert results[1].detail == "the item is None (a missing value): no text"
        with pytest.raises(TypeError, match=r"item 1 of the list is bytes: decode it .* \(no item was filed\)"):
            dedup.add_many([TEXT + " Again.", b"<html><p>bytes</p></html>"])
        with pytest.raises(TypeError, match=r"item 0 of the list is int: give str\(item\)"):
            dedup.add_many([5])
        assert [s["size"] for s in dedup.stories()] == [1]


def test_a_crawl_added_again_to_a_kept_store_says_why_it_is_refused(tmp_path: Path) -> None:
    """Records without ids added again to a reopened store were `duplicate_id` "page id '…' was
    already processed": the user gave no id (it is made from the url and fetch time) and the line
    named no way out. It now says where the id came from and what to do."""
    record = {"url": "https://a.example/1", "fetched_at": "2024-05-01T08:00:00Z", "text": TEXT}
    with Deduplicator(state=tmp_path / "kept") as dedup:
        first = dedup.add_many([record])[0]
    with Deduplicator(state=tmp_path / "kept") as dedup:
        again, other = dedup.add_many([record, {**record, "id": "second-look"}])
    assert (again.reason, again.page_id) == ("duplicate_id", first.page_id)
    assert again.detail is not None and "made from its url and fetch time" in again.detail
    assert again.detail.endswith("give it another id to judge it again")
    assert (other.status, other.duplicate_of) == ("duplicate", first.page_id)


def test_stories_list_a_text_given_without_url_with_no_url() -> None:
    """A text given without a url was listed in `stories()` under a url made up for it (`text:<id>`),
    which no docs named and a user would take for theirs: its `url` is None, as it was given."""
    with Deduplicator() as dedup:
        texts = dedup.add_many([TEXT, TEXT, {"id": "row-3", "text": TEXT}])
        page = dedup.add(TEXT, url="https://a.example/library")
    assert [r.status for r in [*texts, page]] == ["unique", "duplicate", "duplicate", "duplicate"]
    (story,) = dedup.stories()
    assert [(p["id"], p["url"]) for p in story["pages"]] == [
        (texts[0].page_id, None), (texts[1].page_id, None), ("row-3", None), (page.page_id, "https://a.example/library")]
