"""A story of two clusters (one url: a first fetch, a rewrite in place related to it, a third fetch that
bridged them) and a wire copy holding all three whole, through the Kafka worker: it joins the story, as
in file mode.

The local topology judges with the Detector and its store, as file mode (the store records the third
fetch's merge: `StoreBatch.merge`). The global topology's gathers tell a page's cluster with the
clusters its verdict merged (`RootReply.merged`): the third fetch is one of the wire copy's matches, so
its gather tells it that the rewrite's cluster is the first fetch's story (docs/limitations.md, "A
story made of two clusters", for a merge made by a page that is not a match)."""

from __future__ import annotations

from dataclasses import replace

import orjson
import pytest
from verdict.test_digests import _chain_of_merges, _rewritten_story_then_its_wire_copy

from runtime.conftest import read_topic, run_until_decided
from runtime.test_worker import send
from streamdedup.clusters import read_topic_stories
from streamdedup.config import DetectorConfig
from streamdedup.runtime.worker import Worker
from streamdedup.testing import run_records

STORY, WIRE = "https://news.example/flood", "https://wire.example/flood"


@pytest.mark.parametrize("topology", ["local", "global"])
def test_a_wire_copy_of_a_story_of_two_clusters_on_the_worker(settings, tmp_path, topology):
    records = _rewritten_story_then_its_wire_copy(rewritten=True)
    file_mode = [o.dedup for o in run_records(records, tmp_path / "file-mode")]
    assert file_mode[-1]["cluster_id"] == file_mode[0]["id"]  # file mode: the wire copy joins the story
    # local: one input partition, so one store holds the story and the copy (it judges within a partition)
    run = replace(settings, topology=topology, partitions=1 if topology == "local" else 3)
    send(run, records)
    assert run_until_decided(Worker(run, DetectorConfig()), len(records)).decided == len(records)
    verdicts = {row["dedup"]["id"]: row["dedup"] for row in map(orjson.loads, (
        m.value() for m in read_topic(run, run.topics.verdicts)))}
    first, rewrite, third, wire = (verdicts[d["id"]] for d in file_mode)
    assert third["merged_clusters"] == [rewrite["id"]] and third["cluster_id"] == first["id"], third
    assert set(wire["supersedes"]) == {first["id"], rewrite["id"], third["id"]}, wire
    stories = [{p["url"] for p in story["pages"]}
               for story in read_topic_stories(run.bootstrap_servers, run.topics.cluster_view).stories()]
    events = [orjson.loads(m.value()) for m in read_topic(run, run.topics.clusters)]
    assert [e["merged"] for e in events if e["type"] == "merged"] == [[rewrite["id"]]]  # the third fetch's only
    assert wire == file_mode[-1]
    assert stories == [{STORY, WIRE}]


def test_a_copy_of_a_story_merged_along_a_long_chain_on_the_local_worker(settings, tmp_path):
    """The story of 20 clusters merged along a chain of 19 (`_chain_of_merges`) and its wire copy on the
    local topology's worker: one story, as file mode (two before: the copy's ask for a cluster's story
    stopped 16 records into the chain, and the copy was taken for a digest)."""
    records = _chain_of_merges(20)
    run = replace(settings, topology="local", partitions=1)
    send(run, records)
    assert run_until_decided(Worker(run, DetectorConfig()), len(records)).decided == len(records)
    stories = read_topic_stories(run.bootstrap_servers, run.topics.cluster_view).stories()
    assert [(story["cluster_id"], story["size"]) for story in stories] == [("C1", len(records))], [
        (story["cluster_id"], story["size"]) for story in stories]
    file_mode = [o.dedup for o in run_records(records, tmp_path / "file-mode")]
    assert file_mode[-1]["cluster_id"] == "C1"
