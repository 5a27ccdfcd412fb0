"""How often a paragraph of a story, new to a fetch that lacked it, reads as found by chance.

    python bench/counterparts.py [--pages ../shared/data/readability-test-pages.tar.gz] [--trials 10]

For each article of readability's test pages (the text Readability.js extracts, one line a block),
up to `--trials` times: the old fetch is the article less paragraph i; the new fetch is the old
with paragraph i in the place of another, k. Paragraph i shares the story's names and phrases with
the others but is absent from the old fetch: the share of trials in which the paragraph sketch
finds it a counterpart there (`new_text._absent_from`) is content a crawler would lose. Reported
for the whole sketch (every paragraph is judged, on one site or another), beside 0.6.0's rule on
the same trials (a counterpart: one value of 4 anywhere on the page).
Also, the share of lightly edited paragraphs (1 or 2 words replaced) that read as new (they need
a counterpart). Pure CPU; a few seconds. JSON on stdout.
"""

from __future__ import annotations

import argparse
import html
import json
import random
import re
import tarfile
from pathlib import Path

import numpy as np

from streamdedup.fingerprints.paragraph_rows import paragraph_values, paragraph_words
from streamdedup.fingerprints.wordpairs import WordPairsMethod
from streamdedup.tokens.document import Document
from streamdedup.verdict.new_text import _absent_from


def counterpart(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Today's rule on two paragraph sketches: whether each of a's paragraphs is absent from b's."""
    return _absent_from(paragraph_values(a), paragraph_values(b), paragraph_words(a), paragraph_words(b))


def one_value_anywhere(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """0.6.0's rule: a paragraph is absent when none of its k-th values is any paragraph's k-th."""
    values, their_values = paragraph_values(a), paragraph_values(b)
    if not len(values) or not len(their_values):
        return np.zeros(len(values), dtype=bool)
    return ~(values[:, None, :] == their_values[None, :, :]).any(axis=(1, 2))


RULES = {"counterpart": counterpart, "one_value_anywhere_0.6.0": one_value_anywhere}
_BLOCK_END = re.compile(r"(?i)</(p|div|h\d|li|blockquote|pre|tr)>|<br\s*/?>")


def articles(path: Path) -> list[str]:
    """Each test page's expected article as lowercased text, a line a block."""
    texts = []
    with tarfile.open(path) as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            if not member.name.endswith("/expected.html"):
                continue
            data = tar.extractfile(member)
            if data is None:
                continue
            raw = data.read().decode("utf-8", "replace")
            raw = re.sub(r"(?is)<(script|style).*?</\1>", " ", raw)
            raw = html.unescape(re.sub(r"<[^>]+>", " ", _BLOCK_END.sub("\n", raw)))
            texts.append("\n".join(" ".join(line.split()).lower() for line in raw.split("\n") if line.strip()))
    return texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=Path, default=Path("../shared/data/readability-test-pages.tar.gz"))
    parser.add_argument("--trials", type=int, default=10)
    args = parser.parse_args()
    method, rng = WordPairsMethod(), random.Random(3)
    found = {(rule, name): [0, 0] for rule in RULES for name in ("whole",)}
    edits = {(rule, k): [0, 0] for rule in RULES for k in (1, 2)}
    for text in articles(args.pages):
        signature = method.signature(Document.from_text(text))
        if signature is None or len(signature.paragraphs) < 3:
            continue
        sketch = signature.paragraphs
        n = len(sketch)
        for i in rng.sample(range(n), min(n, args.trials)):
            k = rng.choice([x for x in range(n) if x != i])
            old = np.delete(sketch, i)
            new = np.array([sketch[i] if x == k else sketch[x] for x in range(n) if x != i], dtype=np.uint64)
            for name, (a, b) in (("whole", (new, old)),):
                at = np.flatnonzero(a == sketch[i])
                for rule, absent_from in RULES.items():
                    absent = absent_from(a, b)
                    found[rule, name][0] += 1
                    found[rule, name][1] += int(not absent[at[0]])
        for line in text.split("\n"):  # light edits of one paragraph alone
            words = line.split()
            if not 12 <= len(words) <= 60:
                continue
            before = method.signature(Document.from_text(line))
            for changed in (1, 2):
                edited = list(words)
                for _ in range(changed):
                    edited[rng.randrange(len(edited))] = f"zq{rng.randrange(10**6)}"
                after = method.signature(Document.from_text(" ".join(edited)))
                if before is None or after is None or len(before.paragraphs) != 1 or len(after.paragraphs) != 1:
                    continue
                for rule, absent_from in RULES.items():
                    edits[rule, changed][0] += 1
                    edits[rule, changed][1] += int(absent_from(after.paragraphs, before.paragraphs)[0])
    print(json.dumps({rule: {
        "story_paragraph_found_by_chance": {name: {"trials": t, "found": f, "share": round(f / max(t, 1), 4)}
                                            for (r, name), (t, f) in found.items() if r == rule},
        "edited_paragraph_read_as_new": {f"{k}_words": {"paragraphs": t, "new": f, "share": round(f / max(t, 1), 4)}
                                         for (r, k), (t, f) in edits.items() if r == rule}} for rule in RULES}, indent=2))


if __name__ == "__main__":
    main()
