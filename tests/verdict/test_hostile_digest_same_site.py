"""An attacker's digest followed by his own copies of its stories, on his own site, merges two real stories.

Review of 0.29.0: stories A and B on their own sites, the attacker's page holding both
after them, then his copy of A and his copy of B on the digest's site. Each copy is the duplicate
of its story's page and is held by the digest; a page of the digest's own site bridges its cluster
whatever its share (`engine.bridges`: `same_site`, for a view-all page or another fetch of its
URL), so the copy of A bridges the digest into A's story and the copy of B into B's: one story.
`python bench/hostile/digest_merges.py samesite,samesite_apart 6`: 6 of 6 seeds merged, stories
sharing a ~100-word quote (rules version 33's mark does not stop a same-site bridge) or sharing
nothing; the same 6 of 6 before rules version 33. Copies on other sites
(`plain`): 0 of 6. docs/limitations.md, Hostile pages.
"""

from __future__ import annotations

import pytest
from story_pages import story_of, story_page

from streamdedup.testing import make_article, run_records


@pytest.mark.xfail(strict=True, reason="a same-site copy bridges its site's digest (docs/limitations.md)")
@pytest.mark.parametrize("seed", [1, 2])
def test_the_attackers_own_copies_after_his_digest_do_not_merge_two_stories(tmp_path, seed):
    first, second = make_article(seed, paragraphs=8, sentences=3), make_article(seed + 300, paragraphs=8, sentences=3)
    records = [story_page("A", "alpha.example", first, "08:00"), story_page("B", "beta.example", second, "08:10"),
               story_page("D", "evil.example", first + second, "08:30"),
               story_page("A2", "evil.example", first, "08:40"), story_page("B2", "evil.example", second, "08:50")]
    parents: dict[str, str] = {}
    for out in run_records(records, tmp_path):
        for cluster in [out.dedup["id"], *(out.dedup.get("merged_clusters") or [])]:
            parents[story_of(parents, cluster)] = story_of(parents, out.dedup["cluster_id"])
    assert story_of(parents, "A") != story_of(parents, "B")
