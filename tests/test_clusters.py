"""The news feed's fold (issue 58): the same cluster events in any order give the same stories,
and `streamdedup clusters --out` prints a dedup folder's clusters.jsonl."""

from __future__ import annotations

import random

import orjson
import pytest
from conftest import FakeMessage, make_article, write_jsonl

from streamdedup.cli import main
from streamdedup.clusters import Stories, view_event


def event(kind: str, page: str, cluster: str, day: int, **more: object) -> dict:
    return {"type": kind, "page_id": page, "cluster_id": cluster, "url": f"https://{page}.example/",
            "fetch_time": f"2024-03-{day:02d}T00:00:00Z", **more}


def test_the_same_events_in_any_order_give_the_same_stories():
    events = [event("created", "r", "r", 1), event("joined", "r2", "r", 2, duplicate_of="r"),
              event("created", "a", "a", 3), event("joined", "a2", "a", 4, duplicate_of="a"),
              event("joined", "c", "r", 5, duplicate_of="r2", merged=["a"]),  # a bridge: a's story is r's
              event("created", "x", "x", 6), event("created", "y", "y", 7),
              {"type": "late_match", "page_id": "y", "duplicate_of": "a2", "cluster_id": "a"},  # y is late: r's too
              event("joined", "y2", "y", 8, duplicate_of="y")]
    reference = Stories()
    for item in events:
        reference.apply(item)
    stories = reference.stories()
    assert [(s["cluster_id"], [p["id"] for p in s["pages"]]) for s in stories] == [
        ("r", ["r", "r2", "a", "a2", "c", "y", "y2"]), ("x", ["x"])]
    rng = random.Random(7)
    for _ in range(50):
        shuffled = Stories()
        for item in rng.sample(events, len(events)):
            shuffled.apply(item)
        assert shuffled.stories() == stories and len(shuffled) == 2


def test_counting_the_stories_walks_no_page():
    """`len(reader.stories)`, which the README's feed loop asks at every poll, walked every page of
    the view (~0.55 s at 1 M pages, each second of a caught-up reader); it is kept as events fold."""

    class Counted(Stories):
        walks = 0

        def _root(self, item: str) -> str:
            self.walks += 1
            return super()._root(item)

    stories = Counted()
    rng = random.Random(78)
    events = [event("created", f"p{i}", f"p{i}", 1 + i % 28) if i % 3 == 0 else
              event("joined", f"p{i}", f"p{i - i % 3}", 1 + i % 28, duplicate_of=f"p{i - i % 3}",
                    **({"merged": [f"p{i - 3 - i % 3}"]} if i % 30 == 29 else {})) for i in range(3000)]
    for item in rng.sample(events, len(events)):
        stories.apply(item)
        if rng.random() < 0.05:
            assert len(stories) == len(stories.stories())
    stories.walks = 0
    assert len(stories) == len(stories.stories()) == 900 and stories.walks >= 3000  # stories() walks them all
    stories.walks = 0
    assert len(stories) == 900 and stories.walks == 0


def test_file_mode_s_fold_keeps_under_half_a_kilobyte_a_page():
    """File mode keeps the fold for the whole job: 850-910 bytes a page (a dict a page, an entry in five
    dicts, a copy of each id and status a verdict line read back holds); ~400 now, its strings included."""
    import gc
    import tracemalloc

    from streamdedup.clusters import page_fields

    ids = [f"{i:032x}" for i in range(4000)]
    lines = [orjson.dumps({"id": page, "url": f"https://site{i}.example/2024/03/story-{i}",
                           "fetch_time": f"2024-03-01T00:{i // 60 % 60:02d}:{i % 60:02d}.{i:06d}Z",
                           "dedup": {"id": page, "status": "unique" if i % 4 == 0 else "duplicate",
                                     "duplicate_of": None if i % 4 == 0 else ids[i - i % 4],
                                     "cluster_id": ids[i - i % 4]}})
             for i, page in enumerate(ids)]  # clusters of 4 pages: the first unique, 3 duplicates of it
    gc.collect()
    tracemalloc.start()
    try:
        stories = Stories()
        before = tracemalloc.get_traced_memory()[0]
        for line in lines:  # as FileSink folds a verdict line read back
            data = orjson.loads(line)
            stories.add(data["dedup"], *page_fields(data))
        del data
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(stories) == 1000 and stories.url_of(ids[5]) == "https://site5.example/2024/03/story-5"
    assert held / len(ids) < 500, f"{held / len(ids):.0f} bytes a page"


