"""A story's capped keys flooded in advance, then its real copies: how many copies are still found.

    python bench/flood.py                       # fill 32 pages a key, 300 copies; JSON to stdout
    python bench/flood.py --out bench/results/flood.json
    python bench/flood.py --smoke               # seconds: a small flood and 40 copies

The attacker knows the code (its hash seeds are the defaults) and the story's text before it is
published, and publishes first. Its pages are crafted from the story (`attack_page`): a random
share of the story's sentences kept verbatim (often its longest, A12's keys), its words shuffled
into new sentences (SimHash votes by word counts, so the page's SimHash stays near the story's),
and a few foreign words. A crafted page is kept if it shares a key with the story that holds fewer
than `--fill` attacker pages yet and no rule of the default policy holds between them (it must
not be the story's duplicate, or the copies would still be found as duplicates of it). The flood
stops once every key of the story the attacker can reach holds `--fill` pages, or after
`--budget` crafted pages. Then the story itself (on its own site), then `--copies` real copies:
each in another site's template, 2-5 % of its words changed, a third with a paragraph dropped.

Reported: the attacker's pages and how many of the story's keys they filled (by method), the
story's verdict, how many copies joined the story's cluster (`copies_found`), and the work per
page of the copies (candidates found and verified: bounded whatever the flood). Run it on two
checkouts to compare a cap policy with another; `--fill` should be the store's cap (32).
Deterministic: the same arguments give the same pages and the same figures.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from streamdedup.config import DetectorConfig
from streamdedup.detector import Detector
from streamdedup.fingerprinter import Fingerprinted
from streamdedup.fingerprints.minhash import MinHashMethod
from streamdedup.fingerprints.simhash import hamming
from streamdedup.store import candidates
from streamdedup.testing import make_article, make_words, raw_records, wrap_in_template


def page(url: str, content: str, second: int) -> dict[str, Any]:
    """A record fetched `second` seconds into the crawl."""
    return {"url": url, "content": content,
            "fetched_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(1_709_251_200 + second))}


def sentences_of(paragraphs: list[str]) -> list[str]:
    return [s for p in paragraphs for s in re.findall(r"[^.]+\.", p)]


def reduced(story: list[str], kept: set[int]) -> list[str]:
    """The story's paragraphs with only the sentences numbered in `kept` (in the story's order)."""
    out, number = [], 0
    for paragraph in story:
        mine = []
        for sentence in re.findall(r"[^.]+\.", paragraph):
            if number in kept:
                mine.append(sentence.strip())
            number += 1
        if mine:
            out.append(" ".join(mine))
    return out


def attack_page(rng: random.Random, story: list[str], kept: set[int], longest: set[int], foreign: list[str]) -> list[str]:
    """Paragraphs crafted from the story: some of its sentences verbatim (`kept`, and others at
    random), its words shuffled into new sentences, a few foreign words."""
    sentences = sentences_of(story)
    share = rng.uniform(0.0, 0.4) if kept else rng.uniform(0.25, 0.6)
    kept = kept | {i for i in range(len(sentences)) if rng.random() < share}
    if rng.random() < 0.5:
        kept |= longest
    words = " ".join(sentences).lower().replace(".", "").split()
    rng.shuffle(words)
    filler = words[: int(len(words) * rng.uniform(0.2, 0.6))]
    filler += rng.choices(foreign, k=int(len(filler) * rng.uniform(0.05, 0.3)))
    rng.shuffle(filler)
    made = [" ".join(filler[i: i + 15]).capitalize() + "." for i in range(0, len(filler), 15)]
    return reduced(story, kept) + [" ".join(made[i: i + 5]) for i in range(0, len(made), 5)]


def band_sentences(oracle: Detector, story: list[str], keys: list[int], seed: int) -> dict[int, set[int]]:
    """For each MinHash key of the story, a small set of its sentences whose page alone still has
    that key (sentences taken out one at a time while the key stays): what the attacker copies to
    hit one band without most of the story's text."""
    count = len(sentences_of(story))
    found: dict[int, set[int]] = {}
    for key in keys:
        kept = set(range(count))
        order = list(range(count))
        random.Random(seed + key % 1000).shuffle(order)
        for number in order:
            trial = kept - {number}
            _, (names,) = names_of(oracle, [page("https://probe.example/", wrap_in_template(
                reduced(story, trial), "Probe", "The story"), 0)])
            if key in set(names.tolist()):
                kept = trial
        found[key] = kept
    return found


