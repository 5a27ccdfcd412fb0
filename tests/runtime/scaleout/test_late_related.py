"""A related page found after the later page's verdict (global topology, real broker): one `late_related` event.

File mode names it in the later page's `related_to`; the global topology, having released that page by its wait
before the earlier one came, emitted nothing, so a news feed never learnt that the two stories were related.
"""

from __future__ import annotations

from dataclasses import replace

from conftest import make_article, page, wrap_in_template

from runtime.conftest import read_topic
from runtime.scaleout.gather_steps import late_match
from runtime.scaleout.test_final_verdicts import emitted, released_by_the_wait
from runtime.scaleout.test_index_and_gather import match
from runtime.scaleout.test_topologies import finish
from streamdedup.clusters import Stories, read_topic_stories
from streamdedup.runtime.scaleout.gather_stage import GatherPartition
from streamdedup.runtime.scaleout.gather_verdicts import LATE_PAGE, Decided, LateMatch, RelatedLeftOut
from streamdedup.runtime.scaleout.messages import Answer, Match, PageHeader, Supplement
from streamdedup.runtime.scaleout.routing import page_order
from streamdedup.testing import run_records
from streamdedup.verdict.engine import MAX_NAMED
from streamdedup.verdict.relations import RELATED


def shape(stories: Stories) -> dict[str, tuple[list[str], list[str]]]:
    """story -> (its pages, the stories it is related to)."""
    return {s["cluster_id"]: ([p["id"] for p in s["pages"]], s["related"]) for s in stories.stories()}


def test_a_related_page_found_after_the_verdict_is_one_late_related_event_and_the_stories_are_file_modes(
        broker, settings, tmp_path):
    """As the bounded-wait test: page F on partition 0, a follow-up (7 of article A's 10 paragraphs, then 4 of its
    own), is released by the 0.5 s wait (unique, related to nothing known); then A, earlier, arrives on partition 1
    with a copy of it (A2). File mode: F unique, `related_to` [A, A2]. The global topology: F's verdict as emitted
    names neither; one `late_related` event each, F -> A and F -> A2, on the clusters topic and the view, counted
    (`late_matches_total`); F's story (and the view's
    fold) is related to A's story as in file mode's fold, and no story is merged. Before: no event (the stories
    unrelated)."""
    y, z = make_article(5300, paragraphs=10), make_article(5301, paragraphs=10)
    other = make_article(5302, paragraphs=4)
    e0 = page("https://beta.example/0", wrap_in_template(other, "Beta"), "2024-03-04T00:00:00Z", id="e0")
    follow = page("https://alpha.example/1", wrap_in_template(y[:7] + z[:4], "Alpha"), "2024-03-04T02:00:00Z", id="F")
    article = page("https://beta.example/1", wrap_in_template(y, "Beta"), "2024-03-04T01:00:00Z", id="A")
    copy = page("https://gamma.example/1", wrap_in_template(y, "Gamma"), "2024-03-04T01:30:00Z", id="A2")
    records = [e0, article, copy, follow]
    file_mode = {o.dedup["id"]: o for o in run_records(records, tmp_path / "file-mode")}
    assert (file_mode["F"].dedup["status"], file_mode["F"].dedup.get("related_to")) == ("unique", ["A", "A2"])
    expected = Stories()
    for o in file_mode.values():
        expected.add(o.dedup, *(o.record.get(name) for name in ("url", "fetched_at")))

    run, produce, workers, threads = released_by_the_wait(settings, e0, follow)
    produce(article, 1)
    produce(copy, 1)
    finish(workers, threads, len(records))
    got = emitted(run)
    assert "related_to" not in got["dedups"]["F"]  # released by the wait, before A was known
    late = [e for e in got["events"] if e["type"] in ("late_match", "late_related")]
    assert sorted((e["type"], e["page_id"], e["related_to"], e["cluster_id"]) for e in late) == [
        ("late_related", "F", [earlier], "F") for earlier in ("A", "A2")]
    assert workers["w0"].metrics.registry.get_sample_value("streamdedup_late_matches_total",
                                                           {"cause": "released_early"}) == 2
    folded = Stories()
    for dedup in got["dedups"].values():
        folded.add(dedup, None, got["fetched"][dedup["id"]])
    for event in late:
        folded.apply(event)
    assert shape(folded) == shape(expected) == {"e0": (["e0"], []), "A": (["A", "A2"], ["F"]), "F": (["F"], ["A"])}
    view = read_topic_stories(run.bootstrap_servers, run.topics.cluster_view)
    assert shape(view) == shape(expected)
    assert len(read_topic(run, run.topics.cluster_view)) == len(records) + 2  # the pages', F -> A, F -> A2


def related(page_id: str, at: int) -> Match:
    return replace(match(page_id, page_order(at, at, 1, 0)), relation=RELATED, their_relation=RELATED)


