"""A notebook user's slips: each ends in the item's own rejection or in one line naming the fix."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from streamdedup import Deduplicator, DetectorConfig
from streamdedup.store.errors import StoreLocked
from streamdedup.testing import make_article

ROOT = Path(__file__).resolve().parents[1]
TEXTS = ["\n\n".join(make_article(i, paragraphs=3)) for i in range(3)]
# another kernel's cell: a kept store held open
HOLD = "import sys, time; from streamdedup import Deduplicator; d = Deduplicator(state=sys.argv[1]); " \
       "print('open', flush=True); time.sleep(60)"


def test_a_gap_in_the_text_column_is_a_missing_text_not_a_missing_url() -> None:
    """A text row whose text is None or NaN was `missing_url` ("no url field (accepted: url, ...)"):
    a text has no url, so the fix it named was the wrong one; now `missing_content` names the text."""
    with Deduplicator() as dedup:
        results = dedup.add_many([{"id": 1, "text": TEXTS[0]}, {"id": 2, "text": None},
                                  {"id": 3, "text": float("nan")}, {"url": "https://a.example/4", "content": None}])
    assert results[0].status == "unique"
    assert [(r.reason, r.detail) for r in results[1:]] == [
        ("missing_content", "text is None (a missing value): no text to judge"),
        ("missing_content", "text is nan (a missing value): no text to judge"),
        ("missing_content", "content is None (a missing value): no text to judge")]


def test_a_pandas_text_column_with_a_gap_rejects_that_row_for_its_text() -> None:
    """The same with a DataFrame given whole: its third row's text is NaN and it has no url column."""
    pd = pytest.importorskip("pandas")

    frame = pd.DataFrame({"id": [1, 2, 3], "text": [TEXTS[0], TEXTS[1], None]})
    with Deduplicator() as dedup:
        results = dedup.add_many(frame)
    assert [r.reason for r in results] == [None, None, "missing_content"], results
    assert results[2].detail is not None and results[2].detail.startswith("text is ")


def test_the_pairs_of_iterrows_are_read_as_their_rows() -> None:
    """`add_many(df.iterrows())` raised TypeError "item 0 of the list is tuple: give str(item)": the
    (index, row) pairs iterrows gives are now read as their rows, as `[row for _, row in df.iterrows()]` is."""
    pd = pytest.importorskip("pandas")

    frame = pd.DataFrame({"id": ["a", "b", "c"], "text": [TEXTS[0], TEXTS[1], TEXTS[0]]})
    with Deduplicator() as dedup:
        results = dedup.add_many(frame.iterrows())
    assert [(r.page_id, r.status, r.duplicate_of) for r in results] == [
        ("a", "unique", None), ("b", "unique", None), ("c", "duplicate", "a")]


def test_columns_or_rows_without_names_name_the_records_to_give() -> None:
    """A mapping of columns (`df.to_dict()`, {"text": [...]}) was told "pass it in a list, [item]", which
    files one page of garbage; `df.values`' rows were told "give str(item)"; None raised "'NoneType'
    object is not iterable". Each now says what to give, in one line, and files nothing."""
    pd = pytest.importorskip("pandas")

    frame = pd.DataFrame({"id": [1, 2], "text": TEXTS[:2]})
    with Deduplicator() as dedup:
        for columns in (frame.to_dict(), {"id": [1, 2], "text": TEXTS[:2]}):
            with pytest.raises(TypeError) as refused:
                dedup.add_many(columns)
            assert "to_dict('records')" in str(refused.value) and "[item]" not in str(refused.value)
        with pytest.raises(TypeError, match=r"names no field: give a page record") as refused:
            dedup.add_many(frame.values)
        assert "str(item)" not in str(refused.value)
        with pytest.raises(TypeError, match=r"^add_many takes a list of items \(texts or page records\), got NoneType$"):
            dedup.add_many(None)  # type: ignore[arg-type]
        assert "\n" not in str(refused.value)
        assert dedup.add_many(frame)[0].status == "unique"  # nothing of the refused calls was filed


def test_a_page_over_the_content_cap_names_the_setting_that_raises_it() -> None:
    """A 10 MB text was `too_large` with "content is N bytes, the limit is 10000000", naming no setting:
    in Python it is `max_content_bytes`, given through `DetectorConfig.from_mapping` (docs/api.md)."""
    text = " ".join(TEXTS) * 3
    with Deduplicator(DetectorConfig.from_mapping({"max_content_bytes": len(text) - 1})) as dedup:
        refused = dedup.add(text, id="long")
    assert refused.reason == "too_large" and "max_content_bytes" in (refused.detail or ""), refused
    with Deduplicator(DetectorConfig.from_mapping({"max_content_bytes": len(text)})) as dedup:
        assert dedup.add(text, id="long").status == "unique"