def light_edit(rng: random.Random, paragraphs: list[str], vocabulary: list[str]) -> list[str]:
    """A real copy: 1-3 % of its words replaced (light edits: a duplicate's new text stays within
    `max_new_share`), a third of the copies without one paragraph."""
    rate = rng.uniform(0.01, 0.03)
    edited = [" ".join(rng.choice(vocabulary) if rng.random() < rate else w for w in p.split()) for p in paragraphs]
    if rng.random() < 1 / 3:
        del edited[rng.randrange(len(edited))]
    return edited


def names_of(detector: Detector, records: list[dict[str, Any]]) -> tuple[list[Fingerprinted], list[np.ndarray]]:
    """Each page's signatures and index names (48-bit integers) as the store files them."""
    pages = [p for p in detector.prepare_many(raw_records(records)) if isinstance(p, Fingerprinted)]
    encoded = [detector._encoded(fp) for fp in pages]
    names, ends = detector.store.index_name_ints_of_records(encoded)
    return pages, np.split(names, ends[:-1])


def far(detector: Detector, a: Fingerprinted, b: Fingerprinted) -> bool:
    """Whether two pages are far from any rule of the default policy, with a margin (so that the
    story's light edits do not match the page either): MinHash's Jaccard under 0.35 and the smaller
    page's containment under 0.7, SimHash 7 bits apart or more, not the same text."""
    minhash: MinHashMethod = detector.methods_by_name["minhash"][1]  # type: ignore[assignment]
    x, y = a.signatures["minhash"], b.signatures["minhash"]
    jaccard = minhash.jaccard(x, y)
    contained = minhash.containment_of_smaller(jaccard, x.set_size, y.set_size)
    bits = hamming(a.signatures["simhash"], b.signatures["simhash"])
    return jaccard < 0.35 and contained < 0.7 and bits >= 7 and a.signatures["exact"] != b.signatures["exact"]


