"""Combining methods into one decision.

A policy is a list of rules; a rule is a set of methods that must *all* match the same earlier
page. A page duplicates the earliest page that satisfies any rule. Written as text:
"exact | minhash | simhash+a12" = an exact match, or a MinHash match, or SimHash and A12
agreeing. Single-method rules give recall; conjunctions give precision where one method alone is
too loose.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping


@dataclass(frozen=True)
class Verdict:
    page_id: str
    status: str  # "unique" | "duplicate"
    cluster_id: str
    duplicate_of: str | None = None
    similarity: float | None = None
    method: str | None = None
    merged_clusters: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.page_id,
            "status": self.status,
            "duplicate_of": self.duplicate_of,
            "similarity": None if self.similarity is None else round(self.similarity, 4),
            "method": self.method,
            "cluster_id": self.cluster_id,
        }
        if self.merged_clusters:
            out["merged_clusters"] = list(self.merged_clusters)
        return out


@dataclass(frozen=True)
class Decision:
    seq: int
    rule: str
    similarity: float


@dataclass(frozen=True)
class Policy:
    rules: tuple[tuple[str, ...], ...]

    @classmethod
    def parse(cls, text: str) -> "Policy":
        rules = tuple(tuple(m.strip() for m in rule.split("+") if m.strip())
                      for rule in text.split("|") if rule.strip())
        if not rules:
            raise ValueError(f"empty policy {text!r}: write rules like 'exact|minhash|simhash+a12'")
        return cls(rules)

    @classmethod
    def any_of(cls, methods: Iterable[str]) -> "Policy":
        return cls(tuple((m,) for m in methods))

    def __str__(self) -> str:
        return "|".join("+".join(rule) for rule in self.rules)

    @property
    def methods(self) -> set[str]:
        return {m for rule in self.rules for m in rule}

    def decide(self, matches: Mapping[int, Mapping[str, float]]) -> Decision | None:
        """`matches[seq][method] = similarity` for every verified candidate; earliest seq wins."""
        for seq in sorted(matches):
            by_method = matches[seq]
            for rule in self.rules:
                if all(m in by_method for m in rule):
                    return Decision(seq, "+".join(rule), by_method[rule[0]])
        return None

    def matching_seqs(self, matches: Mapping[int, Mapping[str, float]]) -> list[int]:
        return [seq for seq in sorted(matches)
                if any(all(m in matches[seq] for m in rule) for rule in self.rules)]
