"""What the lookup of all of a page's index keys says of its candidates, and which rules each can satisfy.

A method whose keys find every match of its test (`FingerprintMethod.keys_find_every_match`)
cannot pass for a candidate its keys did not find, if that candidate is filed under all of them:
the engine (`relations.judged`) then does not run that method's test for it (`possible_rules`), and
the candidate filter (`verdict.prefilter`) reads `FoundBy` the same way (`found_members`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter, itemgetter

import numpy as np

from streamdedup.store.layout import DocRecord
from streamdedup.verdict.columns import Methods
from streamdedup.verdict.policy import Policy

_UNFILED = attrgetter("unfiled")
_FIRST = itemgetter(0)
NO_PLACE = 1 << 62  # past every place: a record filed under all its keys


@dataclass(frozen=True)
class FoundBy:
    """What the lookup of all of a page's index keys says of its candidates.

    For the methods any of whose matches share one of their keys (`FingerprintMethod.keys_find_every_match`).

    `seqs[tag]`: the candidates that method's keys found; a method with a full key among the
    page's is not there (a full key answers only its first pages). `unfiled_bounds[tag]`: the
    place among a record's sorted names below which that method's names stand (None: no bound;
    a tag not there: none of its names is ever unfiled; `signature_store.place_bounds`). A
    candidate whose first unfiled place (`DocRecord.unfiled`) is below it may not be filed under
    every key of the method: a key full when it came does not hold it, and may no longer be full
    once an expiry took some of its pages."""

    seqs: Mapping[int, set[int] | frozenset[int]]
    unfiled_bounds: Mapping[int, int | None]


def found_members_of(seqs: Sequence[int], stored: Sequence[DocRecord], methods: Methods,
                   found_by: FoundBy) -> dict[int, np.ndarray]:
    """By tag of each method whose keys find every match, which stored candidates can pass its test.

    `found_members` of the `stored` candidates (at `seqs`), their first unfiled places read from
    their records (by `map`, at C speed; the places of each record are ascending)."""
    tags = [tag for tag, method in methods.values() if method.keys_find_every_match]
    return found_members(
        seqs, tags, found_by,
        lambda: np.fromiter([places[0] if places else NO_PLACE for places in map(_UNFILED, stored)],
                            dtype=np.int64, count=len(stored)),
        lambda: min(map(_FIRST, filter(None, map(_UNFILED, stored))), default=NO_PLACE))


def found_members(seqs: Sequence[int], tags: Sequence[int], found_by: FoundBy, firsts: Callable[[], np.ndarray],
                  lowest: Callable[[], int] | None = None) -> dict[int, np.ndarray]:
    """By tag of `tags` (methods whose keys find every match), which of the candidates `seqs` can pass its test.

    How `FoundBy` is read, by the engine (`found_members_of`) and the candidate filter
    (`verdict.prefilter`) alike: a candidate can pass where the method's keys found it, or where it
    may not be filed under all of them (its first unfiled place, `firsts()`, below the method's
    bound). A tag left out rules no candidate out: a full key of the page's is the method's (not in
    `found_by.seqs`), or its keys found every candidate (the usual case). `firsts` is asked at most
    once, and only if `lowest` (the least of them; default: from `firsts`) is below a bound."""
    members: dict[int, np.ndarray] = {}
    least: int | None = None
    places: np.ndarray | None = None
    for tag in tags:
        if (found := found_by.seqs.get(tag)) is None:
            continue
        if found and found.issuperset(seqs):  # its keys found every candidate: it rules none out
            continue
        if least is None:  # asked once for every method
            if lowest is None:
                places = firsts()
                least = int(places.min()) if len(places) else NO_PLACE
            else:
                least = lowest()
        bound = found_by.unfiled_bounds.get(tag, 0)
        bound = NO_PLACE if bound is None else bound
        if least >= bound:  # every candidate filed under all its keys: none a member so far
            # (homogeneous pages: their full keys are other methods'; NO_PLACE is below no bound)
            member = np.zeros(len(seqs), dtype=np.bool_)
        else:
            if places is None:
                places = firsts()
            member = places < bound  # may not be filed under its keys
        if found and not found.isdisjoint(seqs):  # (homogeneous pages: another method's keys found them all)
            member |= np.fromiter(map(found.__contains__, seqs), dtype=np.bool_, count=len(seqs))
        members[tag] = member
    return members


def possible_rules(policy: Policy, methods: Methods, members: Mapping[int, np.ndarray],
                   rows: np.ndarray | None = None) -> list[np.ndarray | None]:
    """For each rule of `policy`, which of the candidates `rows` (None: all) can satisfy it (None: any).

    Those that can pass the test of every method of the rule that `members` (`found_members_of`)
    names."""
    if not members:
        return [None] * len(policy.rules)
    out: list[np.ndarray | None] = []
    for names in policy.rule_methods:
        mask = None
        for name in names:
            if (member := members.get(methods[name][0])) is not None:
                mask = member if mask is None else mask & member
        out.append(mask if mask is None or rows is None else mask[rows])
    return out