def run(fill: int, copies: int, budget: int, seed: int, cap: int | None = None,
        bands: int | None = None) -> dict[str, Any]:
    """The flood, the story and its copies in a fresh store (`cap`: the store's pages a key, if not
    its own; `bands`: how many of the story's MinHash bands the attacker aims at, None: all)."""
    if cap is not None:
        candidates.MAX_POSTINGS_PER_KEY = cap
    rng = random.Random(seed)
    story = make_article(seed, paragraphs=8)
    sentences = sentences_of(story)
    vocabulary = sorted({w for s in sentences for w in s.lower().replace(".", "").split()})
    foreign = make_words(random.Random(seed + 1), 2000)
    original = page("https://wire.example/2024/story", wrap_in_template(story, "Wire", "The story"), 100_000)
    config = DetectorConfig()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        with Detector(config, Path(scratch) / "oracle") as oracle:
            (story_fp,), (story_names,) = names_of(oracle, [original])
            story_keys = set(story_names.tolist())
            held = dict.fromkeys(story_keys, 0)
            minhash_tag = oracle.methods_by_name["minhash"][0]
            targets = band_sentences(oracle, story, sorted(n for n in story_keys if n >> 40 == minhash_tag), seed)
            if bands is not None:  # fewer bands: the story meets full keys for under half its keys
                targets = {key: targets[key] for key in sorted(targets)[:bands]}
            numbered = sentences_of(story)
            longest = {i for i, s in enumerate(numbered) if s in set(sorted(numbered, key=len, reverse=True)[:3])}
            flood: list[dict[str, Any]] = []
            crafted = 0
            while crafted < budget and any(count < fill for count in held.values()):
                open_bands = [key for key in targets if held[key] < fill]
                tried = [page(f"https://spam{crafted + i}.example/p", wrap_in_template(
                    attack_page(rng, story, set().union(*(targets[k] for k in rng.sample(
                        open_bands, min(len(open_bands), rng.randint(1, 3))))) if open_bands and rng.random() < 0.7
                        else set(), longest, foreign), f"Spam{crafted + i}", "The story"), len(flood))
                    for i in range(256)]
                crafted += len(tried)
                pages, names = names_of(oracle, tried)
                for record, fp, page_names in zip(tried, pages, names, strict=True):
                    hits = [n for n in set(page_names.tolist()) & story_keys if held[n] < fill]
                    if hits and far(oracle, fp, story_fp):
                        for n in set(page_names.tolist()) & story_keys:
                            held[n] += 1
                        record["fetched_at"] = page("", "", len(flood))["fetched_at"]
                        flood.append(record)
        tags = {tag: name for name, (tag, _) in oracle.methods_by_name.items()}
        by_method: dict[str, dict[str, int]] = {}
        for name, count in held.items():
            method = by_method.setdefault(tags[name >> 40], {"keys": 0, "filled": 0})
            method["keys"] += 1
            method["filled"] += int(count >= fill)
        crafting_s = time.perf_counter() - started
        copy_rng = random.Random(seed + 2)
        copy_records = [page(f"https://site{i}.example/news/{i}", wrap_in_template(
            light_edit(copy_rng, story, vocabulary), f"Site{i}", f"The story, copy {i}"), 200_000 + i)
            for i in range(copies)]
        with Detector(config, Path(scratch) / "store") as detector:
            flood_out = list(detector.run(raw_records(flood)))
            flood_work = detector.work_per_page()
            (story_out,) = detector.run(raw_records([original]))
            before = dict(detector.work)
            outcomes = list(detector.run(raw_records(copy_records)))
            copy_pages = detector.work["pages"] - before["pages"]
            copy_work = {count: round((detector.work[count] - before.get(count, 0)) / max(1, copy_pages), 2)
                         for count in ("candidates_found", "candidates_verified", "tests_run")}
            copy_work["candidates_found_max"] = detector.work["max_candidates_found"]
            copy_work["pages_over_candidate_limit"] = (detector.work["pages_over_candidate_limit"]
                                                       - before.get("pages_over_candidate_limit", 0))
            memory = detector.store.memory.counts()
    cluster = story_out.dedup["cluster_id"]
    attacker_ids = {o.dedup.get("cluster_id") for o in flood_out}
    found = sum(o.dedup.get("cluster_id") == cluster for o in outcomes)
    return {
        "fill": fill, "cap": candidates.MAX_POSTINGS_PER_KEY, "copies": copies, "seed": seed, "bands": bands,
        "attacker_pages": len(flood), "crafted": crafted, "story_keys": by_method,
        "story_status": story_out.dedup["status"],
        "copies_found": found,
        "copies_unique": sum(o.dedup.get("status") == "unique" for o in outcomes),
        "copies_in_attacker_clusters": sum(o.dedup.get("cluster_id") in attacker_ids for o in outcomes),
        "copies_other": sum(o.dedup.get("cluster_id") != cluster and o.dedup.get("status") != "unique"
                            and o.dedup.get("cluster_id") not in attacker_ids for o in outcomes),
        "flood_work_per_page": flood_work, "copy_work_per_page": copy_work, "index": memory,
        "crafting_seconds": round(crafting_s, 1), "seconds": round(time.perf_counter() - started, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fill", type=int, default=32, help="attacker pages a key of the story (the store's cap)")
    parser.add_argument("--copies", type=int, default=300)
    parser.add_argument("--budget", type=int, default=20_000, help="crafted pages at most")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--bands", type=int, help="of the story's MinHash bands, how many the attacker aims at (all)")
    parser.add_argument("--cap", type=int, help="the store's pages a key (MAX_POSTINGS_PER_KEY), for small runs")
    parser.add_argument("--smoke", action="store_true", help="a small run: --cap 8 --fill 8 --copies 40 --budget 3000")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    if args.smoke:
        args.cap, args.fill, args.copies, args.budget = 8, 8, 40, 3000
    result = run(args.fill, args.copies, args.budget, args.seed, args.cap, args.bands)
    from report_io import print_report  # bench/, here: tests load this file without bench/ on the path

    print_report(result, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
