"""Combining methods into one decision.

A policy is a list of rules; a rule is a set of methods that must *all* match the same earlier
page, each optionally with a stricter minimum similarity. A page duplicates the earliest page
that satisfies any rule. Written as text: "exact | minhash | simhash+a12" = an exact match, or a
MinHash match, or SimHash and A12 agreeing; "minhash>=0.8" asks for an estimated Jaccard of 0.8.
A term can also name another measure of a method's signatures: "minhash.containment>=0.95" asks
that the smaller page be 95 % contained in the larger (`FingerprintMethod.measures`; docs/design.md
says why the default same-site policy pairs it with "minhash>=0.4").

Two pages of one site share its template, and whatever boilerplate the extractor leaves inflates
their similarity (measured on the dev set: same-site different articles reach Jaccard 0.74,
same-site copies start at 0.83, cross-site copies go down to 0.4). So candidates from the same
site are judged by a stricter second policy.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

import numpy as np

Term = tuple[str, float]  # (method, minimum similarity)
Similarity = Callable[[str], "float | None"]  # method name -> its similarity for one pair (None: no match)
# (method name, rows) -> the method's similarity for those candidates of a page (NaN: no match)
Similarities = Callable[[str, np.ndarray], np.ndarray]


def _parse_term(text: str) -> Term:
    name, sep, minimum = text.partition(">=")
    try:
        term = name.strip(), float(minimum) if sep else 0.0
    except ValueError:
        raise ValueError(f"bad policy term {text!r}: write METHOD or METHOD>=NUMBER") from None
    if not 0.0 <= term[1] <= 1.0:  # every method's similarity is in [0, 1]: the rule would never hold, or always
        raise ValueError(f"bad policy term {text.strip()!r}: a minimum is a similarity between 0 and 1 "
                         f"(e.g. {term[0]}>=0.8)")
    if "." in term[0] and not sep:  # a measure has no threshold of its own: every pair would pass
        raise ValueError(f"policy term {text.strip()!r} names a measure without a minimum: "
                         f"write {term[0]}>=NUMBER (e.g. {term[0]}>=0.95)")
    return term


class NewText(NamedTuple):
    """A page's text absent from another: its share of its word pairs, their count, its longest new paragraph.

    `paragraph`: the words of the page's longest paragraph none of whose sketch values are in the
    other page's paragraphs (`new_text.new_paragraphs`; 0: none, or not measured)."""

    share: float
    pairs: float
    paragraph: int = 0
    replaced: bool = False  # a new paragraph of one page stands in the place of one of the other's
    # the longest new paragraph with those at a copy's edges counted too, which `paragraph` leaves
    # out under `EDGE_PARAGRAPH_WORDS` as a host's lines (`line_places.counted_new`); 0: none, or not measured
    edge: int = 0
    # a paragraph states other numbers than its counterpart in the other page (`new_text.numbers_changed`)
    numbers_changed: bool = False
    # a new paragraph inside the copy where the other page has none it lacks (`line_places.inserted_line`)
    inserted: bool = False

    def edges_counted(self) -> NewText:
        """The same, its new paragraphs at the edges counted too."""
        return self._replace(paragraph=max(self.paragraph, self.edge))


# an edit of a few words leaves a paragraph within this many words of its length (`exceeded_by`)
EDITED_LENGTH = 3


@dataclass(frozen=True)
class NewTextTolerance:
    """How much new text a duplicate may hold.

    New text counts once it is more than `max_share` of the page AND more than `max_pairs` word
    pairs (an update stamp, a few words). Either alone would be wrong: a share alone calls a 60-word
    brief with a date line new, a count alone lets a long article hide a new paragraph. Not more
    pairs: in a site's first pages, before its template is known, a brief's own 20 words beside the
    template read ~15 pairs new, as much as a correction note. NaN (not measured) counts as none.

    A new paragraph of at least `min_paragraph_words` words is new text whatever its share: on a
    long page a paragraph is under a tenth, and the share's error (~0.03) is as large as it. A
    correction note or an appended sentence is 6-18 words, a replaced or appended paragraph 20 or
    more (0: not asked). Words are word-equivalents (`paragraph_rows.letter_units`): a Korean or
    Malayalam paragraph says as much as an English one of twice its tokens."""

    max_share: float = 0.10
    max_pairs: int = 8
    min_paragraph_words: int = 20

    def exceeded_by(self, new: NewText) -> bool:
        """Whether `new` (the page's text absent from the other) is more than a duplicate may hold.

        A new paragraph in the place of one of the other's (`new.replaced`: each page has a
        paragraph the other lacks, where the other's stood) is new text at any length the sketch
        keeps (12+ words). A correction note or an "Updated" line is added beside the text; a
        light edit keeps some of a paragraph's values, so neither leaves a paragraph of the other
        page missing. A number replaced by another in a paragraph (`new.numbers_changed`) is a fact
        the other page does not state, at any share."""
        if new.numbers_changed:
            return True
        if self.min_paragraph_words and new.paragraph:
            if new.paragraph >= self.min_paragraph_words or new.replaced or new.inserted:
                return True
        return bool(new.share > self.max_share and new.pairs > self.max_pairs)


