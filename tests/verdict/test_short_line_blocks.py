"""A block of short lines added to an article (a bullet list, a table of results) is new text.

Each line is under the 12 words a line needs to be a paragraph of the sketch, so until the sketch
took a run of such lines as one paragraph only the runs estimate saw them, and a list of 42-70
words inside a long article read within its error (~0.03 of the page): the page was the article's
duplicate, and a crawler dropping it lost the list (issue 57, `bench/review_crawl.py` kind
`lines_added`: 9 of 12). A light edit inside the list, a word changed, stays a duplicate."""

from __future__ import annotations

import numpy as np

from streamdedup.testing import run_records

ARTICLE = [
    "The city council approved a plan on Tuesday evening to protect the low-lying districts along the "
    "river after three winters in which hundreds of homes were flooded, some of them twice in a single "
    "month. The vote followed a long and at times heated debate in which residents of the eastern "
    "neighbourhoods accused officials of ignoring warnings that engineers had made years ago.",
    "Under the plan, which will cost an estimated forty million pounds over the next six years, the "
    "council will work with the national environment agency and two private contractors. Officials "
    "said the first phase would begin before the end of the summer, once the final designs have been "
    "checked by independent engineers and the necessary permits have been granted.",
    "Martha Hughes, who chairs the council's infrastructure committee, said the decision marked a turning "
    "point for families who had spent years moving their furniture upstairs every time heavy rain was "
    "forecast. She told the chamber that the council owed those residents an apology as well as a plan, "
    "and that both were long overdue.",
    "Not everyone was convinced. Several councillors from the opposition benches argued that the money "
    "would be better spent on relocating the most vulnerable households altogether, pointing to studies "
    "suggesting that storms of the kind seen last January will become more frequent as the climate warms. "
    "Their amendment was defeated by eleven votes.",
    "Residents who attended the meeting said they were relieved but cautious. Many of them have heard "
    "promises before, and some said they would believe the scheme was real only when they saw machines "
    "on the riverbank. A local shopkeeper whose premises flooded twice last year said she had lost "
    "thousands of pounds worth of stock and could not afford another bad winter.",
    "The plan sets out a series of measures that the council says will reduce the risk of serious flooding "
    "in the affected streets by more than half within five years. Engineers have modelled the changes "
    "against the worst storms on record and believe the new defences would have kept the water out of "
    "most homes during the floods of the last three winters.",
    "Critics have also questioned whether the council has the staff to deliver a project of this size. The "
    "authority cut its engineering department by a third during the last round of budget savings, and "
    "several senior posts remain unfilled. Officials said they would recruit additional staff on short "
    "contracts and rely on the contractors for much of the detailed design work.",
    "The environment agency welcomed the vote and said it would contribute technical advice and part of "
    "the funding. A spokesman said the river had become one of the most closely watched in the region "
    "and that the agency's own monitoring showed the water rising faster during storms than it had "
    "twenty years ago, partly because of new building upstream.",
    "Work on the first section of the embankment is expected to start in September. The council said it "
    "would hold public meetings in each of the affected neighbourhoods over the coming weeks to explain "
    "the plans, answer questions and hear from residents about the streets where the water has caused "
    "the most damage in recent years.",
    "For the families on the lowest streets, the coming winter will still be an anxious one. The new "
    "defences will not be finished before next spring at the earliest, and the council has advised "
    "residents to keep their own flood boards and pumps ready. A support line will remain open through "
    "the season for anyone who needs help moving belongings or finding temporary accommodation.",
]

LIST = [
    "A new pumping station at Millbrook Lane",
    "Raised embankments along the northern bank of the river",
    "Sensors reporting the water level every few minutes",
    "Free sandbags for households in the lowest streets",
    "A text alert service for all affected residents",
    "Two extra repair crews on call each winter",
    "Grants for shopkeepers to fit flood doors",
    "An annual progress report to the full council",
]


def _page(page_id: str, site: str, items: list[str] | None = None, at: int = 6) -> dict:
    """The article on `site`, with `items` after its `at` first paragraphs: a numbered list on the
    article's site, a paragraph a line on another (as a copy's markup may have it). (A bulleted list,
    `<ul>`, `fast` does not read at all: resiliparse's main content leaves every `<ul>` out.)"""
    body = [f"<p>{p}</p>" for p in ARTICLE]
    if items:
        body.insert(at, "<ol>" + "".join(f"<li>{item}</li>" for item in items) + "</ol>" if site == "news.example"
                    else "".join(f"<p>{item}</p>" for item in items))
    html = (f"<!doctype html><html><head><title>Flood plan approved | {site}</title><meta charset='utf-8'></head>"
            f"<body><header><nav><ul><li><a href='/'>Home</a></li><li><a href='/news'>News</a></li></ul></nav>"
            f"</header><main><article><h1>Council approves flood plan for river districts</h1>{''.join(body)}"
            f"</article></main><footer><p>Copyright 2026 {site}. All rights reserved.</p></footer></body></html>")
    return {"id": page_id, "url": f"https://{site}/{page_id}", "fetched_at": "2026-01-01T00:00:00Z", "html": html}


