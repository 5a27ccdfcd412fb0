"""A page of only a passage two different stories both quote merges their stories (docs/limitations.md, Hostile pages).

Two articles on two sites, each of its own story, quote the same two-paragraph statement (a press
release, a wire background passage): they share a quarter of their text, not enough to be related.
A page holding the statement alone, published after both, is a duplicate held by each, most of
neither: a fragment, which bridges its holders' clusters (`engine.joined_roots`, as a teaser heals a
story whose copy was left in a cluster of its own). Anyone can publish it once both stories are out,
and a real press release page does the same. Telling a teaser's holders (a story and its copy:
near copies of one another) from two stories sharing a passage needs the holders compared with each
other, which the engine does not do.
"""

from __future__ import annotations

from typing import Any

import pytest

from streamdedup.testing import make_article, run_records, wrap_in_template


def _page(page_id: str, host: str, paragraphs: list[str], when: str) -> dict[str, Any]:
    return {"id": page_id, "url": f"https://{host}/{page_id}", "fetched_at": f"2026-12-07T{when}:00Z",
            "html": wrap_in_template(paragraphs, host, title=f"Story {page_id}")}


@pytest.mark.xfail(strict=True, reason="a fragment held by two pages bridges their clusters whether or not the two "
                                       "are one story (docs/limitations.md, Hostile pages: 'A passage two stories "
                                       "quote')")
@pytest.mark.parametrize("seed", [20, 21, 22])
def test_a_page_of_a_passage_two_stories_quote_does_not_merge_them(tmp_path, seed):
    statement = make_article(seed + 99, paragraphs=2, sentences=4)
    one, two = make_article(seed, 6), make_article(seed + 50, 6)
    got = {o.dedup["id"]: o.dedup for o in run_records(
        [_page("A", "one.example", one[:3] + statement + one[3:], "08:00"),
         _page("B", "two.example", two[:2] + statement + two[2:], "08:10"),
         {"id": "F", "url": "https://evil.example/statement", "fetched_at": "2026-12-07T09:00:00Z",
          "html": "<html><body><article>" + "".join(f"<p>{p}</p>" for p in statement) + "</article></body></html>"}],
        tmp_path)}
    assert not got["B"].get("related_to"), got["B"]  # two stories
    assert not got["F"].get("merged_clusters"), got["F"]
