"""A newsroom's own pages that read as digests (rules versions 36 and 37): what its stories become.

A digest is a page over pages of two or more stories that bridged none (`engine.started_digest`); no
page of its site bridges its cluster for being of its site, nor a fragment for being one (`bridges`).
A newsroom publishes such pages too: a briefing of two wire stories, then its own copy of each (kept
apart now, one story before rules 36); a view-all page of an article whose parts ran on the wire as
two stories, then its own `?page=1` and `?page=2` (one story before rules 36; now the view-all page
joins only the part most of it: to the engine its parts are the attacker's copies of two stories on
his digest's site, which it cannot tell apart from them).
"""

from __future__ import annotations

import pytest
from story_pages import story_of, story_page, story_parents

from streamdedup.testing import make_article, run_records


def test_a_briefing_of_two_wire_stories_then_its_own_copy_of_each_keeps_them_apart(tmp_path):
    """Before rules version 36 the paper's copy of each bridged its briefing's cluster (of its site): one story."""
    first, second = make_article(5, paragraphs=8, sentences=3), make_article(305, paragraphs=8, sentences=3)
    records = [story_page("A", "apwire.example", first, "06:00"), story_page("B", "reuters.example", second, "06:10"),
               story_page("BR", "paper.example", first + second, "07:00"),
               story_page("AS", "paper.example", first, "08:00"), story_page("BS", "paper.example", second, "08:10")]
    outcomes = run_records(records, tmp_path)
    verdicts = {out.dedup["id"]: out.dedup for out in outcomes}
    assert [verdicts[p]["duplicate_of"] for p in ("AS", "BS")] == ["A", "B"]
    parents = story_parents(outcomes)
    assert story_of(parents, "A") != story_of(parents, "B")


@pytest.mark.xfail(strict=True, reason="its parts read as copies of two stories on a digest's site (rules 36, 38)")
@pytest.mark.parametrize("own_part_first", [False, True])
def test_a_view_all_page_whose_parts_ran_on_the_wire_joins_all_its_parts(tmp_path, own_part_first):
    """The wire's two parts, then the paper's view-all page (a digest of them), then its `?page=1` and `?page=2`.

    Before rules version 36 each part bridged the view-all page's cluster (of its site): one story. Now
    the part under half of it bridges it no more: {W1, V, P1} and {W2, P2}. With its own `?page=3` first
    (the view-all page joins it, its part) it was one story until rules version 38, which marks a page
    that joins its part and leaves two stories (the attacker's own page, then his digest of it and two
    stories): now {W1, P1} and the rest."""
    article = make_article(905, paragraphs=8, sentences=3)
    view_all = "https://paper.example/a/V"
    parts = [article[:3], article[3:6], article[6:]] if own_part_first else [article[:4], article[4:]]
    records = [story_page("W1", "apwire.example", parts[0], "06:00"), story_page("W2", "reuters.example", parts[1], "06:10"),
               {**story_page("V", "paper.example", article, "07:00"), "url": view_all},
               {**story_page("P1", "paper.example", parts[0], "07:10"), "url": f"{view_all}?page=1"},
               {**story_page("P2", "paper.example", parts[1], "07:20"), "url": f"{view_all}?page=2"}]
    if own_part_first:
        records.insert(0, {**story_page("P3", "paper.example", parts[2], "05:50"), "url": f"{view_all}?page=3"})
    outcomes = run_records(records, tmp_path)
    verdicts = {out.dedup["id"]: out.dedup for out in outcomes}
    # the layout: a digest of the wire's parts, of its own part's cluster where it came first
    assert verdicts["V"]["cluster_id"] == ("P3" if own_part_first else "V"), verdicts["V"]
    parents = story_parents(outcomes)
    assert story_of(parents, "V") == story_of(parents, "P1") == story_of(parents, "P2")