def _verdicts(pages: list[dict], path) -> dict[str, dict]:
    return {o.dedup["id"]: o.dedup for o in run_records(pages, path)}


def test_an_article_with_a_list_added_is_not_the_articles_duplicate(tmp_path):
    """On the article's site or another, after the article: unique, superseding it (its list is new).

    The case of the issue: a list of 42-70 words, 6-9 words a line, in an article of ~600 words."""
    assert 580 <= sum(len(p.split()) for p in ARTICLE) <= 650
    assert all(6 <= len(item.split()) <= 9 for item in LIST) and 42 <= sum(len(i.split()) for i in LIST) <= 70
    for site in ("news.example", "other.example"):
        got = _verdicts([_page("article", "news.example"), _page("listed", site, LIST)], tmp_path / site)
        assert got["listed"]["status"] == "unique", (site, got["listed"])
        assert got["listed"]["supersedes"] == ["article"], (site, got["listed"])


def test_the_article_after_its_listed_version_is_its_duplicate(tmp_path):
    """The other order: the article's text is all in the page with the list, so it may be dropped."""
    for site in ("news.example", "other.example"):
        got = _verdicts([_page("listed", "news.example", LIST), _page("article", site)], tmp_path / site)
        assert got["article"]["status"] == "duplicate" and got["article"]["duplicate_of"] == "listed", got["article"]


def test_a_word_changed_in_one_line_of_the_list_stays_a_duplicate(tmp_path):
    """A light edit inside the list (one word of one line) adds nothing: a duplicate both ways, on either site."""
    edited = [*LIST[:1], LIST[1].replace("northern", "southern"), *LIST[2:]]
    for site in ("news.example", "other.example"):
        got = _verdicts([_page("listed", "news.example", LIST), _page("edited", site, edited)], tmp_path / site)
        assert got["edited"]["status"] == "duplicate" and got["edited"]["duplicate_of"] == "listed", got["edited"]
        got = _verdicts([_page("edited", "news.example", edited), _page("listed", site, LIST)], tmp_path / f"r{site}")
        assert got["listed"]["status"] == "duplicate" and got["listed"]["duplicate_of"] == "edited", got["listed"]


def _signature(text: str):
    from streamdedup.fingerprints.wordpairs import WordPairsMethod
    from streamdedup.tokens.document import Document

    signature = WordPairsMethod().signature(Document.from_text(text))
    assert signature is not None
    return signature


def test_a_list_is_one_block_of_the_sketch_that_files_no_key():
    """The list's 8 lines are one paragraph of the sketch, a block (its numbers byte says so), of their 63
    words; it files no paragraph key (a site's menus and forms would share them): the article's keys."""
    from streamdedup.fingerprints.paragraph_rows import blocks_of, paragraph_words
    from streamdedup.fingerprints.wordpairs import WordPairsMethod

    article = _signature("\n".join(ARTICLE))
    listed = _signature("\n".join([*ARTICLE[:6], *LIST, *ARTICLE[6:]]))
    assert len(listed.paragraphs) == len(article.paragraphs) + 1
    blocks = blocks_of(listed.numbers, len(listed.paragraphs))
    assert blocks.tolist() == [False] * 6 + [True] + [False] * 4
    assert paragraph_words(listed.paragraphs)[6] == sum(len(item.split()) for item in LIST)
    method = WordPairsMethod()
    assert method.index_keys(listed) == method.index_keys(article)
    rows = method.index_key_rows([method.encode(listed)])  # as the store's rebuild reads them
    assert rows is not None and [bytes(key) for key in rows[0]] == method.index_keys(listed)


def test_a_block_is_its_sites_only_where_each_of_its_lines_was():
    """A block is marked shown before (the site's, no new text) where its site showed every one of its
    lines; a heading the site shows over a new list does not make the list the site's."""
    from streamdedup.clean.template import line_hashes
    from streamdedup.fingerprints.paragraph_rows import shown_before
    from streamdedup.fingerprints.wordpairs import mark_shown

    signature = _signature("\n".join([ARTICLE[0], "Key measures in the plan:", *LIST, ARTICLE[1]]))
    lines = line_hashes("\n".join(["Key measures in the plan:", *LIST]))
    assert shown_before(mark_shown(signature, np.sort(lines)).paragraphs).tolist() == [False, True, False]
    assert not shown_before(mark_shown(signature, np.sort(lines[:1])).paragraphs).any()
    assert not shown_before(mark_shown(signature, np.sort(lines[:-1])).paragraphs).any()
