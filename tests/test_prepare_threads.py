"""Pages prepared side by side (`Fingerprinter.prepare_many`): the same results as one by one, every
extractor still bounded in a thread, and no extraction process left behind by a thread."""

import gc
import os
import threading
import time
from dataclasses import replace

import orjson
import pytest
from conftest import make_article, wrap_in_template

from streamdedup.clean.extract import extract_texts
from streamdedup.clean.isolated import helper
from streamdedup.config import DetectorConfig
from streamdedup.detector import Detector
from streamdedup.fingerprinter import prepare_threads
from streamdedup.record.readers import RawRecord
from streamdedup.record.rejection import Reason, Rejected


def _records() -> list[RawRecord]:
    pages = [wrap_in_template(make_article(seed % 9, paragraphs=5, sentences=4), f"s{seed % 4}.example")
             for seed in range(30)]
    raws = [RawRecord(f"t:{i}", data=orjson.dumps({"url": f"https://s{i % 4}.example/{i}", "content": html}))
            for i, html in enumerate(pages)]
    raws.insert(7, RawRecord("t:bad", data=b"{not json"))
    raws.insert(12, RawRecord("t:deep", data=orjson.dumps({"url": "https://d.example/", "content": "<div>" * 5000})))
    return raws


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("extractor", ["fast", "trafilatura"])
def test_threads_give_the_verdicts_of_one_by_one(tmp_path, extractor):
    raws = _records()
    config = DetectorConfig()
    config = config.with_overrides(cleaning=replace(config.cleaning, extractor=extractor))
    outputs = []
    for threads in (1, 3):
        with Detector(replace(config, prepare_threads=threads), tmp_path / f"t{threads}") as detector:
            assert detector.fingerprinter.threads == threads
            outputs.append([outcome.output() for outcome in detector.run(raws)])
    assert outputs[0] == outputs[1]
    statuses = [output["dedup"]["status"] for output in outputs[0]]
    assert statuses.count("rejected") == 2 and statuses.count("duplicate") >= 10


def test_trafilatura_in_a_thread_is_bounded_by_the_helper():
    """SIGALRM reaches only the main thread: a slow page in a pool thread ran unbounded (17 s here)."""
    heavy = "<html><body>" + "<div>" * 100 + "<span>word</span> " * 100_000 + "</div>" * 100 + "</body></html>"
    caught: list[BaseException] = []

    def run() -> None:
        try:
            extract_texts(heavy, "trafilatura", max_seconds=2.0)
        except BaseException as err:  # noqa: BLE001 - handed to the test's thread
            caught.append(err)
        finally:
            helper().stop()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=60)
    assert not thread.is_alive()
    assert len(caught) == 1 and isinstance(caught[0], Rejected) and caught[0].reason is Reason.TIMEOUT


def test_a_threads_helper_ends_with_the_thread():
    """Popen's own __del__ kept a finished thread's helper process (and the pipe it reads) alive for
    as long as the parent lived: 40 of them in one test run."""
    pids: list[int] = []

    def run() -> None:
        extract_texts(wrap_in_template(make_article(1), "t.example"), "fast", max_seconds=20)
        process = helper()._process
        assert process is not None
        pids.append(process.pid)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    del thread
    gc.collect()
    deadline = time.monotonic() + 10
    while _alive(pids[0]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pids[0])


def test_the_default_is_one_thread_per_cpu():
    assert prepare_threads(0) == min(8, len(os.sched_getaffinity(0)))
    assert prepare_threads(3) == 3
    with pytest.raises(ValueError, match="prepare_threads"):
        DetectorConfig(prepare_threads=-1)


def test_pages_without_markup_are_prepared_in_the_calling_thread(monkeypatch):
    """Plain text holds the GIL from end to end: a thread of its own only adds hand-offs (~15 % more
    CPU on 6,000 text pages). Pages that may be HTML still go to the pool."""
    from streamdedup.fingerprinter import Fingerprinter

    where: dict[str, str] = {}
    fingerprint = Fingerprinter._fingerprint

    def recording(self, raw, page, record, layout=None):
        where[raw.origin] = threading.current_thread().name
        return fingerprint(self, raw, page, record, layout)

    monkeypatch.setattr(Fingerprinter, "_fingerprint", recording)
    fingerprinter = Fingerprinter(replace(DetectorConfig(), prepare_threads=2))
    text = [RawRecord(f"text:{i}", data=orjson.dumps({"url": f"https://t.example/{i}", "content": f"Plain text page {i} with words enough to be judged on its own."}))
            for i in range(6)]
    html = [raw for raw in _records() if raw.origin not in ("t:bad", "t:deep")][:6]
    results = fingerprinter.prepare_many([*text, *html])
    assert [result.origin for result in results] == [raw.origin for raw in [*text, *html]]
    main = threading.current_thread().name
    assert all(where[raw.origin] == main for raw in text)
    assert all(where[raw.origin].startswith("prepare2") for raw in html)
