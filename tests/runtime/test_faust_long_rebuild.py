"""The Faust app through a long store rebuild (real broker): it keeps its partitions, judges its other
partitions meanwhile, and stops at once if asked to."""

from __future__ import annotations

import os
import random
import re
import time

import orjson
import pytest
from conftest import page

from runtime.test_faust_app import app_running, article_pages, committed_offset, outcomes, run_app_until
from streamdedup.runtime.topics import ensure_topics
from streamdedup.testing import make_words, run_records, wrap_in_template

# the app's max poll interval in the run that rebuilds (STREAMDEDUP_MAX_POLL_INTERVAL_S): shorter than the
# rebuild, longer than judging the records that waited for it (nothing is fetched meanwhile either: at 2 s,
# the 40 that waited took longer once at load 9, and the app left the group after its rebuild)
POLL_INTERVAL_S = 3
# records waiting for the agent (STREAMDEDUP_BATCH_SIZE): fewer than the records after the rebuild; also the
# rebuild's batch: one record a batch keeps a rebuild of 1,600 pages well past the interval + 1 s on a quiet
# machine too (1,600 at 8 a batch took 3.0 s once on CI's Tansu pass: too short to tell; one a batch 25.3 s;
# 1,000 one a batch 9.1 s on Tansu at load 3; 600 of `quick_stories`' shorter pages 3.1 s once)
BUFFER = 1
REBUILT = 600  # partition 0's pages judged elsewhere: rebuilt one record a batch, 7-15 s here (40-85 a second)


def quick_stories(count: int) -> list[list[str]]:
    """`count` stories of four paragraphs, words of one vocabulary (`make_article` makes one a story: 8 ms each)."""
    rng = random.Random(17)
    vocabulary = make_words(rng, 3000)
    return [[" ".join(" ".join(rng.choices(vocabulary, k=rng.randint(8, 24))).capitalize() + "." for _ in range(5))
             for _ in range(4)] for _ in range(count)]


def test_a_rebuild_longer_than_the_poll_interval_keeps_the_partitions_and_judges_every_page_once(settings, tmp_path):
    """1,600 pages were judged elsewhere (the group committed past them); 12 pages follow (10 copies), more than
    the agent's buffer holds. Started with a new state folder and a 3 s poll interval, the app rebuilds the
    1,600 for longer than that, keeps its partition (no revocation, no LeaveGroup), and every one of the 12
    gets one verdict, file mode's. In 0.17.0: aiokafka left the group once the interval ran out (Faust
    fetched nothing while the agent's buffer was full), and the app hung there (faust-streaming#138): none
    of the 12 came out. Since 0.19.0 the rebuilding partition is paused and Faust goes on fetching, so this
    holds without `poll_clock_restarter` too: the test guards the outcome, whichever keeps it. (The 1,600
    are not judged by the app first: that only made the test a minute longer; the rebuild reads the topic up to the group's offset either way.)"""
    originals = article_pages("orig", list(range(5000, 6600)))
    later = article_pages("copy", list(range(5000, 5010))) + article_pages("new", list(range(7000, 7002)))
    ensure_topics(settings)
    produce(settings, 0, originals + later)
    commit(settings, {0: len(originals)})
    small = {"STREAMDEDUP_MAX_POLL_INTERVAL_S": str(POLL_INTERVAL_S), "STREAMDEDUP_BATCH_SIZE": str(BUFFER)}
    with app_running(settings, tmp_path, "faust.log", "--verbose", env=small) as log:
        got = outcomes(settings, len(later), timeout_s=180)
    text = log.read_text()
    assert len(got) == len(later), text[-3000:]  # and none twice (`outcomes`)
    last = len(originals) - 1
    rebuilt = re.search(rf"partition 0: store rebuilt from offsets 0\.\.{last} \({len(originals)} records\) in ([0-9.]+) s",
                        text)
    assert rebuilt is not None, text[-3000:]
    # aiokafka's heartbeat task wakes when the interval runs out: before, revoked 2.9 s into the rebuild
    assert float(rebuilt.group(1)) > POLL_INTERVAL_S + 1, rebuilt.group(0)
    after = text[text.index(f"rebuilding it from offsets 0..{last}"):]
    assert not re.search(r"LeaveGroup|Revoking|revoked", after, re.IGNORECASE), after[-3000:]
    verdicts = {url.decode(): orjson.loads(m.value())["dedup"] for url, (_, m) in got.items()}
    expected = {o.record["url"]: o.dedup for o in run_records(originals + later, tmp_path / "file-mode")}
    assert {r["url"]: (verdicts[r["url"]]["status"], verdicts[r["url"]].get("duplicate_of")) for r in later} == {
        r["url"]: (expected[r["url"]]["status"], expected[r["url"]].get("duplicate_of")) for r in later}
    assert sum(verdicts[r["url"]]["status"] == "duplicate" for r in later) == 10
    assert os.path.isdir(tmp_path / "fs")
    print(rebuilt.group(0))