@dataclass(frozen=True)
class Policy:
    """A policy: rules, any one of which links a page to a candidate when all its terms hold.

    Written as text (`parse`): `|` between rules, `+` between a rule's terms, e.g. `exact|minhash|simhash+a12`."""

    rules: tuple[tuple[Term, ...], ...]

    @classmethod
    def parse(cls, text: str) -> Policy:
        """The policy a text of rules gives ('exact|minhash|simhash+a12': | is or, + is and), or a ValueError."""
        if not text.replace("|", "").strip():
            raise ValueError(f"empty policy {text!r}: write rules like 'exact|minhash|simhash+a12'")
        terms = [rule.split("+") for rule in text.split("|")]
        if not all(term.strip() for rule in terms for term in rule):  # 'exact||minhash', 'exact+': a slip
            raise ValueError(f"bad policy {text!r}: a '|' or '+' with no method on one side: write rules like "
                             "'exact|minhash|simhash+a12' (| = or, + = and)")
        return cls(tuple(tuple(_parse_term(term) for term in rule) for rule in terms))

    def __str__(self) -> str:
        return "|".join("+".join(m if not low else f"{m}>={low:g}" for m, low in rule) for rule in self.rules)

    @property
    def methods(self) -> set[str]:
        """The methods whose signatures the rules read ("minhash.containment" reads minhash's)."""
        return {method for methods in self.rule_methods for method in methods}

    @cached_property
    def rule_methods(self) -> tuple[tuple[str, ...], ...]:
        """Each rule's methods, once each ("minhash.containment" is minhash's).

        What a candidate's keys say of a rule (`found_by.possible_rules`), asked once a page and
        group."""
        return tuple(tuple(dict.fromkeys(m.partition(".")[0] for m, _ in rule)) for rule in self.rules)

    @property
    def measures(self) -> set[tuple[str, str]]:
        """(method, measure) of each term that names another measure than the method's own."""
        return {(method, measure) for rule in self.rules for m, _ in rule
                for method, _, measure in [m.partition(".")] if measure}

    def first_rule(self, similarity: Similarity) -> tuple[Term, ...] | None:
        """The first rule all of whose methods hold.

        Each method's similarity is asked for only when a rule needs it, and a rule fails at its
        first method that does not hold, so a candidate costs the cheap tests first (policy order)
        and no test twice (the caller memoises)."""
        for rule in self.rules:
            if all((value := similarity(m)) is not None and value >= low for m, low in rule):
                return rule
        return None

    def first_rules(self, similarities: Similarities, count: int,
                    possible: Sequence[np.ndarray | None] | None = None) -> np.ndarray:
        """`first_rule` for `count` candidates at once: each one's rule number (-1: none).

        A method is asked only for the candidates a rule still needs it for (not yet matched by an
        earlier rule, and holding every earlier method of this rule): the same tests, in the same
        order, as `first_rule` candidate by candidate, each on many candidates at once.
        `possible[n]` (None: all): the candidates rule n can hold for, known without a test
        (`found_by.possible_rules`); it is not tested for the others."""
        rule_of = np.full(count, -1)
        undecided = np.arange(count)
        for number, rule in enumerate(self.rules):
            mask = possible[number] if possible is not None else None
            alive = undecided if mask is None else undecided[mask[undecided]]
            for method, low in rule:
                if not alive.size:
                    break
                alive = alive[similarities(method, alive) >= low]  # NaN (no match) fails
            if alive.size:
                rule_of[alive] = number
                undecided = undecided[rule_of[undecided] < 0]
            if not undecided.size:
                break
        return rule_of


@dataclass(frozen=True)
class SitePolicy:
    """Judge other sites' and the page's own site's candidates, capped by `max_new_share`.

    `other_site` judges candidates from other sites, `same_site` those from the page's own
    (while its template is unknown); a match is a duplicate only when at most `max_new_share` of the
    page's text is absent from it (`relations.relation`)."""

    other_site: Policy
    same_site: Policy
    max_new_share: float = 0.10
    max_new_pairs: int = 8
    min_new_paragraph_words: int = 20

    @classmethod
    def parse(cls, other_site: str, same_site: str, max_new_share: float = 0.10, max_new_pairs: int = 8,
              min_new_paragraph_words: int = 20) -> SitePolicy:
        """The two policies (other site, same site) and the new-text tolerance from their texts and limits."""
        return cls(Policy.parse(other_site), Policy.parse(same_site), max_new_share, max_new_pairs,
                   min_new_paragraph_words)

    @cached_property
    def tolerance(self) -> NewTextTolerance:
        """How much new text a duplicate may have (`NewTextTolerance`, from the limits)."""
        return NewTextTolerance(self.max_new_share, self.max_new_pairs, self.min_new_paragraph_words)

    @property
    def methods(self) -> set[str]:
        """The methods either policy's rules name."""
        return self.other_site.methods | self.same_site.methods

    def judge(self, similarity: Similarity | Mapping[str, float], same_site: bool) -> tuple[str, float] | None:
        """One candidate: the label of the first rule it satisfies and that rule's similarity.

        `similarity(method)` is the method's similarity for the pair (None: no match), or a mapping."""
        ask = similarity.get if isinstance(similarity, Mapping) else similarity
        rule = (self.same_site if same_site else self.other_site).first_rule(ask)
        if rule is None:
            return None
        value = ask(rule[0][0])
        assert value is not None
        return "+".join(m for m, _ in rule), value
