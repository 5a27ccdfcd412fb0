"""bench/site_crawl.py: the site crawl is a function of its seed, its sizes follow the Zipf law
asked for, and its gold holds (on small made-up sites: the real pages take ~10 s to load)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import orjson

from streamdedup.evaluate.pages import SourcePage

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("site_crawl", ROOT / "bench" / "site_crawl.py")
assert _spec is not None and _spec.loader is not None
site_crawl = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(site_crawl)

WORDS = ("river harbour council market bridge garden school station museum library festival "
         "winter summer north south village city square park tower road field forest valley").split()


def sentence(seed: int, length: int) -> str:
    return " ".join(WORDS[(seed * 7 + i * (seed % 5 + 1)) % len(WORDS)] + str(seed) for i in range(length)) + "."


def site(number: int) -> SourcePage:
    """A real-looking page of its own site: navigation, an article of three paragraphs, a footer."""
    paragraphs = tuple(sentence(number * 10 + i, 12) for i in range(3))
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    html = (f"<html><head><title>Site {number}</title></head><body><nav class='menu{number}'>"
            f"<a href='/'>Home {number}</a> <a href='/news'>News of site {number}</a></nav>"
            f"<div class='story'><h1>Headline {number}</h1>{body}</div>"
            f"<footer>Copyright site {number}, all rights reserved.</footer></body></html>")
    return SourcePage(name=f"site-{number}", source=html, paragraphs=paragraphs, title=f"Headline {number}",
                      lang="en", site=f"site{number}", corpus="readability")


def crawl(seed: int) -> list[dict]:
    sources = [site(n) for n in range(40)]  # each a template and an article of ~36 words (parts of 10)
    return site_crawl.build_site_crawl(sources, seed=seed, sites=5, pages=60, largest=30, smallest=4, words=10)


def test_the_crawl_is_its_seeds_and_follows_the_zipf_law():
    first, again, other = crawl(1), crawl(1), crawl(2)
    assert orjson.dumps(first) == orjson.dumps(again)
    assert orjson.dumps(first) != orjson.dumps(other)
    sizes = site_crawl.zipf_sizes(5, 60, 30, 4)
    assert sizes[0] == 30 and sizes[-1] == 4 and sizes == sorted(sizes, reverse=True)
    assert abs(sum(sizes) - 60) <= 2
    per_rank: dict[int, int] = {}
    for record in first:
        per_rank[record["site_rank"]] = per_rank.get(record["site_rank"], 0) + 1
    assert [per_rank[rank] for rank in range(1, 6)] == sizes
    assert [r["fetched_at"] for r in first] == sorted(r["fetched_at"] for r in first)


def test_every_original_is_its_own_article_and_every_recrawl_fetches_one_again():
    records = crawl(3)
    by_id = {r["id"]: r for r in records}
    originals = [r for r in records if r["variant"] == "original"]
    assert len({r["cluster"] for r in originals}) == len(originals)  # no two pages share an article
    recrawls = [r for r in records if r["variant"] == "recrawl"]
    assert len(recrawls) == sum(max(1, round(s * 0.1)) for s in site_crawl.zipf_sizes(5, 60, 30, 4))
    for page in recrawls:
        first = by_id[page["recrawl_of"]]
        assert first["variant"] == "original" and first["cluster"] == page["cluster"]
        assert first["url"] == page["url"] and first["fetched_at"] < page["fetched_at"]
        assert (page["content"] != first["content"]) == (page["boilerplate_changed"] or page["redesigned"] !=
                                                          first["redesigned"])
    biggest = sorted((r for r in records if r["site_rank"] == 1), key=lambda r: r["fetched_at"])
    switched = [r["redesigned"] for r in biggest]
    assert switched == sorted(switched) and 0 < sum(switched) < len(switched)  # one redesign, midway
    assert len({r["template"] for r in biggest}) == 2
    assert not any(r["redesigned"] for r in records if r["site_rank"] != 1)


def test_scoring_counts_false_pairs_and_recrawls_found(tmp_path):
    records = crawl(4)
    recrawl = next(r for r in records if r["variant"] == "recrawl")
    others = [r for r in records if r["cluster"] != recrawl["cluster"]]
    verdicts = [{"id": r["id"], "dedup": {"status": "unique", "duplicate_of": None, "cluster_id": r["id"]}}
                for r in records if r["variant"] == "original"]
    verdicts += [{"id": r["id"], "dedup": {"status": "duplicate", "duplicate_of": r["recrawl_of"],
                                           "cluster_id": r["recrawl_of"]}}
                 for r in records if r["variant"] == "recrawl" and r is not recrawl]
    verdicts.append({"id": recrawl["id"], "dedup": {"status": "duplicate", "duplicate_of": others[0]["id"],
                                                    "cluster_id": others[0]["id"]}})
    path = tmp_path / "verdicts.jsonl"
    path.write_bytes(b"".join(orjson.dumps(v) + b"\n" for v in verdicts))
    scores = site_crawl.score(records, path)
    assert scores["false_pairs"] == 1 and scores["false_pair_examples"][0]["page"] == recrawl["id"]
    assert scores["recrawls_found"] == scores["recrawls"] - 1
    assert scores["recrawls_missed_examples"] == [recrawl["id"]]