def test_a_late_related_match_keeps_the_pages_cluster_and_a_duplicate_names_none(tmp_path):
    """L went out unique by its watermark. A related earlier page R found then is one `late_related` event in L's
    own cluster, counted by how L went out, once. Once a late match makes L a duplicate (of D), a related page
    found after that names nothing, as file mode names no related page of a duplicate, across a restart; how L
    went out is still read from its record."""
    gather = GatherPartition(tmp_path / "g")
    l_order = page_order(5, 5, 0, 0)
    gather.add_header(PageHeader("L", l_order, (0,), {}, "t"), at_ms=1000)
    assert gather.add_answer(Answer("L", l_order, 0), at_ms=1000) == []
    [released] = gather.add_watermark(0, page_order(6, 6, 0, 0))
    assert isinstance(released, Decided) and released.dedup["status"] == "unique"
    gather.commit()
    [late] = gather.add_supplement(Supplement("L", l_order, related("R", 3)))
    assert late.cause == LATE_PAGE and late.event == {
        "type": "late_related", "page_id": "L", "cluster_id": "L", "related_to": ["R"], "similarity": 1.0,
        "method": "exact", "relation": "related"}
    assert gather.add_supplement(Supplement("L", l_order, related("R", 3))) == []  # another partition's: once
    [duplicate, *_] = late_match(gather, "L", l_order, match("D", page_order(2, 2, 1, 0)))
    assert duplicate.event["type"] == "late_match" and duplicate.cause == LATE_PAGE
    gather.commit()
    gather.close()
    gather = GatherPartition(tmp_path / "g")
    assert gather.add_supplement(Supplement("L", l_order, related("S", 4))) == []
    [another, *_] = late_match(gather, "L", l_order, match("C", page_order(1, 1, 1, 0)))
    assert another.event["type"] == "late_match" and another.cause == LATE_PAGE
    gather.close()


def test_a_page_gets_no_more_late_related_events_than_file_modes_related_to_names(broker, settings, tmp_path):
    """As above, but A has nine copies (A1-A9) on nine other sites: ten pages F is related to, all found after F's
    verdict. File mode names the 8 earliest in F's `related_to` (`MAX_NAMED`). The global topology: 8 `late_related`
    events (the first 8 to reach F's gather partition), the other 2 left out and counted
    (`late_related_left_out_total`); the stories folded are file mode's (all ten are one story). Before: 10 events."""
    y, z = make_article(5310, paragraphs=10), make_article(5311, paragraphs=10)
    e0 = page("https://beta.example/0", wrap_in_template(make_article(5312, paragraphs=4), "Beta"),
              "2024-03-05T00:00:00Z", id="e0")
    follow = page("https://alpha.example/1", wrap_in_template(y[:7] + z[:4], "Alpha"), "2024-03-05T02:00:00Z", id="F")
    earlier = [page(f"https://site{i}.example/1", wrap_in_template(y, f"Site{i}"), f"2024-03-05T01:{i:02d}:00Z",
                    id="A" if i == 0 else f"A{i}") for i in range(10)]
    records = [e0, *earlier, follow]
    file_mode = {o.dedup["id"]: o for o in run_records(records, tmp_path / "file-mode")}
    assert file_mode["F"].dedup["related_to"] == ["A", *(f"A{i}" for i in range(1, MAX_NAMED))]
    expected = Stories()
    for o in file_mode.values():
        expected.add(o.dedup, *(o.record.get(name) for name in ("url", "fetched_at")))

    run, produce, workers, threads = released_by_the_wait(settings, e0, follow)
    for record in earlier:
        produce(record, 1)
    finish(workers, threads, len(records))
    got = emitted(run)
    assert "related_to" not in got["dedups"]["F"]  # released by the wait, before A was known
    late = [e for e in got["events"] if e["type"] in ("late_match", "late_related")]
    named = [name for e in late for name in e["related_to"]]
    assert {e["type"] for e in late} == {"late_related"} and len(named) == len(set(named)) == MAX_NAMED
    assert set(named) <= {r["id"] for r in earlier}
    registry = workers["w0"].metrics.registry
    assert registry.get_sample_value("streamdedup_late_matches_total", {"cause": "released_early"}) == MAX_NAMED
    assert registry.get_sample_value("streamdedup_late_related_left_out_total", {"cause": "released_early"}) == 2
    folded = Stories()
    for dedup in got["dedups"].values():
        folded.add(dedup, None, got["fetched"][dedup["id"]])
    for event in late:
        folded.apply(event)
    assert shape(folded) == shape(expected) == {"e0": (["e0"], []), "A": ([r["id"] for r in earlier], ["F"]),
                                                "F": (["F"], ["A"])}


def test_the_related_pages_a_verdict_names_count_toward_the_cap_across_a_restart(tmp_path):
    """L went out unique, related to R0-R2 (its answer's). Seven related pages found after: 5 `late_related` events
    (R3-R7, in the order they came), then R8 and R9 left out (`RelatedLeftOut`), once each though told again, and
    after a restart too."""
    gather = GatherPartition(tmp_path / "g")
    l_order = page_order(20, 20, 0, 0)
    gather.add_header(PageHeader("L", l_order, (0,), {}, "t"), at_ms=1000)
    answer = Answer("L", l_order, 0, earlier=tuple(related(f"R{i}", i + 1) for i in range(3)))
    assert gather.add_answer(answer, at_ms=1000) == []
    [released] = gather.add_watermark(0, page_order(21, 21, 0, 0))
    assert isinstance(released, Decided) and released.dedup["related_to"] == ["R0", "R1", "R2"]
    gather.commit()
    told = [item for i in range(3, 9) for item in gather.add_supplement(Supplement("L", l_order, related(f"R{i}", i)))]
    assert [item.event["related_to"] for item in told if isinstance(item, LateMatch)] == [
        [f"R{i}"] for i in range(3, 3 + MAX_NAMED - 3)]
    assert told[-1] == RelatedLeftOut("L", LATE_PAGE)
    assert gather.add_supplement(Supplement("L", l_order, related("R8", 8))) == []  # another partition's: once
    gather.commit()
    gather.close()
    gather = GatherPartition(tmp_path / "g")
    assert gather.add_supplement(Supplement("L", l_order, related("R9", 9))) == [RelatedLeftOut("L", LATE_PAGE)]
    assert gather.add_supplement(Supplement("L", l_order, related("R8", 8))) == []
    gather.close()