def produce(settings, partition: int, records: list[dict]) -> None:
    """The records on one partition of the pages topic, in order."""
    from confluent_kafka import Producer

    producer, failed = Producer(settings.client(**{"enable.idempotence": True, "linger.ms": 10})), []
    for record in records:
        producer.produce(settings.topics.pages, orjson.dumps(record), partition=partition,
                         on_delivery=lambda err, _: failed.append(err) if err is not None else None)
        producer.poll(0)
    assert producer.flush(60) == 0 and failed == []


def commit(settings, offsets: dict[int, int]) -> None:
    """The group's committed offsets of the pages topic's partitions, as another instance leaves them."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(settings.client(**{"group.id": settings.group_id, "enable.auto.commit": False}))
    try:
        tps = [TopicPartition(settings.topics.pages, p, o) for p, o in offsets.items()]
        consumer.commit(offsets=tps, asynchronous=False)
        assert {tp.partition: tp.offset for tp in consumer.committed(tps, timeout=10)} == offsets
    finally:
        consumer.close()


def wait_for(path, text: str, timeout_s: float) -> str:
    """The log once it holds `text`."""
    deadline = time.monotonic() + timeout_s
    while text not in (log := path.read_text()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert text in log, log[-3000:]
    return log


def test_the_other_partitions_pages_come_out_while_one_partition_rebuilds(settings, tmp_path):
    """Partition 0's 600 pages and partition 1's 5 were judged on another instance (the group committed past
    them); partition 0 then gets 10 copies and 5 new pages. The app starts with a new state folder: partition 0's
    store is rebuilt, one record a batch (7-15 s here). Once that rebuild has started, partition 1 gets 5 copies
    and 5 new pages: they come out while it goes on (partition 1's own 5-record rebuild first), and none of
    partition 0's before it ends; then all 25 pages come out once each, with file mode's verdicts of their
    partition. Before: the app judged no partition while one rebuilt; partition 1's pages waited for its end."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(settings.client())
    admin.create_topics([NewTopic(settings.topics.pages, num_partitions=2)])[settings.topics.pages].result(30)
    ensure_topics(settings)  # the outputs, one partition each
    stories = quick_stories(REBUILT)
    zero = [page(f"https://zero.example/{i}", wrap_in_template(story, "zero")) for i, story in enumerate(stories)]
    zero_later = ([page(f"https://zcopy.example/{i}", wrap_in_template(story, "zcopy"))
                   for i, story in enumerate(stories[:10])] + article_pages("znew", list(range(9000, 9005))))
    one = article_pages("one", list(range(9100, 9105)))
    one_later = article_pages("ocopy", list(range(9100, 9105))) + article_pages("onew", list(range(9200, 9205)))
    produce(settings, 0, zero + zero_later)
    produce(settings, 1, one)
    commit(settings, {0: len(zero), 1: len(one)})
    slow = {"STREAMDEDUP_BATCH_SIZE": "1"}
    started = time.monotonic()
    with app_running(settings, tmp_path, "faust.log", "--verbose", env=slow) as log:
        wait_for(log, f"rebuilding it from offsets 0..{len(zero) - 1}", timeout_s=120)
        produce(settings, 1, one_later)
        sent = time.monotonic()
        during = outcomes_until(settings, {r["url"].encode() for r in one_later}, timeout_s=120)
        out_s = time.monotonic() - sent
        text = log.read_text()
        rebuilt = f"partition 0: store rebuilt from offsets 0..{len(zero) - 1} ({len(zero)} records)"
        assert rebuilt not in text, "partition 1's pages came out after partition 0's rebuild:\n" + "\n".join(
            line for line in text.splitlines() if re.search("partition [01]: ", line))
        assert not {r["url"].encode() for r in zero_later} & set(during), "partition 0 judged before its rebuild"
        wait_for(log, rebuilt, timeout_s=180)
        got = outcomes(settings, len(zero_later) + len(one_later), timeout_s=120)
    elapsed = time.monotonic() - started
    text = log.read_text()
    assert len(got) == len(zero_later) + len(one_later), text[-3000:]  # and none twice (`outcomes`)
    assert "partition 1: store rebuilt from offsets 0..4 (5 records)" in text, text[-3000:]
    verdicts = {url.decode(): orjson.loads(m.value())["dedup"] for url, (_, m) in got.items()}
    for own, later, name in ((zero, zero_later, "zero"), (one, one_later, "one")):
        expected = {o.record["url"]: o.dedup for o in run_records(own + later, tmp_path / f"file-{name}")}
        assert {r["url"]: (verdicts[r["url"]]["status"], verdicts[r["url"]].get("duplicate_of")) for r in later} == {
            r["url"]: (expected[r["url"]]["status"], expected[r["url"]].get("duplicate_of")) for r in later}
    copies = [r["url"] for r in zero_later[:10] + one_later[:5]]
    assert [verdicts[url]["status"] for url in copies] == ["duplicate"] * 15  # the rebuilt stores knew the originals
    print(f"{elapsed:.1f} s, partition 1's pages out {out_s:.1f} s after they were sent; {re.search(r'partition 0: store rebuilt.*', text).group(0)}")


def outcomes_until(settings, urls: set[bytes], timeout_s: float) -> list[bytes]:
    """The urls of the pages out on unique, duplicates and rejected, read until every one of `urls` is."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    t = settings.topics
    consumer = Consumer(settings.client(**{"group.id": "reader-during", "enable.auto.commit": False}))
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING) for topic in (t.unique, t.duplicates, t.rejected)])
    seen: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    try:
        while not urls <= set(seen) and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                seen.append(orjson.loads(message.value())["url"].encode())
    finally:
        consumer.close()
    assert urls <= set(seen), f"{len(urls - set(seen))} of {len(urls)} not out in {timeout_s:.0f} s"
    return seen


def test_an_app_stopped_during_a_rebuild_stops_at_once_and_the_next_start_goes_on_from_there(settings, tmp_path):
    """600 pages judged elsewhere, 10 copies of them after; the app, with a new state folder, is stopped 1 s into
    the store's rebuild (one record a batch, 7-15 s here): it stops without finishing it, says at which offset, and
    commits nothing of the copies. Started again, it rebuilds from that offset on, and each copy comes out once, a
    duplicate as in file mode. Before: the stop waited for the rest of the rebuild (Faust waits for every record
    taken and not acknowledged), here 6-14 s, for 140k pages ~15 min."""
    stories = quick_stories(REBUILT)
    originals = [page(f"https://stop.example/{i}", wrap_in_template(story, "stop")) for i, story in enumerate(stories)]
    copies = [page(f"https://scopy.example/{i}", wrap_in_template(story, "scopy")) for i, story in enumerate(stories[:10])]
    ensure_topics(settings)
    produce(settings, 0, originals + copies)
    commit(settings, {0: len(originals)})
    with app_running(settings, tmp_path, "faust-1.log", "--verbose", env={"STREAMDEDUP_BATCH_SIZE": "1"}) as log:
        wait_for(log, f"rebuilding it from offsets 0..{len(originals) - 1}", timeout_s=120)
        time.sleep(1)
        stopping = time.monotonic()
    stop_s, text = time.monotonic() - stopping, log.read_text()
    assert "store rebuilt from" not in text, text[-3000:]
    stopped = re.search(r"partition 0: the rebuild of its store stops with the app at offset (\d+)", text)
    assert stopped is not None, text[-3000:]
    assert committed_offset(settings, len(originals), timeout_s=5) == len(originals)
    after = int(stopped.group(1)) + 1
    got, text = run_app_until(settings, tmp_path, "faust-2.log", len(copies))
    assert len(got) == len(copies), text[-3000:]  # and none twice (`outcomes`)
    assert f"has read it up to offset {after}, but the app starts at offset {len(originals)}" in text, text[-3000:]
    assert f"rebuilding it from offsets {after}..{len(originals) - 1}" in text, text[-3000:]
    verdicts = {url.decode(): orjson.loads(m.value())["dedup"] for url, (_, m) in got.items()}
    expected = {o.record["url"]: o.dedup for o in run_records(originals + copies, tmp_path / "file-mode")}
    assert {r["url"]: (verdicts[r["url"]]["status"], verdicts[r["url"]].get("duplicate_of")) for r in copies} == {
        r["url"]: ("duplicate", expected[r["url"]].get("duplicate_of")) for r in copies}
    print(f"stopped {stop_s:.1f} s after it was asked, {after} of {len(originals)} records rebuilt")


def test_a_rebalance_during_a_rebuild_ends_it_at_once_and_each_waiting_page_comes_out_once(settings, tmp_path):
    """Partition 0's 2,000 pages were judged elsewhere, 10 copies of them and 5 new pages follow; partition 1 is
    empty (B's share). App A (new state folder) rebuilds partition 0's store one record a batch (12-25 s a 1,000
    here: Tansu takes ~5 s to tell A of B's join, and with 1,000 a fast run's rebuild ended first); 1 s in, app B
    joins the group. The rebalance does not wait for the rebuild: A's ends after its batch, its waiting records
    are let go uncommitted, and the group is assigned again at once; whichever app gets partition 0 rebuilds on
    (A from the offset it reached) and each of the 15 pages comes out once, the copies duplicates, then the
    group's offset passes them. Before: A's revocation waited for the whole rebuild and the group with it (no
    partition judged on either app meanwhile); after ~10 s the broker dropped A, whose 15 pages, judged during
    the revocation, were never committed and came out again from the partition's next owner."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(settings.client())
    admin.create_topics([NewTopic(settings.topics.pages, num_partitions=2)])[settings.topics.pages].result(30)
    ensure_topics(settings)
    stories = quick_stories(2000)
    zero = [page(f"https://rzero.example/{i}", wrap_in_template(story, "rzero")) for i, story in enumerate(stories)]
    later = ([page(f"https://rcopy.example/{i}", wrap_in_template(story, "rcopy")) for i, story in enumerate(stories[:10])]
             + article_pages("rnew", list(range(9300, 9305))))
    produce(settings, 0, zero + later)
    commit(settings, {0: len(zero), 1: 0})
    whole = f"store rebuilt from offsets 0..{len(zero) - 1} ({len(zero)} records)"
    (tmp_path / "b").mkdir()  # B's own state folder
    with app_running(settings, tmp_path, "a.log", "--verbose", env={"STREAMDEDUP_BATCH_SIZE": "1"}) as a_log:
        wait_for(a_log, f"rebuilding it from offsets 0..{len(zero) - 1}", timeout_s=120)
        time.sleep(1)
        joined = time.monotonic()
        with app_running(settings, tmp_path / "b", "b.log", "--verbose") as b_log:
            wait_for(b_log, "Setting newly assigned partitions", timeout_s=120)
            assigned_s = time.monotonic() - joined
            assert whole not in a_log.read_text(), f"the rebalance waited for A's rebuild ({assigned_s:.1f} s)"
            got = outcomes(settings, len(later), timeout_s=120)
            offset = committed_offset(settings, len(zero) + len(later), timeout_s=30)
    a_text, b_text = a_log.read_text(), b_log.read_text()
    logs = f"A:\n{a_text[-2500:]}\nB:\n{b_text[-2500:]}"
    assert len(got) == len(later), logs  # and none twice (`outcomes`)
    assert offset == len(zero) + len(later), logs
    stopped = re.search(r"partition 0: the rebuild of its store stops as a rebalance revokes the partition at offset "
                        r"(\d+)", a_text)
    assert stopped is not None, logs
    verdicts = {url.decode(): orjson.loads(m.value())["dedup"]["status"] for url, (_, m) in got.items()}
    assert [verdicts[r["url"]] for r in later] == ["duplicate"] * 10 + ["unique"] * 5
    owner = "A" if "partition 0: store rebuilt" in a_text else "B"
    print(f"B assigned {assigned_s:.1f} s after it started; A's rebuild stopped at {stopped.group(1)}; "
          f"partition 0 then rebuilt by {owner}")


# Tansu answers a fetch past a recreated topic's end with no records and no OFFSET_OUT_OF_RANGE: the rebuild
# waits out its 60 s stall and stops as RebuildStalled (one line too), so the Tansu pass skips this
@pytest.mark.skipif(os.environ.get("STREAMDEDUP_TEST_BROKER") == "tansu",
                    reason="Tansu gives no offset-out-of-range past a recreated topic's end")
def test_a_rebuild_whose_records_are_gone_stops_the_app_in_one_line_and_keeps_nothing_of_the_new_topic(settings,
                                                                                                       tmp_path):
    """The pages topic is deleted and created again while a partition's store is rebuilt up to the record the app
    read (offset `until`): the rebuild's consumer finds its position gone and reads the new topic from its start,
    or the new topic ends below `until`. Either way the rebuild raises one line naming the fix, instead of
    replaying the new topic's records as the old ones, or ending "rebuilt" short of `until` (before: "store rebuilt
    from offsets 0..14 (10 records)", and the waiting records were judged against a store without the pages in
    between: copies of them unique, without a word)."""
    from runtime.test_faust_app import recreate
    from runtime.test_worker import send
    from streamdedup.config import DetectorConfig
    from streamdedup.detector import Detector
    from streamdedup.runtime.faust_journal import JournalKeeper
    from streamdedup.runtime.faust_rebuild import RebuildCutOff, rebuild

    pages = settings.topics.pages
    send(settings, article_pages("gone", list(range(3700, 3710))))
    with Detector(DetectorConfig(), tmp_path / "short") as detector:  # the topic ends at 10, the app read 14
        with pytest.raises(RebuildCutOff, match=rf"{pages}\[0\] ends at offset 10 while its store was rebuilt up to "
                                                r"offset 15: the topic was deleted or created again.*Start the app "
                                                r"again"):
            rebuild(JournalKeeper(detector, pages, 0), settings, settings.group_id, 15, new_store=True)
    with Detector(DetectorConfig(), tmp_path / "back") as detector:
        keeper = JournalKeeper(detector, pages, 0)
        rebuild(keeper, settings, settings.group_id, 8, new_store=True)  # read up to offset 7 of the old topic
        assert keeper.next_offset() == 8
        recreate(settings, pages)
        send(settings, article_pages("new", list(range(3800, 3803))))
        with pytest.raises(RebuildCutOff, match=rf"{pages}\[0\] went back to offset 0 while its store was rebuilt up "
                                                "to offset 12"):
            rebuild(keeper, settings, settings.group_id, 12, new_store=False)
        assert keeper.next_offset() == 8  # none of the new topic's records replayed as the old one's