def test_the_clusters_command_names_a_missing_folder_as_every_command_does(tmp_path, capsys):
    """Before: "streamdedup clusters: ..." and exit 1, where every other command says "streamdedup: error:", exit 2."""
    assert main(["clusters", "--out", str(tmp_path / "nowhere")]) == 2
    assert capsys.readouterr().err.startswith(f"streamdedup: error: {tmp_path / 'nowhere'} is not a folder")


def test_the_clusters_command_names_a_folder_that_holds_no_dedup_outputs(tmp_path, capsys):
    """`streamdedup clusters --out` on the wrong folder (the run's state folder, its parent): before,
    nothing printed and exit 0, as for a run with no pages. Now one line naming the folder and the fix."""
    (tmp_path / "state").mkdir()
    assert main(["clusters", "--out", str(tmp_path / "state")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"streamdedup: error: {tmp_path / 'state'} holds no verdicts.jsonl") and err.count("\n") == 1
    assert "--out folder of a streamdedup dedup run" in err


def test_the_clusters_command_prints_the_stories_of_an_output_folder(tmp_path, capsys):
    pages = [{"id": f"p{i}", "url": f"https://s{i}.example/", "content_type": "text/plain",
              "fetched_at": f"2024-03-01T00:0{i}:00Z",
              "content": " ".join(f"word{n}" for n in range(80)) + (" again" if i else "")} for i in range(3)]
    data = write_jsonl(tmp_path / "crawl.jsonl", pages)
    assert main(["dedup", str(data), "--out", str(tmp_path / "out"), "-q"]) == 0
    assert main(["clusters", "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    assert printed.encode() == (tmp_path / "out" / "clusters.jsonl").read_bytes() and printed.count("\n") == 1


def test_a_live_page_polled_without_fetch_times_lists_its_pages_in_the_order_fetched(tmp_path):
    """Four polls of one url with no fetch time (first, unchanged, a new paragraph, unchanged): the
    story lists them as fetched. Before, pages without a fetch time were listed by id (a hash), so
    a duplicate could come before the revision it repeats. The fold still takes any event order."""
    first = make_article(31, paragraphs=4)
    revised = [*first, *make_article(32, paragraphs=2)]
    polls = [{"url": "https://live.example/storm", "content": "\n\n".join(text), "n": n}
             for n, text in enumerate([first, first, revised, revised])]
    out = tmp_path / "out"
    assert main(["dedup", str(write_jsonl(tmp_path / "polls.jsonl", polls)), "--out", str(out), "-q"]) == 0
    verdicts = [orjson.loads(line) for line in (out / "verdicts.jsonl").read_bytes().splitlines()]
    ids = [v["id"] for v in verdicts]  # in input order
    assert [v["dedup"]["status"] for v in verdicts] == ["unique", "duplicate", "unique", "duplicate"]
    assert sorted(verdicts[2]["dedup"]["supersedes"]) == sorted(ids[:2])
    [story] = [orjson.loads(line) for line in (out / "clusters.jsonl").read_bytes().splitlines()]
    assert [p["id"] for p in story["pages"]] == ids
    events = [view_event(v["dedup"], v["url"], v["fetch_time"]) for v in verdicts]
    for seed in range(20):
        shuffled = Stories()
        for item in random.Random(seed).sample(events, len(events)):
            shuffled.apply(item)
        assert [p["id"] for p in shuffled.stories()[0]["pages"]] == ids


def test_undated_refetches_that_repeat_the_same_first_fetch_are_listed_as_fetched(tmp_path):
    """Three undated fetches of one url, as story-dev's: the first, one with a word changed, one less a
    paragraph. Both later ones repeat the first and name it (the earliest page holding them), so they
    tie in the fold. Before, their ids set their order: the third fetch listed before the second where
    its id sorts first (story-dev + feed-dev as one crawl: 3 of the 16 stories holding an undated page;
    with ids made by the reader, the third fetch once before the first). Now an undated page's verdict
    carries its place in the job (`arrival`: job, record), which orders the tie."""
    first = make_article(51, paragraphs=5)
    changed = [first[0].replace(" ", " quite ", 1), *first[1:]]
    polls = [{"id": page_id, "url": "https://live.example/flood", "content": "\n\n".join(text)}
             for page_id, text in (("c-first", first), ("b-second", changed), ("a-third", first[:3] + first[4:]))]
    out = tmp_path / "out"
    assert main(["dedup", str(write_jsonl(tmp_path / "polls.jsonl", polls)), "--out", str(out), "-q"]) == 0
    verdicts = [orjson.loads(line)["dedup"] for line in (out / "verdicts.jsonl").read_bytes().splitlines()]
    assert [(v["status"], v["duplicate_of"]) for v in verdicts] == [
        ("unique", None), ("duplicate", "c-first"), ("duplicate", "c-first")]
    assert [v["arrival"] for v in verdicts] == [[1, 1], [1, 2], [1, 3]]
    [story] = [orjson.loads(line) for line in (out / "clusters.jsonl").read_bytes().splitlines()]
    assert [p["id"] for p in story["pages"]] == ["c-first", "b-second", "a-third"]
    assert "arrival" not in story["pages"][0]  # clusters.jsonl's pages as before: the order says it


def test_undated_pages_that_tie_are_listed_by_their_arrival_in_any_event_order():
    """The fold orders undated pages that tie (same named pages) by their events' `arrival`, whatever
    order the events come in; events without one (written before this version), or with one of
    another form, tie-break by id as before."""
    def refetch(page: str, arrival: object = None) -> dict:
        found = {"type": "joined", "page_id": page, "cluster_id": "first", "duplicate_of": "first", "fetch_time": None,
                 "status": "duplicate"}
        return found if arrival is None else {**found, "arrival": arrival}

    first = {"type": "created", "page_id": "first", "cluster_id": "first", "fetch_time": None, "status": "unique",
             "arrival": [1700000000000, 2, 40]}
    kafka = [first, refetch("z", [1700000000001, 2, 41]), refetch("m", [1700000000001, 2, 42]),
             refetch("a", [1700000000005, 0, 7])]
    old = [first, refetch("z"), refetch("m"), refetch("a", "job 1:#9")]
    for events, expected in ((kafka, ["first", "z", "m", "a"]), (old, ["first", "a", "m", "z"])):
        for seed in range(8):
            stories = Stories()
            for item in random.Random(seed).sample(events, len(events)):
                stories.apply(item)
            assert [p["id"] for p in stories.stories()[0]["pages"]] == expected


def test_undated_refetches_are_listed_by_arrival_whichever_earlier_page_each_names():
    """story-dev + feed-dev as one crawl: a dated article, then three undated fetches of a copy of it;
    the first and third name the article, the second (a word changed) names the first. By the chain
    of named pages the third (one step) came before the second (two): listed as judged only once the
    arrival ranks before the chain (1 of 16 stories holding an undated page)."""
    def undated(page: str, named: str, record: int) -> dict:
        return {"type": "joined", "page_id": page, "cluster_id": "article", "duplicate_of": named,
                "fetch_time": None, "status": "duplicate", "arrival": [1, record]}

    events = [event("created", "article", "article", 2), event("joined", "later", "article", 5, duplicate_of="article"),
              undated("copy-1", "article", 126), undated("copy-2", "copy-1", 127), undated("copy-3", "article", 128)]
    for seed in range(8):
        stories = Stories()
        for item in random.Random(seed).sample(events, len(events)):
            stories.apply(item)
        assert [p["id"] for p in stories.stories()[0]["pages"]] == ["article", "copy-1", "copy-2", "copy-3", "later"]


def test_a_deduplicator_lists_undated_refetches_as_added():
    """`Deduplicator.stories()` folds the verdicts as file mode does, each undated page's place included."""
    from streamdedup import Deduplicator

    first = make_article(51, paragraphs=5)
    changed = [first[0].replace(" ", " quite ", 1), *first[1:]]
    with Deduplicator() as dedup:
        dedup.add_many([{"id": page_id, "url": "https://live.example/flood", "content": "\n\n".join(text)}
                        for page_id, text in (("c-first", first), ("b-second", changed), ("a-third", first[:3] + first[4:]))])
        [story] = dedup.stories()
    assert [p["id"] for p in story["pages"]] == ["c-first", "b-second", "a-third"]


def _Message(value: bytes | None, offset: int = 7) -> FakeMessage:
    """A consumed message of the cluster view, as `event_of` reads one."""
    return FakeMessage(value, offset, topic="pages.unique")


def test_a_message_that_is_no_cluster_event_is_named_in_one_line():
    """`streamdedup clusters --topic pages.unique` (or a ClusterReader on it) ended in a traceback,
    KeyError: 'page_id'; the input topic, in "str is not valid UTF-8". A tombstone is no page's event."""
    from streamdedup.clusters import event_of

    event = {"type": "created", "page_id": "a", "cluster_id": "a"}
    assert event_of(_Message(orjson.dumps(event))) == event
    assert event_of(_Message(None)) is None
    for value in (b'{"url": "https://a.example/1", "dedup": {}}', b"\xff not json", b"[1]"):
        with pytest.raises(ValueError) as refused:
            event_of(_Message(value))
        line = str(refused.value)
        assert "\n" not in line and line.startswith("pages.unique[0]@7 is no cluster event") and "pages.cluster_view" in line


def test_pages_and_story_names_go_by_the_instant_whatever_the_fetch_time_s_form():
    """Fetch times are the records' own, in any form the reader accepts; sorted as text, a story
    listed epoch seconds before every ISO date and 20240102000000 after 2024-01-03, and was named
    by the cluster whose time sorted first as text (08:00Z before 12:00+05:00, which is 07:00Z)."""
    stories = Stories()
    stories.apply({"type": "created", "page_id": "late", "cluster_id": "late", "fetch_time": "2024-01-03T00:00:00Z"})
    stories.apply({"type": "joined", "page_id": "warc", "cluster_id": "late", "duplicate_of": "late",
                   "fetch_time": "20240102000000"})
    stories.apply({"type": "joined", "page_id": "epoch", "cluster_id": "late", "duplicate_of": "late",
                   "fetch_time": 1704200000})  # 2024-01-02T12:53Z
    assert [p["id"] for p in stories.stories()[0]["pages"]] == ["warc", "epoch", "late"]
    stories.apply({"type": "created", "page_id": "utc", "cluster_id": "utc", "fetch_time": "2024-01-01T08:00:00Z"})
    stories.apply({"type": "created", "page_id": "zoned", "cluster_id": "zoned",
                   "fetch_time": "2024-01-01T12:00:00+05:00"})
    stories.apply({"type": "joined", "page_id": "bridge", "cluster_id": "utc", "merged": ["zoned"],
                   "fetch_time": "2024-01-04T00:00:00Z"})
    assert stories.story_of("bridge") == "zoned"
    [merged] = [s for s in stories.stories() if s["cluster_id"] == "zoned"]
    assert [p["id"] for p in merged["pages"]] == ["zoned", "utc", "bridge"]


def test_the_cluster_events_topic_gives_the_views_stories_fetch_times_and_statuses(tmp_path):
    """`streamdedup clusters --topic pages.clusters` (and a ClusterReader on it) folds the events
    `outputs/kafka.cluster_events` writes: their fetch time is `fetched_at` and they carry no status.
    Before, every page had no fetch time (so stories were named by id, not by their earliest page)
    and a revision kept as unique (a `joined` event with `supersedes`) was listed as a duplicate."""
    from streamdedup.outputs.kafka import cluster_events

    first = make_article(41, paragraphs=4)
    other = make_article(42, paragraphs=4)
    pages = [{"id": "b-first", "url": "https://b.example/1", "content": "\n\n".join(other),
              "fetched_at": "2024-03-01T09:00:00Z"},
             {"id": "z-first", "url": "https://z.example/1", "content": "\n\n".join(first),
              "fetched_at": "2024-03-01T08:00:00Z"},
             {"id": "copy", "url": "https://c.example/1", "content": "\n\n".join(first),
              "fetched_at": "2024-03-01T10:00:00Z"},
             {"id": "revised", "url": "https://z.example/1",
              "content": "\n\n".join([*first, *make_article(43, paragraphs=2)]), "fetched_at": "2024-03-01T11:00:00Z"},
             {"id": "roundup", "url": "https://r.example/1", "content": "\n\n".join([*other, *first]),
              "fetched_at": "2024-03-01T12:00:00Z"}]
    out = tmp_path / "out"
    assert main(["dedup", str(write_jsonl(tmp_path / "crawl.jsonl", pages)), "--out", str(out), "-q"]) == 0
    verdicts = [orjson.loads(line) for line in (out / "verdicts.jsonl").read_bytes().splitlines()]
    assert verdicts[3]["dedup"]["status"] == "unique" and verdicts[3]["dedup"]["supersedes"]
    view = [orjson.loads(line) for line in (out / "clusters.jsonl").read_bytes().splitlines()]
    by_id = {p["id"]: p for p in pages}
    events = [e for v in verdicts for e in cluster_events(v["dedup"], by_id[v["id"]])]
    for seed in range(10):
        folded = Stories()
        for item in random.Random(seed).sample(events, len(events)):
            folded.apply(item)
        assert folded.stories() == view


def test_a_polled_page_without_a_fetch_time_comes_after_the_dated_page_it_repeats():
    """A story of dated pages and an undated re-fetch (a crawler polling the page sends no time):
    the re-fetch names the page it repeats and is listed after it, as news-feed.md says. Before,
    it came first in its story, before the page it is a duplicate of."""
    events = [event("created", "a", "a", 1), event("joined", "b", "a", 2, duplicate_of="a"),
              {"type": "joined", "page_id": "poll", "cluster_id": "a", "duplicate_of": "a", "fetch_time": None,
               "status": "duplicate"},
              {"type": "joined", "page_id": "poll2", "cluster_id": "a", "duplicate_of": "poll", "fetch_time": None,
               "status": "duplicate"},
              event("joined", "c", "a", 3, duplicate_of="a")]
    for seed in range(10):
        stories = Stories()
        for item in random.Random(seed).sample(events, len(events)):
            stories.apply(item)
        assert [p["id"] for p in stories.stories()[0]["pages"]] == ["a", "poll", "poll2", "b", "c"]


def test_undated_polls_a_bridge_joined_are_listed_as_judged_whatever_their_ids():
    """Three undated polls of one url, as in the story dev set: the first; a revision related to it (its
    own cluster); a third, a duplicate of the first that bridged the revision's cluster (`merged`).
    Before, the third named only the first, so it tied with the revision and their ids (hashes,
    which differ between file mode and Kafka: made of the record's place) set the order: on the
    worker the story listed the third before the revision, file mode after it."""
    def polls(first: str, revision: str, third: str) -> list[dict]:
        return [{"type": "created", "page_id": first, "cluster_id": first, "status": "unique"},
                {"type": "created", "page_id": revision, "cluster_id": revision, "status": "unique",
                 "related_to": [first]},
                {"type": "joined", "page_id": third, "cluster_id": first, "status": "duplicate", "duplicate_of": first,
                 "merged": [revision]}]

    for first, revision, third in (("e8", "bf", "21"), ("ad", "33", "bd")):  # the worker's ids, file mode's
        for seed in range(6):
            stories = Stories()
            for item in random.Random(seed).sample(polls(first, revision, third), 3):
                stories.apply(item)
            assert [p["id"] for p in stories.stories()[0]["pages"]] == [first, revision, third]


class _OnePartitionConsumer:
    """A consumer of a one-partition topic, answering every fetch at once (as noida-db).

    The topic's messages (`records`) and the count of end-offset questions (`asked`) are shared by
    every client made (the reader's consumer and its offsets client); `slow_offsets` makes an
    end-offset question wait its whole timeout on the fake clock and fail, as with a broker away."""

    records: list[_Message] = []
    asked = 0
    slow_offsets = False
    clock: dict = {"now": 0.0}

    def __init__(self, config: dict) -> None:
        self.config = config
        self.read = 0  # the position: records handed over
        self.paused = False
        self.fetches = 0
        self.partitions: list = []

    def list_topics(self, topic: str, timeout: float) -> object:
        from types import SimpleNamespace

        return SimpleNamespace(topics={topic: SimpleNamespace(error=None, partitions={0: None})})

    def committed(self, partitions: list, timeout: float) -> list:
        return partitions

    def assign(self, partitions: list) -> None:
        self.partitions = partitions

    def assignment(self) -> list:
        return self.partitions

    def position(self, partitions: list) -> list:
        from confluent_kafka import TopicPartition

        return [TopicPartition(tp.topic, tp.partition, self.read) for tp in partitions]

    def get_watermark_offsets(self, partition: object, timeout: float, cached: bool) -> tuple[int, int]:
        from confluent_kafka import KafkaError, KafkaException

        type(self).asked += 1
        if self.slow_offsets:
            self.clock["now"] += timeout
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT))
        return 0, len(self.records)

    def pause(self, partitions: list) -> None:
        self.paused = True

    def resume(self, partitions: list) -> None:
        self.paused = False

    def consume(self, count: int, timeout: float) -> list:
        assert not self.paused, "a paused partition fetches nothing"
        self.fetches += 1
        taken = self.records[self.read:self.read + count]
        self.read += len(taken)
        return taken

    def close(self) -> None:
        pass


def _fake_reader(monkeypatch, **settings):
    """A ClusterReader on `_OnePartitionConsumer`s and a fake clock (no wait), and the clock."""
    import confluent_kafka

    from streamdedup.clusters import reader

    clock = {"now": 0.0}
    fake = type("_Consumer", (_OnePartitionConsumer,), {"records": [], "asked": 0, "clock": clock})  # this test's
    monkeypatch.setattr(confluent_kafka, "Consumer", fake)
    monkeypatch.setattr(reader, "monotonic", lambda: clock["now"])
    monkeypatch.setattr(reader, "sleep", lambda s: clock.update(now=clock["now"] + s))
    return reader.ClusterReader("broker:9092", "feed", **settings), clock


def test_a_caught_up_reader_rests_instead_of_fetching(monkeypatch):
    """`ClusterReader.poll` on a caught-up topic of noida-db (which answers an empty fetch at once)
    fetched without end: ~0.5 CPU-second a second while idle (measured with a real broker: 0.67
    CPU-s a second, reader and broker, before; 0.0 after). Caught up, it pauses fetching and asks
    the end offsets every `idle_poll_s`, until a record comes (the clock is a fake one: no wait)."""
    reader, clock = _fake_reader(monkeypatch, idle_poll_s=0.25)
    consumer = reader._consumer
    fake = type(consumer)
    assert reader.poll(timeout_s=1.0) == [] and clock["now"] == 1.0
    assert consumer.fetches == 1 and consumer.paused and fake.asked == 4  # at 0 (caught up), .25, .5, .75
    event = {"type": "created", "page_id": "a", "cluster_id": "a"}
    fake.records.append(_Message(orjson.dumps(event), offset=0))
    assert reader.poll(timeout_s=1.0) == [event] and not consumer.paused
    assert clock["now"] == 1.0  # the question due at 1.0 opens the poll


def test_a_poll_ends_in_its_time_when_the_end_offsets_do_not_come(monkeypatch):
    """With the broker away, each end-offset question waited 5 s on the reader's own consumer after
    every empty fetch: `poll(1.0)` took 6 s. Asked within the poll's time, on a client of its own
    while fetching (the consumer's connection holds the fetch in flight), it returns in 1 s; an
    event that comes afterwards is still handed over, once."""
    reader, clock = _fake_reader(monkeypatch, idle_poll_s=0.25)
    consumer = reader._consumer
    fake = type(consumer)
    fake.slow_offsets = True
    for poll in range(1, 4):
        assert reader.poll(timeout_s=1.0) == [] and clock["now"] == poll * 1.0
    assert not consumer.paused and len({id(c) for c in [consumer, reader._ends_client]}) == 2
    fake.slow_offsets = False
    assert reader.poll(timeout_s=1.0) == [] and consumer.paused and clock["now"] == 4.0
    event = {"type": "created", "page_id": "a", "cluster_id": "a"}
    fake.records.append(_Message(orjson.dumps(event), offset=0))
    fake.slow_offsets = True  # away again while resting: the questions fail, fetching tells
    assert reader.poll(timeout_s=1.0) + reader.poll(timeout_s=1.0) == [event] and clock["now"] == 6.0
    assert not consumer.paused and reader.poll(timeout_s=1.0) == [] and clock["now"] == 7.0


def test_a_reader_polled_without_waiting_still_sees_new_events(monkeypatch):
    """A code review: `poll(0)` (a non-blocking poll) after one empty fetch left the end-offset
    question due and returned at its deadline before asking it, so the reader never fetched again,
    fetching or resting. A question due is now asked once a poll, given at least 50 ms."""
    reader, clock = _fake_reader(monkeypatch, idle_poll_s=0.25)
    fake = type(reader._consumer)
    event = {"type": "created", "page_id": "a", "cluster_id": "a"}
    got = []
    for step in range(40):  # 2 s of non-blocking polls, 50 ms apart
        if step == 10:
            fake.records.append(_Message(orjson.dumps(event), offset=0))
        got += reader.poll(timeout_s=0.0)
        clock["now"] += 0.05
    assert got == [event]


def test_an_event_type_this_version_does_not_know_is_skipped_with_one_line_naming_the_fix(caplog):
    """A reader older than the workers (a `late_related` read by 0.17.0, whatever type comes next): such an event
    was folded as a join, so one carrying `duplicate_of` or `merged` (a type that only relates, or splits) merged
    stories silently. Now it is skipped and counted, and one WARNING a type says which and what to do."""
    stories = Stories()
    for page_id, fetched in (("A", "2024-01-01T00:00:00Z"), ("B", "2024-01-02T00:00:00Z")):
        stories.apply({"type": "created", "page_id": page_id, "cluster_id": page_id, "url": page_id,
                       "fetch_time": fetched, "status": "unique"})
    before = stories.stories()
    for _ in range(3):
        assert stories.apply({"type": "split_from", "page_id": "B", "cluster_id": "B", "duplicate_of": "A",
                              "merged": ["A"]}) == "B"
    assert stories.stories() == before and len(stories) == 2
    assert stories.skipped == {"split_from": 3}
    [line] = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert "'split_from'" in line and "upgrade streamdedup where the stories are read" in line
    stories.apply({"type": "late_related", "page_id": "B", "cluster_id": "B", "related_to": ["A"]})  # known
    assert stories.related_of("B") == ["A"] and stories.skipped == {"split_from": 3}


def test_a_page_keeps_the_fetches_it_supersedes_and_the_stories_it_merged_in_any_event_order():
    """A feed shows a story's newest revision and says which stories a page joined: before, a page of
    `stories()` (clusters.jsonl, `streamdedup clusters`) kept neither its verdict's `supersedes` nor
    its `merged`, so a revision and the view-all page of two parts read as two `unique` pages. A late
    merge (global topology) is its page's too, as file mode's verdict names it."""
    events = [event("created", "p1", "p1", 1), event("created", "p2", "p2", 2),
              event("joined", "whole", "p1", 3, status="unique", merged=["p2"], supersedes=["p1", "p2"]),
              event("created", "s1", "s1", 4), event("joined", "s2", "s1", 5, status="unique", supersedes=["s1"]),
              event("created", "t1", "t1", 6), event("joined", "t2", "p1", 7, status="unique", supersedes=["t1"]),
              {"type": "merged", "page_id": "t2", "cluster_id": "p1", "merged": ["t1"], "late": True}]
    reference = Stories()
    for item in events:
        reference.apply(item)
    stories = reference.stories()
    pages = {page["id"]: page for story in stories for page in story["pages"]}
    assert pages["whole"]["supersedes"] == ["p1", "p2"] and pages["whole"]["merged"] == ["p2"]
    assert pages["s2"]["supersedes"] == ["s1"] and "merged" not in pages["s2"]
    assert pages["t2"]["merged"] == ["t1"] and "supersedes" not in pages["p1"] and "merged" not in pages["p1"]
    rng = random.Random(83)
    for _ in range(30):
        shuffled = Stories()
        for item in rng.sample(events, len(events)):
            shuffled.apply(item)
        assert shuffled.stories() == stories
    from streamdedup.clusters import table

    shown = table(stories)
    assert "https://whole.example/  (supersedes 2; merged p2)" in shown and "(supersedes 1)" in shown


def test_the_table_counts_a_story_of_one_page_as_one_page():
    """`streamdedup clusters --format table` headed each story of one page "(1 pages)" (story-dev and
    feed-dev as one crawl: 30 of 83 stories)."""
    from streamdedup.clusters import table

    stories = Stories()
    for item in (event("created", "a", "a", 1), event("created", "b", "b", 2),
                 event("joined", "b2", "b", 3, duplicate_of="b")):
        stories.apply(item)
    heads = [line for line in table(stories.stories()).splitlines() if not line.startswith(" ")]
    assert heads == ["a  (1 page)", "b  (2 pages)"]