def test_a_store_another_python_process_holds_names_a_deduplicator_there(tmp_path: Path) -> None:
    """A store a Deduplicator of another kernel held said "stop the other `streamdedup` (dedup or worker)",
    which a notebook user who runs neither could not find; it names a Deduplicator in another process too."""
    state = tmp_path / "store"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(state)], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        with pytest.raises(StoreLocked) as refused:
            Deduplicator(state=state)
        line = str(refused.value)
        assert "in use by another process" in line and "a Deduplicator open in another Python process" in line
        assert "\n" not in line
    finally:
        holder.kill()
        holder.wait()


def test_ctrl_c_while_a_kept_store_opens_leaves_no_lock_in_the_process(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while a big store's index loads left its RocksDB open in the half-made store, which the
    traceback a notebook keeps (`sys.last_traceback`) held: running the cell again was `StoreLocked`,
    "close that one first", with no object to close. The open now closes what it opened before raising."""
    from streamdedup.store import signature_store

    state = tmp_path / "store"
    with Deduplicator(state=state) as dedup:
        first = dedup.add(TEXTS[0], id="first")

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt  # as Ctrl-C lands while the index files load

    with monkeypatch.context() as patch:
        patch.setattr(signature_store, "load_index_files", interrupted)
        with pytest.raises(KeyboardInterrupt) as stopped:
            Deduplicator(state=state)
    kept = stopped.value  # held, with its traceback's frames, as IPython keeps the last error
    assert kept.__traceback__ is not None
    with Deduplicator(state=state) as dedup:  # the cell run again
        assert dedup.query(TEXTS[0], id="again").duplicate_of == first.page_id


def test_ctrl_c_while_a_kept_store_closes_waits_for_the_close(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while `close` wrote a big store's index files stopped it before RocksDB closed: the
    Deduplicator said closed (a second `close` did nothing) and the store stayed locked in the process,
    `StoreLocked` until the kernel restarted. The close now finishes, then the Ctrl-C is raised."""
    import signal

    from streamdedup.store import signature_store

    state = tmp_path / "store"
    dedup = Deduplicator(state=state)
    first = dedup.add(TEXTS[0], id="first")
    real = signature_store.save_index_files

    def save_after_ctrl_c(*args: object, **kwargs: object) -> None:
        signal.raise_signal(signal.SIGINT)  # as Ctrl-C lands while the index files are written
        real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(signature_store, "save_index_files", save_after_ctrl_c)
    with pytest.raises(KeyboardInterrupt) as stopped:
        dedup.close()
    monkeypatch.undo()
    kept = stopped.value  # held, as IPython keeps the last error
    assert kept.__traceback__ is not None and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    with Deduplicator(state=state) as again:
        assert again.query(TEXTS[0], id="again").duplicate_of == first.page_id


def test_a_rejected_row_names_its_own_id() -> None:
    """A rejected row that has an id carried `page_id` None: a notebook joining results to its rows by
    id lost the row's rejection. Its own id is the rejection's `page_id` now, as a str like a verdict's;
    a row without one keeps None (an id made for it names nothing the user has)."""
    with Deduplicator() as dedup:
        results = dedup.add_many([{"id": 7, "text": TEXTS[0]}, {"id": 8, "text": ""}, {"id": "x9", "text": None},
                                  {"text": ""}, {"id": 7, "text": TEXTS[1]}])
    assert [(r.page_id, r.status) for r in results] == [
        ("7", "unique"), ("8", "rejected"), ("x9", "rejected"), (None, "rejected"), ("7", "rejected")], results
    assert [r.reason for r in results[1:]] == ["empty_content", "missing_content", "empty_content", "duplicate_id"]


def test_a_store_folder_given_first_names_state(tmp_path: Path) -> None:
    """`Deduplicator("folder")` (the store's folder given first, as `Deduplicator(state="folder")` reads
    in the docs) said only that config is a DetectorConfig: the line names `state=` as the fix."""
    for folder in (str(tmp_path / "store"), tmp_path / "store"):
        with pytest.raises(TypeError, match=r"Deduplicator\(state=") as raised:
            Deduplicator(folder)  # type: ignore[arg-type]
        assert "\n" not in str(raised.value)
    assert not (tmp_path / "store").exists()


def test_an_unknown_extractor_is_refused_by_the_config_not_page_by_page() -> None:
    """`DetectorConfig.from_mapping({"extractor": "fastt"})` was taken; each HTML page then came back a
    `processing_error` (a traceback logged for each). The config refuses it, naming the extractors."""
    from streamdedup.clean.pipeline import CleaningConfig

    with pytest.raises(ValueError, match=r"^extractor is one of trafilatura, fast, resiliparse, none; got 'fastt'$"):
        DetectorConfig.from_mapping({"extractor": "fastt"})
    with pytest.raises(ValueError, match="extractor is one of"):
        CleaningConfig(extractor="Fast")
    assert DetectorConfig.from_mapping({"extractor": "none"}).cleaning.extractor == "none"
