"""The one decision engine: verified candidates + policy -> verdict. Pure; every mode calls it.

File mode, the local topology and the Faust app judge a page against one store; the global
topology judges it in every index partition its keys live in and gathers the answers by page id.
Both go through the same three steps here, so `streamdedup eval` measures what the Kafka worker does:

1. `PairSimilarity`: a candidate (a page sharing any index key) is verified by whichever methods
   the policy's rules ask for, not only by the method whose key brought it: "simhash+a12" needs
   both, wherever the candidate came from. Each test runs when a rule first needs it, in rule order.
2. `SitePolicy.judge`: the first rule the candidate satisfies (own-site candidates by the site
   policy) -> a `Candidate`, with its place in the order and the cluster it belongs to.
3. `decide`: the earliest candidate in the order is what the page duplicates; the page joins the
   oldest cluster among its candidates' clusters (the earliest root), and names the others it
   bridges (`merged_clusters`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from streamdedup.fingerprints.base import FingerprintMethod
from streamdedup.store.layout import DocRecord
from streamdedup.verdict.contract import Verdict
from streamdedup.verdict.policy import SitePolicy


@dataclass(frozen=True)
class Candidate:
    """An earlier page that passed the policy against the page being judged.

    `order` is the candidate's place in the order every mode agrees on (file mode: its sequence
    number; the global topology: its global order bytes); `root_order`/`root_id` name the first
    page of the cluster it belongs to."""

    order: Any  # int or bytes: comparable within one run
    page_id: str
    rule: str
    similarity: float
    root_order: Any
    root_id: str


class PairSimilarity:
    """Each method's verdict on one pair, computed when the policy first asks for it (then kept):
    `mine` are the page's signatures by method tag, `theirs` the candidate's encoded ones. A method
    that abstains on either page, or finds no match, answers None."""

    __slots__ = ("_done", "methods", "mine", "theirs")

    def __init__(self, methods: Mapping[str, tuple[int, FingerprintMethod[Any, Any]]], mine: Mapping[int, Any],
                 theirs: Mapping[int, bytes]) -> None:
        self.methods, self.mine, self.theirs = methods, mine, theirs
        self._done: dict[str, float | None] = {}

    def __call__(self, name: str) -> float | None:
        if name not in self._done:
            tag, method = self.methods[name]
            signature, data = self.mine.get(tag), self.theirs.get(tag)
            self._done[name] = (None if signature is None or data is None
                                else method.similarity(signature, method.decode(data)))
        return self._done[name]


def judged(seqs: Iterable[int], doc_of: Callable[[int], DocRecord | None], policy: SitePolicy,
           methods: Mapping[str, tuple[int, FingerprintMethod[Any, Any]]], page: DocRecord, mine: Mapping[int, Any],
           template_known: bool, oldest_ms: int | None) -> Iterator[tuple[int, DocRecord, tuple[str, float]]]:
    """Steps 1 and 2 for one page (`page`: its id, site; `mine`: its signatures by tag): each stored
    candidate, other than the page itself and inside the retention window, with the rule it
    satisfies. Own-site candidates meet the stricter site policy only while the site's template is
    unknown (its cold start)."""
    for seq in seqs:
        other = doc_of(seq)
        if other is None or other.page_id == page.page_id or (oldest_ms is not None and other.event_ms < oldest_ms):
            continue
        rule = policy.judge(PairSimilarity(methods, mine, other.signatures),
                            other.site == page.site and not template_known)
        if rule is not None:
            yield seq, other, rule


def decide(page_id: str, earlier: Iterable[Candidate]) -> Verdict:
    """The verdict from the page's candidates earlier in the order (none: unique)."""
    ranked = sorted(earlier, key=lambda c: c.order)
    if not ranked:
        return Verdict(page_id, "unique", page_id)
    first = ranked[0]
    roots = sorted({(c.root_order, c.root_id) for c in ranked})
    cluster_id = roots[0][1]
    merged = tuple(dict.fromkeys(root for _, root in roots[1:] if root != cluster_id))
    return Verdict(page_id, "duplicate", cluster_id, first.page_id, first.similarity, first.rule, merged)
