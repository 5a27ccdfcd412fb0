"""The Python API (streamdedup.api): the examples of docs/api.md and README.md run as written, a
query files nothing, a kept store is found again, a temporary one is removed."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from streamdedup import Deduplicator, Rejection, Verdict

ROOT = Path(__file__).resolve().parents[1]
TEXT = ("The council voted on Monday to keep the library open on Sundays through the winter, "
        "after three hundred residents signed a letter asking for longer opening hours.")


def python_blocks(path: Path) -> str:
    """The ```python blocks of a guide, in order, as one script; not those that read a broker (the
    news-feed consumer: tests/runtime/test_cluster_view.py runs its reader on one)."""
    blocks = re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)
    return "\n".join(b for b in blocks if "ClusterReader(" not in b)


def test_the_guides_examples_run(tmp_path: Path) -> None:
    for guide in (ROOT / "docs" / "api.md", ROOT / "README.md"):
        script = python_blocks(guide)
        assert "Deduplicator" in script, guide
        exec(compile(script, str(guide), "exec"), {"__name__": "guide"})  # the guide's own code


@pytest.mark.parametrize("guide", ["docs/api.md", "README.md"])
def test_each_example_runs_alone(guide: str) -> None:
    """A reader copies one block into a fresh notebook: docs/api.md's `stories()` example used
    `story` from the first block, a NameError on its own (the test above runs the blocks as one)."""
    blocks = [b for b in re.findall(r"```python\n(.*?)```", (ROOT / guide).read_text(), flags=re.S)
              if "ClusterReader(" not in b]
    assert blocks, guide
    for number, block in enumerate(blocks, 1):
        exec(compile(block, f"{guide} example {number}", "exec"), {"__name__": "guide"})


def test_the_guides_examples_type_check(tmp_path: Path, pytestconfig: pytest.Config) -> None:
    """A notebook user who runs mypy on the guides' code: docs/api.md's `dedup_files` example indexed
    `run.summary`, which is None for a rerun with nothing to do (mypy: "dict[str, Any] | None" is
    not indexable). Every python block of both guides, the news-feed reader's too, type-checks."""
    script = tmp_path / "guides.py"
    script.write_text("\n".join(re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "api.md").read_text()
                                           + (ROOT / "README.md").read_text(), flags=re.S)))
    cache = pytestconfig.cache.mkdir("mypy-snippet")  # shared with test_api_notebook's: a cold check is ~7 s CPU
    checked = subprocess.run([sys.executable, "-m", "mypy", "--follow-imports=silent", "--cache-dir", str(cache),
                              str(script)], cwd=ROOT, capture_output=True, text=True,
                             env={**os.environ, "MYPYPATH": str(ROOT)}, timeout=300)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_query_files_nothing_and_add_does() -> None:
    with Deduplicator() as dedup:
        assert dedup.query(TEXT, id="probe").status == "unique"
        first = dedup.add(TEXT, id="first")
        assert isinstance(first, Verdict) and first.status == "unique"  # the query left no page behind
        again = dedup.query_many([TEXT])
        assert again[0].status == "duplicate" and again[0].duplicate_of == "first"
        rejected = dedup.add("   ")
        assert isinstance(rejected, Rejection) and rejected.reason == "empty_content"
        # a list of results is read by one field, whatever each one is
        assert [r.status for r in dedup.add_many(["", TEXT])] == ["rejected", "duplicate"]


def test_a_kept_store_is_found_again_and_a_temporary_one_removed(tmp_path: Path) -> None:
    with Deduplicator(state=tmp_path / "store") as dedup:
        dedup.add(TEXT, id="kept")
    with Deduplicator(state=tmp_path / "store") as dedup:
        assert dedup.add(TEXT, id="later").duplicate_of == "kept"
    temporary = Deduplicator()
    folder = temporary.state
    assert folder.is_dir()
    temporary.close()
    assert not folder.exists()


def test_plain_text_is_taken_as_it_is() -> None:
    """Markup-like words of a plain text are words, not tags an extractor drops; the text is its own site."""
    text = "Compare <x> with <y> where x and y are the two readings of the gauge on the north quay"
    with Deduplicator() as dedup:
        record = dedup.record(text, id="t", html=False)
        assert record["url"] == "text:t" and record["content_type"] == "text/plain" and "content" not in record
        assert dedup.add(text, id="t", html=False).status == "unique"
        changed = dedup.add(text.replace("<x>", "<a>").replace("<y>", "<b>"), id="u", html=False)
        assert changed.status == "unique" or changed.similarity < 1.0  # type: ignore[operator]


def test_import_streamdedup_loads_no_engine() -> None:
    code = "import sys, streamdedup; print(sorted(m for m in ('numpy', 'rocksdict', 'streamdedup.detector') if m in sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert loaded.stdout.strip() == "[]"


def test_an_undated_url_added_again_is_judged(tmp_path: Path) -> None:
    """Two fetches of one url without a fetch time are two pages (not a `duplicate_id`): unchanged,
    the second is the first's duplicate; changed, it is judged like any page. Also once the
    store is reopened, and a given id repeated stays a `duplicate_id`."""
    page = f"<html><body><article><p>{TEXT} {TEXT}</p></article></body></html>"
    changed = page.replace("Sundays", "Saturdays and public holidays, from the first of the month,")
    with Deduplicator(state=tmp_path / "state") as dedup:
        first = dedup.add(page, url="https://news.example/library")
        again = dedup.add(page, url="https://news.example/library")
        assert isinstance(first, Verdict) and isinstance(again, Verdict), again
        assert again.status == "duplicate" and again.duplicate_of == first.page_id
        assert isinstance(dedup.add(changed, url="https://news.example/library"), Verdict)
        assert isinstance(dedup.add(page, id="given"), Verdict)
        repeated = dedup.add(page, id="given")
        assert isinstance(repeated, Rejection) and repeated.reason == "duplicate_id"
    with Deduplicator(state=tmp_path / "state") as dedup:
        later = dedup.add(page, url="https://news.example/library")
        assert isinstance(later, Verdict) and later.status == "duplicate", later


def test_sessions_and_dedup_jobs_of_one_store_number_their_undated_pages_from_one_count(tmp_path: Path) -> None:
    """A Deduplicator takes the store's next number, as a `streamdedup dedup` job does
    (store/sessions.py): an undated fetch is judged in any of them, and a new store gives the ids
    it gave before (a random token each session did not)."""
    from streamdedup.api.file_mode import dedup_files

    page, url = f"<html><body><article><p>{TEXT} {TEXT}</p></article></body></html>", "https://news.example/library"
    fresh = []
    for _ in range(2):
        with Deduplicator() as dedup:
            fresh.append(dedup.add(page, url=url))
    assert fresh[0] == fresh[1]
    state, crawl = tmp_path / "state", tmp_path / "crawl.jsonl"
    with Deduplicator(state=state) as dedup:
        first = dedup.add(page, url=url)
    crawl.write_text(json.dumps({"url": url, "content": page}) + "\n")
    dedup_files(crawl, tmp_path / "out", state=state)
    (filed,) = [json.loads(line)["dedup"] for line in (tmp_path / "out" / "duplicates.jsonl").read_text().splitlines()]
    assert filed["duplicate_of"] == first.page_id
    with Deduplicator(state=state) as dedup:
        later = dedup.add(page, url=url)
        assert isinstance(later, Verdict) and later.duplicate_of == first.page_id, later
    assert len({first.page_id, filed["id"], later.page_id}) == 3


def test_a_single_item_given_as_the_list_is_refused() -> None:
    """add_many(text) iterated the text: each letter judged as a page (88 rejections), no error."""
    with Deduplicator() as dedup:
        for method in (dedup.add_many, dedup.query_many):
            for single in (TEXT, {"url": "https://a.example/1", "content": TEXT}):
                try:
                    method(single)  # type: ignore[arg-type]
                except TypeError as err:
                    assert "pass it in a list" in str(err) and "\n" not in str(err)
                else:
                    raise AssertionError(f"{method.__name__} took a single {type(single).__name__}")
        assert dedup.add(TEXT, id="after").status == "unique"  # no item of the refused calls was filed


def test_a_closed_deduplicator_says_so() -> None:
    """A call after close raised AttributeError: 'NoneType' object has no attribute 'get'."""
    dedup = Deduplicator()
    dedup.close()
    for call in (lambda: dedup.add(TEXT), lambda: dedup.query(TEXT), lambda: dedup.add_many([TEXT])):
        try:
            call()
        except ValueError as err:
            assert "closed" in str(err)
        else:
            raise AssertionError("a closed Deduplicator judged a page")


def test_dedup_files_takes_a_single_path(tmp_path: Path) -> None:
    """dedup_files("crawl.jsonl", out) read the name's letters: "input c does not exist"."""
    from streamdedup import dedup_files

    crawl = tmp_path / "crawl.jsonl"
    crawl.write_text(json.dumps({"url": "https://a.example/1", "content": TEXT}) + "\n")
    assert dedup_files(str(crawl), tmp_path / "out").summary["unique"] == 1  # type: ignore[index]
    assert dedup_files(crawl, tmp_path / "out2").summary["unique"] == 1  # type: ignore[index]


def test_a_repeated_id_s_rejection_names_the_id() -> None:
    """`Rejection.page_id` holds a repeated id, as `duplicate_id`'s output does; the API dropped it (None)."""
    with Deduplicator() as dedup:
        dedup.add(TEXT, id="x")
        again = dedup.add(TEXT + " Updated.", id="x")
        assert isinstance(again, Rejection) and again.reason == "duplicate_id" and again.page_id == "x"


def test_a_refused_rerun_says_what_differs_from_the_finished_run(tmp_path: Path) -> None:
    """The same file again under another policy, or after it changed, was told to "give other
    inputs a new --out"; the refusal now names what makes it another run."""
    import pytest

    from streamdedup import DetectorConfig, dedup_files
    from streamdedup.outputs.job import JobRefused

    crawl = tmp_path / "crawl.jsonl"
    crawl.write_text(json.dumps({"url": "https://a.example/1", "content": TEXT}) + "\n")
    dedup_files([crawl], tmp_path / "out")
    with pytest.raises(JobRefused, match=r"with policy 'exact\|minhash\|simhash\+a12'; this run's is 'exact'"):
        dedup_files([crawl], tmp_path / "out", DetectorConfig(policy="exact"))
    crawl.write_text(json.dumps({"url": "https://a.example/1", "content": TEXT + " Changed."}) + "\n")
    with pytest.raises(JobRefused, match="the inputs changed since"):
        dedup_files([crawl], tmp_path / "out")
    other = tmp_path / "other.jsonl"
    other.write_text(crawl.read_text())
    with pytest.raises(JobRefused, match="these are other inputs"):
        dedup_files([other], tmp_path / "out")


def test_a_text_cut_at_max_text_chars_is_the_duplicate_of_a_whole_copy_only() -> None:
    """Two texts sharing their first `max_text_chars` characters, each with its own text past them:
    the second was an `exact` duplicate of the first (similarity 1.0, new_share 0.0) though a fifth
    of it was never compared. Now it is unique, related to the first, and says its text was cut; a
    later page inside the first's kept text is still its (safe) duplicate, and so is a copy of the
    second's whole text (its exact signature is the whole text's hash; it was unique, related)."""
    import random
    from dataclasses import replace

    from streamdedup.config import DetectorConfig

    vocabulary = ["".join(r.choice("abcdefghij") for _ in range(6)) for r in map(random.Random, range(2000))]

    def text(chars: int, seed: int) -> str:
        rng, paragraphs = random.Random(seed), []
        while sum(map(len, paragraphs)) < chars:
            paragraphs.append(" ".join(rng.choice(vocabulary) for _ in range(60)) + ".")
        return "\n\n".join(paragraphs)

    config = DetectorConfig()
    config = replace(config, cleaning=replace(config.cleaning, max_text_chars=10_000))
    shared = text(10_500, 1)
    with Deduplicator(config) as dedup:
        first = dedup.add(shared + "\n\n" + text(3000, 2), id="first")
        second = dedup.add(shared + "\n\n" + text(3000, 3), id="second")
        inside = dedup.add(shared[:9000], id="inside")
        copy = dedup.add(shared + "\n\n" + text(3000, 3), id="copy")  # the second's whole text
    assert isinstance(second, Verdict)
    assert (second.status, second.duplicate_of, second.related_to) == ("unique", None, ("first",)) and second.text_cut
    assert isinstance(first, Verdict) and first.status == "unique" and first.as_dict()["text_cut"] is True
    assert isinstance(inside, Verdict) and (inside.status, inside.duplicate_of) == ("duplicate", "first")
    assert "text_cut" not in inside.as_dict()
    assert isinstance(copy, Verdict) and (copy.status, copy.duplicate_of, copy.method) == ("duplicate", "second", "exact")
    assert copy.text_cut and copy.cluster_id == second.cluster_id  # a whole copy (before: unique, related)


def test_parameters_of_a_method_not_enabled_are_refused() -> None:
    """`method_params={"minhsh": ...}` ran with minhash's default threshold, saying nothing."""
    import pytest

    from streamdedup.config import DetectorConfig

    with pytest.raises(ValueError, match=r"parameters for minhsh \(no such method\)"):
        DetectorConfig(method_params={"minhsh": {"threshold": 0.95}})
    with pytest.raises(ValueError, match=r"parameters for simhash \(not enabled\)"):
        DetectorConfig(methods=("exact", "minhash"), policy="exact|minhash", method_params={"simhash": {}})


def test_a_closed_deduplicator_names_the_method_called(tmp_path: Path) -> None:
    """`add` and `query` on a closed Deduplicator said "add_many needs an open one"."""
    import pytest

    dedup = Deduplicator()
    dedup.close()
    for method in ("add", "query"):
        with pytest.raises(ValueError, match=f"this Deduplicator is closed: {method} needs an open one"):
            getattr(dedup, method)(TEXT)


def test_a_store_open_twice_in_one_process_is_one_sentence(tmp_path: Path) -> None:
    """It said "in use by another process", then RocksDB's lock text (thread ids, No locks available)."""
    import pytest

    from streamdedup.store.errors import StoreLocked

    with Deduplicator(state=tmp_path / "store"), pytest.raises(StoreLocked) as refused:
        Deduplicator(state=tmp_path / "store")
    assert str(refused.value) == (f"the store at {tmp_path / 'store'} is open already in this process (another "
                                  "Deduplicator or detector on it): close that one first, or give this one another "
                                  "state directory")


def test_numpy_numbers_are_taken_as_numbers() -> None:
    """DetectorConfig(batch_size=np.int64(8)) raised TypeError once its fields' kinds were checked: a
    whole number is any `numbers.Integral` and a share any `numbers.Real` (kept as Python's), not a bool."""
    import numpy as np
    import pytest

    from streamdedup.config import DetectorConfig

    config = DetectorConfig(batch_size=np.int64(8), max_new_pairs=np.int32(3),  # type: ignore[arg-type]
                            max_new_share=np.float32(0.25), prepare_threads=np.uint8(1))  # type: ignore[arg-type]
    assert (config.batch_size, config.max_new_pairs, config.max_new_share, config.prepare_threads) == (8, 3, 0.25, 1)
    assert [type(v) for v in (config.batch_size, config.max_new_share)] == [int, float]
    for given in (dict(batch_size=np.bool_(True)), dict(max_new_share=np.bool_(False)), dict(batch_size=np.float64(8))):
        with pytest.raises(TypeError, match="DetectorConfig"):
            DetectorConfig(**given)  # type: ignore[arg-type]


def test_arguments_of_another_kind_are_named_with_the_kind_wanted() -> None:
    """DetectorConfig(retention="30d") ended in AttributeError total_seconds, max_new_share="0.2" in
    a TypeError on '<=', Deduplicator({"policy": ...}) in an AttributeError; add() of a page record
    did not say where records go."""
    import pytest

    from streamdedup.config import DetectorConfig

    for given, said in ((dict(retention="30d"), "retention is a timedelta or None"),
                        (dict(max_new_share="0.2"), "max_new_share is a share of a page's text, e.g. 0.1"),
                        (dict(methods="exact,minhash"), "methods is a tuple of method names"),
                        (dict(batch_size=True), "batch_size is a whole number of pages")):
        with pytest.raises(TypeError, match=f"DetectorConfig {said}"):
            DetectorConfig(**given)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="config is a DetectorConfig.*got dict"):
        Deduplicator({"policy": "exact"})  # type: ignore[arg-type]
    with Deduplicator() as dedup, pytest.raises(TypeError, match=r"got dict; .* add_many\(\[record\]\)"):
        dedup.add({"url": "https://a.example/1", "content": TEXT})  # type: ignore[arg-type]


def test_a_deduplicator_that_only_asks_writes_no_session_number(tmp_path: Path) -> None:
    """Opening a store took and committed the next session number at once, so a Deduplicator that
    only queried still wrote into the store; now the number is taken at the first `add`."""
    from streamdedup.store.sessions import last_session

    state = tmp_path / "state"
    with Deduplicator(state=state) as dedup:
        dedup.add(TEXT, id="filed")
    for _ in range(2):
        with Deduplicator(state=state) as dedup:
            assert dedup.query(TEXT).status == "duplicate"
            assert dedup.query_many([TEXT, TEXT])[1].status == "duplicate"
    with Deduplicator(state=state) as dedup:
        assert last_session(dedup._detector.store) == 1
        dedup.add(TEXT + " More.", id="second")
        assert last_session(dedup._detector.store) == 2


def test_one_deduplicator_shared_by_threads_files_every_page() -> None:
    # threads in one batch at once lost pages for good (200 adds `unique`, 45-131 found again)
    from concurrent.futures import ThreadPoolExecutor

    from streamdedup.testing import make_article

    texts = ["\n\n".join(make_article(i, paragraphs=3)) for i in range(48)]
    with Deduplicator() as dedup, ThreadPoolExecutor(8) as pool:
        added = list(pool.map(lambda i: dedup.add(texts[i], id=f"p{i}"), range(len(texts))))
        assert {verdict.status for verdict in added} == {"unique"}
        again = dedup.query_many(texts)
        assert [getattr(verdict, "duplicate_of", None) for verdict in again] == [f"p{i}" for i in range(len(texts))]


def test_a_forked_child_is_refused_and_leaves_its_parent_s_store() -> None:
    # a child's adds said `unique` and reached no store (multiprocessing.Pool with fork)
    import multiprocessing
    import pickle

    context = multiprocessing.get_context("fork")
    with Deduplicator() as dedup:
        dedup.add(TEXT, id="parent")
        answers, sent = context.Pipe(duplex=False)

        def child() -> None:
            try:
                sent.send(dedup.add(TEXT + " Again.", id="child").status)
            except RuntimeError as err:
                sent.send(str(err))
            dedup.close()  # the parent's store: not closed nor removed by the child

        process = context.Process(target=child)
        process.start()
        process.join(60)
        answer = answers.recv()
        assert "open a Deduplicator in each process" in answer and "\n" not in answer, answer
        assert dedup.state.exists()
        assert dedup.query(TEXT).duplicate_of == "parent"
        try:
            pickle.dumps(dedup)
        except TypeError as err:
            assert "open a Deduplicator in each process" in str(err)
        else:
            raise AssertionError("a Deduplicator was pickled")


def test_bytes_content_is_decoded_as_a_crawl_file_s_page_bytes() -> None:
    # bytes were judged on their repr ("b'<html>...'"): the same article as str and as bytes, two uniques
    russian = ("Совет гавани собрался во вторник и утвердил новое расписание паромов на летний сезон после долгих "
               "споров о расходах и нуждах жителей острова, сообщили в управлении порта.")
    html = f"<html><body><article><p>{russian}</p></article></body></html>"
    with Deduplicator() as dedup:
        first, utf8, cp1251, bad_url = dedup.add_many([
            {"id": "str", "url": "https://a.example/1", "content": html},
            {"id": "utf8", "url": "https://b.example/1", "content": html.encode()},
            {"id": "cp1251", "url": "https://c.example/1", "content": html.encode("cp1251"),
             "content_type": "text/html; charset=windows-1251"},
            {"id": "bytes-url", "url": b"https://d.example/1", "content": html}])
        assert first.status == "unique"
        assert [getattr(v, "duplicate_of", None) for v in (utf8, cp1251)] == ["str", "str"]
        assert isinstance(bad_url, Rejection) and bad_url.reason == "invalid_field" and "url is bytes" in bad_url.detail


def test_a_lone_surrogate_is_its_item_s_rejection_not_the_batch_s_error() -> None:
    # orjson's bare TypeError ("str is not valid UTF-8: surrogates not allowed") failed the whole batch
    with Deduplicator() as dedup:
        good, bad = dedup.add_many([TEXT, {"url": "https://a.example/", "content": TEXT + " \udcff"}])
        assert isinstance(good, Verdict) and good.status == "unique"
        assert isinstance(bad, Rejection) and bad.reason == "invalid_field"
        assert "content holds a lone surrogate (U+DCFF" in bad.detail and bad.origin == "item 2"


def test_a_notebook_s_small_things(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A `py.typed` marker, packaged; `state="~/x"` in the home folder (not a folder named "~"); a
    repr saying where the store is and whether it is open; a negative retention refused (every page
    expired at once: an exact copy was `unique`)."""
    from datetime import timedelta

    from streamdedup.config import DetectorConfig

    assert (ROOT / "streamdedup" / "py.typed").is_file()
    assert '"py.typed"' in (ROOT / "pyproject.toml").read_text()
    monkeypatch.setenv("HOME", str(tmp_path))
    with Deduplicator(state="~/store") as dedup:
        assert dedup.state == tmp_path / "store" and dedup.state.is_dir()
        assert repr(dedup) == f"<Deduplicator kept state={str(tmp_path / 'store')!r} open>"
    assert repr(dedup).endswith(" closed>")
    with pytest.raises(ValueError, match="retention is a span of time, not negative"):
        DetectorConfig(retention=timedelta(days=-1))
