"""Directional verdicts: a duplicate's own text is (nearly) all in the page it names.

The view-all page after its part supersedes the part (unique, in its cluster); a part after its
view-all page is the view-all page's duplicate; a follow-up that reuses most of an article and
goes on with other text is unique and related to it; light edits stay duplicates."""

from __future__ import annotations

import random
import re

from streamdedup.config import DetectorConfig
from streamdedup.testing import make_article, run_records, wrap_in_template


def _page(page_id: str, paragraphs: list[str], site: str, boxes: tuple[str, ...] = (), title: str = "Story",
          lead: str = "") -> dict:
    """A page of `site` with the article's `paragraphs`, the host's `boxes` after them and a `lead` box before them."""
    return {"id": page_id, "url": f"https://{site}/{page_id}", "fetched_at": "2026-01-01T00:00:00Z",
            "html": wrap_in_template(paragraphs, site, title=title, boxes=boxes, lead=lead)}


def _edited(paragraphs: list[str], words: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = [p.split() for p in paragraphs]
    for _ in range(words):
        para = out[rng.randrange(len(out))]
        para[rng.randrange(len(para))] = f"edit{rng.randrange(1000)}"
    return [" ".join(p) for p in out]


def test_a_page_is_never_the_duplicate_of_a_page_holding_less_of_it(tmp_path):
    article, story, other = (make_article(seed, paragraphs=10) for seed in (1, 2, 3))
    pages = [_page("part1", article[:5], "a.example"), _page("full", article, "b.example"),
             _page("part2", article[5:], "c.example"), _page("story", story, "d.example"),
             _page("followup", story[:7] + other[:4], "e.example"),
             _page("replaced", story[:7] + other[5:8], "f.example"),
             _page("edited", _edited(story, 4, 9), "g.example"),
             _page("stamped", ["Updated: 3 December 2026, 14:22 GMT", *story], "h.example")]
    got = {o.dedup["id"]: o.dedup for o in run_records(pages, tmp_path)}
    # the whole article after its first half: kept, names what it supersedes, joins its story
    assert got["full"]["status"] == "unique" and got["full"]["supersedes"] == ["part1"]
    assert got["full"]["cluster_id"] == "part1"
    # the second half after the whole: all of its text is in it
    assert got["part2"]["status"] == "duplicate" and got["part2"]["duplicate_of"] == "full"
    for kept in ("followup", "replaced"):  # a third of their text is new
        assert got[kept]["status"] == "unique" and "story" in got[kept]["related_to"], got[kept]
        assert got[kept]["cluster_id"] == kept
    for light in ("edited", "stamped"):
        assert got[light]["status"] == "duplicate" and got[light]["duplicate_of"] == "story"
        assert 0.0 <= got[light]["new_share"] <= 0.05
    # directions off (any new text let through): the old verdicts, which drop new text
    loose = {o.dedup["id"]: o.dedup for o in run_records(pages, tmp_path / "loose",
                                                         DetectorConfig(max_new_share=1.0, min_new_paragraph_words=0))}
    assert loose["full"]["status"] == "duplicate" and loose["full"]["duplicate_of"] == "part1"


def test_a_new_paragraph_under_a_tenth_of_a_long_article_is_new_text(tmp_path):
    """A paragraph of ~30 words added to or replacing one of a ~1,100-word article (under 3 % of
    it, within the share's error) is new text, found by the paragraph sketch; a correction note,
    scattered edits and a copy's trailing blurb of its host (in a box of its own) stay duplicates.
    The same blurb in the article's block, beside its paragraphs, is the copy's own text."""
    story, other, long_story = make_article(11, paragraphs=14), make_article(12, paragraphs=2), make_article(13, 24)
    new, replacing = (" ".join(paragraph.split()[:30]) for paragraph in other)
    blurb = ("Subscribe to our free weekly newsletter for the latest stories from our newsroom, "
             "delivered every Friday morning straight to your inbox, and cancel whenever you like.")
    note = ("Our reporters spent three months in the valley towns, speaking with farmers, teachers and "
            "council officials about the flooding and what the region plans next.")
    offer = ("Readers of this site get a discount of twenty percent on every annual subscription this "
             "month when they order through the link below before the end of the quarter.")
    pages = [_page("story", story, "a.example"),
             _page("appended", [*story, new], "a.example"),
             _page("replaced", [*story[:7], replacing, *story[8:]], "b.example"),
             _page("corrected", [*story, "Correction: an earlier version of this article misstated the "
                                         "date of the vote."], "c.example"),
             _page("edited", _edited(story, 12, 5), "d.example"),
             _page("blurb", story, "e.example", (blurb,)),
             _page("blurb_in_text", [*story, note], "h.example"),
             # the host's blurb inside a later copy: between two found paragraphs, but shown there on
             # two earlier pages (a line of one earlier page may be that page's content)
             _page("promo", [*make_article(14, paragraphs=6), offer], "g.example"),
             _page("promo2", [*make_article(15, paragraphs=6), offer], "g.example"),
             _page("offer_inside", [*story[:7], offer, *story[7:]], "g.example"),
             # 24 paragraphs: more than a sketch keeps (its 16 longest and its last two)
             _page("long", long_story, "f.example"), _page("long_appended", [*long_story, new], "f.example")]
    got = {o.dedup["id"]: o.dedup for o in run_records(pages, tmp_path)}
    assert got["appended"]["status"] == "unique" and got["appended"]["supersedes"] == ["story"], got["appended"]
    assert got["replaced"]["status"] == "unique" and "story" in got["replaced"]["related_to"], got["replaced"]
    assert got["long_appended"]["status"] == "unique" and got["long_appended"]["supersedes"] == ["long"]
    for light in ("corrected", "edited", "blurb"):
        assert got[light]["status"] == "duplicate" and got[light]["duplicate_of"] == "story", got[light]
    assert got["offer_inside"]["status"] == "duplicate", got["offer_inside"]
    assert got["blurb_in_text"]["status"] == "unique" and "story" in got["blurb_in_text"]["supersedes"]


# a paragraph of the UDHR (article 27 and 28) in languages of few tokens for its text: English says
# it in 27 and 24 tokens, Korean in 16, Malayalam in 12 (`paragraph_rows.letter_units`)
KOREAN_PARAGRAPH = ("모든 사람은 자신이 창작한 과학적, 문학적 또는 예술적 산물로부터 발생하는 정신적, 물질적 이익을 "
                    "보호받을 권리를 가진다.")
MALAYALAM_PARAGRAPH = ("ഈ പ്രഖ്യാപനത്തില് പ്രതിപാദിച്ചിട്ടുള്ള അധികാരസ്വാതന്ത്ര്യങ്ങളെ കൈവരുത്തക്ക രീതിയിലുള്ള "
                       "സാമുദായികവും അന്തര്രാഷ്ട്രീയവുമായ ഒരു ജീവിതത്തോതിന്ന് എല്ലാവരും അര്ഹരാണ്.")


def test_a_new_paragraph_of_a_language_of_long_words_is_new_text(tmp_path):
    """A paragraph of 20+ English words' text is new text in any language: inserted into a long
    article, a Korean one of 16 tokens and a Malayalam one of 12 (under the 20 a paragraph needs
    alone, counted in tokens) count their word-equivalents (20 and 24) and keep the page."""
    story = make_article(16, paragraphs=14)
    pages = [_page("story", story, "a.example"),
             _page("korean", [*story[:7], KOREAN_PARAGRAPH, *story[7:]], "b.example"),
             _page("malayalam", [*story[:7], MALAYALAM_PARAGRAPH, *story[7:]], "c.example")]
    got = {o.dedup["id"]: o.dedup for o in run_records(pages, tmp_path)}
    for inserted in ("korean", "malayalam"):
        assert got[inserted]["status"] == "unique" and got[inserted]["supersedes"] == ["story"], got[inserted]


def test_a_short_paragraph_in_the_place_of_another_is_new_text(tmp_path):
    """A paragraph replaced by a 16-word one (under the 20 words a paragraph needs alone: a
    correction note's length) is new text: the replaced paragraph is missing from the page, in the
    same place. A correction note appended to a page that also dropped a paragraph elsewhere is
    not in that place, and stays a duplicate, as does a short paragraph edited by a few words."""
    story, other = make_article(21, paragraphs=12), make_article(22, paragraphs=1)
    short = " ".join(other[0].split()[:16])
    note = "Correction: an earlier version of this article misstated the date of the council's vote."
    pages = [_page("story", story, "a.example"),
             _page("replaced", [*story[:6], short, *story[7:]], "b.example"),
             _page("dropped_noted", [*story[:3], *story[4:], note], "a.example")]
    got = {o.dedup["id"]: o.dedup for o in run_records(pages, tmp_path)}
    assert got["replaced"]["status"] == "unique" and "story" in got["replaced"]["related_to"], got["replaced"]
    assert got["dropped_noted"]["status"] == "duplicate", got["dropped_noted"]
    assert got["dropped_noted"]["duplicate_of"] == "story", got["dropped_noted"]


def test_two_short_paragraphs_in_the_places_of_two_others_are_new_text(tmp_path):
    """Two paragraphs replaced by shorter ones of another article (15 and 13 words, under a tenth of
    the page together) are new text, though the longest new paragraph of each page stands in
    another place: each of the page's stands where one of the other's was. Two paragraphs dropped
    and a correction note appended stay a duplicate (the note stands in no dropped one's place)."""
    story, other = make_article(23, paragraphs=12), make_article(24, paragraphs=2)
    first, second = " ".join(other[0].split()[:15]), " ".join(other[1].split()[:13])
    note = "Correction: an earlier version of this article misstated the date of the council's vote."
    pages = [_page("story", story, "a.example"),
             _page("replaced", [*story[:2], first, *story[3:8], second, *story[9:]], "b.example"),
             _page("dropped_noted", [*story[:2], *story[3:8], *story[9:], note], "c.example")]
    got = {o.dedup["id"]: o.dedup for o in run_records(pages, tmp_path)}
    assert got["replaced"]["status"] == "unique" and "story" in got["replaced"]["related_to"], got["replaced"]
    assert got["dropped_noted"]["status"] == "duplicate", got["dropped_noted"]
    assert got["dropped_noted"]["duplicate_of"] == "story", got["dropped_noted"]


def test_a_teaser_its_articles_paragraphs_hold_is_its_duplicate(tmp_path):
    """A teaser on another site (the first 4-7 of 12 paragraphs and a "continue reading" line) is
    its article's duplicate where the MinHash of a page a third to half of its match's size is
    too rough to say so: the article holds every paragraph of the teaser nearly verbatim (method
    `paragraphs`). The same teaser with a paragraph of another article, or a third of its text
    rewritten, is not."""
    seeds = (0, 25, 32, 37, 69, 81)  # teasers MinHash's containment did not match alone (6 of 100 seeds)
    pages, other = [], make_article(7, paragraphs=2)
    for seed in seeds:
        article, cut = make_article(100 + seed, paragraphs=12), 4 + seed % 4
        teaser = [*article[:cut], "Continue reading the full story on our partner's site."]
        pages += [_page(f"article{seed}", article, f"s{seed}.example"), _page(f"teaser{seed}", teaser, f"h{seed}.example"),
                  _page(f"added{seed}", [*teaser[:2], other[0], *teaser[2:]], f"i{seed}.example"),
                  _page(f"rewritten{seed}", _edited(teaser[:cut], 30 * cut // 3, seed) + teaser[cut:], f"j{seed}.example")]
    got = {o.dedup["id"]: o.dedup for o in run_records(pages, tmp_path)}
    for seed in seeds:
        teaser = got[f"teaser{seed}"]
        assert teaser["status"] == "duplicate" and teaser["duplicate_of"] == f"article{seed}", teaser
        for kept in (f"added{seed}", f"rewritten{seed}"):
            assert got[kept]["status"] == "unique", got[kept]
    by_paragraphs = [got[f"teaser{seed}"] for seed in seeds if got[f"teaser{seed}"]["method"] == "paragraphs"]
    assert by_paragraphs and all(type(v["similarity"]) is float for v in by_paragraphs)  # JSON writes it


def test_a_teaser_no_index_key_found_is_found_by_its_paragraph_keys(tmp_path):
    """Teasers (the first 4-7 of 12 paragraphs, on another site) that no MinHash band, SimHash table or
    A12 sentence key found (5 of 100 seeds): their article is filed under its longest paragraphs (16),
    and each holds one of them, so its own keys find it and the `paragraphs` match judges it."""
    seeds = (16, 28, 52, 84, 89)
    pages = []
    for seed in seeds:
        article, cut = make_article(100 + seed, paragraphs=12), 4 + seed % 4
        pages += [_page(f"article{seed}", article, f"s{seed}.example"),
                  _page(f"teaser{seed}", [*article[:cut], "Continue reading the full story on our partner's site."],
                        f"h{seed}.example")]
    got = {o.dedup["id"]: o.dedup for o in run_records(pages, tmp_path / "keys")}
    for seed in seeds:
        assert got[f"teaser{seed}"]["duplicate_of"] == f"article{seed}", got[f"teaser{seed}"]
    without = DetectorConfig(method_params={"wordpairs": {"paragraph_keys": 0}})
    got = {o.dedup["id"]: o.dedup for o in run_records(pages, tmp_path / "none", without)}
    assert all(got[f"teaser{seed}"]["status"] == "unique" and not got[f"teaser{seed}"].get("related_to") for seed in seeds)


def test_a_part_whose_new_text_is_short_lines_is_not_its_articles_duplicate(tmp_path):
    """Every paragraph of the page is in the larger article, but it adds a list of 32 short lines (a
    results table, an update's bullet points: a fifth of its words) that no sketch holds: not a
    duplicate. What lies outside the paragraphs the article holds is those lines, new text."""
    pages = []
    for seed in range(6):
        article, other = make_article(200 + seed, paragraphs=12), make_article(300 + seed, paragraphs=8)
        bullets = [" ".join(p.split()[k:k + 6]) for k in (0, 6, 12, 18) for p in other]
        pages += [_page(f"article{seed}", article, f"s{seed}.example"),
                  _page(f"listed{seed}", [*article[:8], *bullets], f"h{seed}.example")]
    got = {o.dedup["id"]: o.dedup for o in run_records(pages, tmp_path)}
    for seed in range(6):
        assert got[f"listed{seed}"]["status"] == "unique", got[f"listed{seed}"]


def test_a_paragraph_replaced_at_a_copys_start_or_end_is_new_text(tmp_path):
    """On another site, new lines before a copy's first found paragraph or after its last may be its
    host's (a teaser of another story, a newsletter blurb), and do not count alone. But a host's
    lines are added: they do not take the place of the article's first or last paragraph. A copy
    whose last paragraph is replaced by a 16-word one, or whose first by another story's, is not
    the article's duplicate. A teaser (the first paragraphs, then its host's line of another
    story in a box) and a full copy with its host's line in a box after it stay duplicates."""
    story, other = make_article(31, paragraphs=10), make_article(32, paragraphs=2)
    short = " ".join(other[0].split()[:16])
    host_line = " ".join(other[1].split()[:30])
    pages = [_page("story", story, "a.example"),
             _page("last_replaced", [*story[:-1], short], "b.example"),
             _page("first_replaced", [other[1], *story[1:]], "c.example"),
             _page("teaser", story[:4], "d.example", (host_line,)),
             _page("copy_with_host_line", story, "e.example", (host_line,))]
    got = {o.dedup["id"]: o.dedup for o in run_records(pages, tmp_path)}
    for replaced in ("last_replaced", "first_replaced"):
        assert got[replaced]["status"] == "unique" and "story" in got[replaced]["related_to"], got[replaced]
    for copy in ("teaser", "copy_with_host_line"):
        assert got[copy]["status"] == "duplicate" and got[copy]["duplicate_of"] == "story", got[copy]


def test_a_paragraph_replaced_on_a_page_of_two_is_new_text(tmp_path):
    """Where fewer than 60 % of a page's paragraphs are found in the other, the two extractions are
    taken to split the text into other lines, and no paragraph counts as new. But a page of two
    paragraphs with one replaced has one of each page's absent from the other: a layout that
    merges lines makes one line of several, never one of one. The revision whose second paragraph
    was replaced by a 16-word one is not the story's duplicate; one with a word changed is."""
    story, other = make_article(33, paragraphs=5), make_article(34, paragraphs=1)
    lead, last = " ".join(story[:4]), story[4]
    short = " ".join(other[0].split()[:16])
    pages = [_page("story", [lead, last], "a.example"),
             _page("replaced", [lead, short], "a.example"),
             _page("edited", [lead, last.replace(last.split()[3], "edited", 1)], "a.example")]
    got = {o.dedup["id"]: o.dedup for o in run_records(pages, tmp_path)}
    assert got["replaced"]["status"] == "unique" and "story" in got["replaced"]["related_to"], got["replaced"]
    assert got["edited"]["status"] == "duplicate" and got["edited"]["duplicate_of"] == "story", got["edited"]


def test_a_rewrite_of_a_fifth_of_the_words_is_not_a_light_edit(tmp_path):
    """Every fifth word replaced: 40 % of the word pairs new, nearly every 5-shingle new, which the
    runs correction alone reads as scattered edits (0 new in runs) and called a duplicate. Edits
    explain new pairs only up to `new_shares.MAX_EDITED_PAIRS`. A permissive rule matches the pages so
    that the verdict, not the candidates, is tested; 1 word in 20 replaced stays a light edit."""
    story = make_article(21, paragraphs=10)

    def replaced(every: int) -> list[str]:
        words = " ".join(story).split()
        rng = random.Random(every)
        return [" ".join(rng.choice(words) if i % every == every - 1 else w for i, w in enumerate(words))]

    pages = [_page("story", story, "a.example"), _page("rewrite", replaced(5), "b.example"),
             _page("edited", replaced(20), "c.example")]
    loose_match = DetectorConfig(policy="simhash", method_params={"simhash": {"max_distance": 12, "blocks": 16}})
    got = {o.dedup["id"]: o.dedup for o in run_records(pages, tmp_path, loose_match)}
    assert got["rewrite"]["status"] == "unique" and got["rewrite"]["related_to"] == ["story"], got["rewrite"]
    assert got["edited"]["status"] == "duplicate" and got["edited"]["duplicate_of"] == "story", got["edited"]


def test_lines_two_of_the_hosts_earlier_pages_showed_are_not_a_copys_new_text(tmp_path):
    """A copy on a host whose template is not known yet (its first pages) carries the host's lines:
    a newsletter box, a disclaimer, other stories' teasers. Two earlier pages of the host showed
    them, so they are the host's, not text the copy adds: the copy is its article's duplicate. A
    line one earlier page showed may be that page's content (the first part of a paginated story),
    and a paragraph the host never showed is new text: both stay new text."""
    story, first, second, other = (make_article(seed, paragraphs=6) for seed in (31, 32, 33, 34))
    # other stories' teasers, a box, a disclaimer: a quarter of the copy, in lines of 8-24 words
    furniture = [f"{line.strip()}." for line in " ".join(make_article(35, paragraphs=2)).split(".") if line.strip()]
    pages = [_page("story", story, "a.example"),
             _page("first", [*first, *furniture], "g.example"),
             _page("second", [*second, *furniture], "g.example"),
             _page("copy", [*story, *furniture], "g.example"),
             # the host's lines and a paragraph of its own: new text
             _page("copy_plus", [*story, other[0], *furniture], "g.example"),
             # lines only one earlier page showed (its own story): new text
             _page("quoting", [*story, *other[1:4]], "h.example"),
             _page("h_first", other[1:4], "h.example")]
    pages = [*pages[:5], pages[6], pages[5]]  # h.example shows other[1:4] once, then the copy quotes it
    got = {o.dedup["id"]: o.dedup for o in run_records(pages, tmp_path)}
    assert got["copy"]["status"] == "duplicate" and got["copy"]["duplicate_of"] == "story", got["copy"]
    assert got["copy"]["new_share"] <= 0.10
    assert got["copy_plus"]["status"] == "unique" and "story" in got["copy_plus"]["supersedes"], got["copy_plus"]
    assert got["quoting"]["status"] == "unique", got["quoting"]


def test_the_pairs_of_a_pages_shown_lines_are_made_only_for_a_page_with_a_match(tmp_path, monkeypatch):
    """Pages of one host that all carry its lines (a box, a disclaimer) but share no article make no
    MinHash of those lines: none is asked, as none has a match. The copy of an article, matched,
    makes one, and its verdict is as above."""
    import streamdedup.own_text as own_text_module
    from streamdedup.fingerprints.wordpairs import ShownLines, WordPairsSignature

    made, carried = [0], [0]
    real_pairs, real_with = ShownLines.pairs, own_text_module.with_shown_lines

    def counted_pairs(self):
        made[0] += not self._made
        return real_pairs.fget(self)

    def counted_with(*args, **kwargs):
        signature = real_with(*args, **kwargs)
        carried[0] += isinstance(signature, WordPairsSignature) and signature.shown is not None
        return signature

    monkeypatch.setattr(ShownLines, "pairs", property(counted_pairs))
    monkeypatch.setattr(own_text_module, "with_shown_lines", counted_with)
    def furniture(seed: int) -> list[str]:  # other stories' teasers, a box, a disclaimer
        return [f"{line.strip()}." for line in " ".join(make_article(seed, paragraphs=2)).split(".") if line.strip()]

    story = make_article(40, paragraphs=6)
    pages = [_page("story", story, "a.example"),
             # a host's third article carries the lines its first two showed, and matches nothing
             *(_page(f"h{i}", [*make_article(41 + i, paragraphs=6), *furniture(46)], "h.example") for i in range(3)),
             _page("first", [*make_article(44, paragraphs=6), *furniture(45)], "g.example"),
             _page("second", [*make_article(45, paragraphs=6), *furniture(45)], "g.example"),
             _page("copy", [*story, *furniture(45)], "g.example")]
    got = {o.dedup["id"]: o.dedup for o in run_records(pages, tmp_path)}
    assert got["copy"]["status"] == "duplicate" and got["copy"]["duplicate_of"] == "story", got["copy"]
    assert got["h2"]["status"] == "unique" and not got["h2"].get("related_to"), got["h2"]
    assert carried[0] == 2 and made[0] == 1, (carried, made)  # h2 and the copy carry them; the copy asks


_NAMES = ("prime minister anna kovacs", "the flooded oren valley", "interior minister jonas berg",
          "the relief convoy", "mayor lena ortiz of marrow", "the coastal dam at helvik")


def _story(seed: int, paragraphs: int) -> list[str]:
    """An article whose paragraphs, like a news story's, come back to its few names and places."""
    rng = random.Random(seed)
    out = []
    for paragraph in make_article(seed, paragraphs=paragraphs, sentences=3):
        words = paragraph.split()
        for name in rng.sample(_NAMES, 2):
            at = rng.randrange(len(words))
            words[at:at] = name.split()
        out.append(" ".join(words))
    return out


def test_a_paragraph_of_the_story_itself_added_or_replacing_another_is_new_text(tmp_path):
    """An update that adds a paragraph about the same story, or rewrites one, is new text, though the
    new paragraph shares the story's names with its other paragraphs (a value of its sketch is often
    another paragraph's): 12 stories of 20-40 paragraphs, each fetched without one paragraph, then
    whole at the same URL, or with another paragraph in the place of one. Edits of a few words in
    each of 12 more stay duplicates."""
    pages, added, replaced, edited = [], [], [], []
    for seed in range(12):
        story = _story(100 + seed, 20 + 2 * seed)
        held, other = 3 + seed, 1 + seed // 2
        first = story[:held] + story[held + 1:]
        pages.append(_page(f"first{seed}", first, f"s{seed}.example"))
        if seed % 2:
            page = _page(f"added{seed}", story, f"s{seed}.example")
            added.append(page["id"])
        else:
            page = _page(f"replaced{seed}", [story[held] if i == other else p for i, p in enumerate(first)],
                         f"s{seed}.example")
            replaced.append(page["id"])
        page["url"] = f"https://s{seed}.example/first{seed}"
        pages.append(page)
        pages.append(_page(f"edited{seed}", _edited(first, 3, seed), f"t{seed}.example"))
        edited.append(f"edited{seed}")
    got = {o.dedup["id"]: o.dedup for o in run_records(pages, tmp_path)}
    for page_id in added:
        assert got[page_id]["status"] == "unique" and got[page_id]["supersedes"], got[page_id]
    for page_id in replaced:
        assert got[page_id]["status"] == "unique" and got[page_id]["related_to"], got[page_id]
    for page_id in edited:
        assert got[page_id]["status"] == "duplicate", got[page_id]


def test_a_paragraph_one_earlier_page_of_the_site_showed_is_new_text(tmp_path):
    """A story's third fetch restores the paragraph its second dropped: the second lacks it, so the
    third is new text to the second, though the site showed that paragraph once (in the first)."""
    story = _story(7, 12)
    url = "https://news.example/story"
    fetches = [story[:4] + story[5:], story[:8] + story[9:], story]  # the 1st lacks paragraph 4, the 2nd 8
    pages = [{**_page(f"fetch{n}", paragraphs, "news.example"), "url": url,
              "fetched_at": f"2026-01-01T0{n}:00:00Z"} for n, paragraphs in enumerate(fetches)]
    got = {o.dedup["id"]: o.dedup for o in run_records(pages, tmp_path)}
    assert got["fetch2"]["status"] == "unique" and "fetch1" in got["fetch2"]["supersedes"], got["fetch2"]


def test_a_short_paragraph_replaced_on_a_page_past_the_sketchs_cap_is_new_text(tmp_path):
    """A page of more paragraphs than the sketch keeps (127: a novel's chapter, a long manual) keeps
    its longest. Where both pages' sketches are capped, a paragraph of each absent from the other is
    judged only past the other's shortest kept (so it would have been kept), and in the order both
    keep: one page's 18-word line in the place of the other's 22-word paragraph took its place, and
    the page is not the other's duplicate (it was, at ~0.5 % new text: the line is under the 20
    words a new paragraph needs on its own). A word changed in one paragraph stays a light edit."""
    # a chapter of 225 one-sentence paragraphs of 8-23 words: 172 of 12 words or more, past the cap
    article = [s for paragraph in make_article(41, paragraphs=45) for s in re.split(r"(?<=\.) ", paragraph)]
    lengths = [len(p.split()) for p in article]
    cut = sorted((n for n in lengths if n >= 12), reverse=True)[126]  # the shortest the sketch keeps
    place = next(i for i in range(20, len(article)) if lengths[i] >= 22)
    short = " ".join(make_article(42, paragraphs=1)[0].split()[:18])
    assert len(short.split()) >= cut + 3, "the test needs the new line past the shortest kept paragraph"
    replaced = [*article[:place], short, *article[place + 1:]]
    edited = [*article[:place], article[place].replace(article[place].split()[4], "altered", 1), *article[place + 1:]]
    pages = [_page("chapter", article, "a.example"), _page("replaced", replaced, "a.example"),
             _page("edited", edited, "a.example")]
    got = {o.dedup["id"]: o.dedup for o in run_records(pages, tmp_path)}
    assert got["replaced"]["status"] == "unique" and "chapter" in got["replaced"]["related_to"], got["replaced"]
    assert got["edited"]["status"] == "duplicate" and got["edited"]["duplicate_of"] == "chapter", got["edited"]


def test_a_long_paragraph_after_a_copys_end_is_new_text(tmp_path):
    """On another site, new lines after a copy's last found paragraph count only where they took
    the place of its match's last paragraph: a host's lines (a teaser, a blurb, an author's box)
    are added there. A paragraph of 100 words or more is longer than those: a follow-up that
    reprints a long article and goes on with a 110-word paragraph of its own (~5 % of its text)
    is not the article's duplicate. A copy with a 40-word host line in a box after it still is; in
    the article's block, beside its paragraphs, that line is the copy's own text."""
    story, other = make_article(51, paragraphs=30), make_article(52, paragraphs=4)
    words = " ".join(other).split()
    assert len(words) >= 150
    going_on, host_line = " ".join(words[:110]), " ".join(words[110:150])
    pages = [_page("story", story, "a.example"),
             _page("followup", [*story, going_on], "b.example"),
             _page("copy", story, "c.example", (host_line,)),
             _page("added", [*story, " ".join(make_article(53, 1)[0].split()[:40])], "d.example")]
    got = {o.dedup["id"]: o.dedup for o in run_records(pages, tmp_path)}
    assert got["followup"]["status"] == "unique" and "story" in got["followup"]["supersedes"], got["followup"]
    assert got["copy"]["status"] == "duplicate" and got["copy"]["duplicate_of"] == "story", got["copy"]
    assert got["added"]["status"] == "unique" and "story" in got["added"]["supersedes"], got["added"]


def test_a_page_lacking_an_articles_last_paragraph_does_not_supersede_it(tmp_path):
    """An adversarial review: pages published after an article (8 paragraphs, its last of 45 words)
    holding all of it but that last paragraph, with spam inside, or beside another story whole,
    `supersede`d it: the article's edge paragraph under 100 words was excused as its host's lines.
    An indexer that replaces superseded pages lost the paragraph and showed the spam, and the page
    holding the other story merged the two stories. A candidate is now superseded only if its
    paragraphs at the edges are in the page too; the page is related to it."""
    story, article = make_article(7, 6), make_article(75, 8, 3)
    assert len(article[-1].split()) == 45
    spam = [" ".join(["cheap", "pills", "casino", "bonus", "click", "here", "now", "free", "spins"] * 3)] * 2
    pages = [_page("story", story, "news.example"), _page("article", article, "b-news.example"),
             _page("spam", article[:3] + spam + article[3:-1], "evil.example"),
             _page("both", story + article[:-1], "evil2.example")]
    got = {o.dedup["id"]: o.dedup for o in run_records(pages, tmp_path)}
    assert got["spam"]["status"] == "unique" and "supersedes" not in got["spam"], got["spam"]
    assert got["spam"]["related_to"] == ["article"] and got["spam"]["cluster_id"] == "spam"
    assert got["both"].get("supersedes") == ["story"] and "merged_clusters" not in got["both"], got["both"]
    assert "article" in got["both"]["related_to"]


def test_a_paragraph_added_inside_a_long_copy_on_another_site_is_new_text(tmp_path):
    """Against another site's page only a long page's 16 longest paragraphs were judged, so a
    syndicated copy of a 30-paragraph article with a 30-word paragraph of its own inside was the
    article's duplicate, and a crawler dropped the paragraph (a crawler's review: 12 of 16 such
    copies of 1,200-word articles). Inside a copy, between paragraphs the article has, a new
    paragraph is the copy's own text on any host; at its edges too where it sits in the article's
    block, beside its paragraphs; in a box of its own there it is its host's (limitations.md). A
    copy without the paragraph is still the article's duplicate."""
    story, other = make_article(61, paragraphs=30), make_article(62, paragraphs=3)
    words = " ".join(other).split()
    added, appended = " ".join(words[:30]), " ".join(words[30:60])
    assert sum(len(p.split()) > len(added.split()) for p in story) > 16, "the paragraph must be past the 16 longest"
    inside = [*story[:15], added, *story[15:]]
    pages = [_page("story", story, "a.example"), _page("inside", inside, "b.example"),
             _page("copy", story, "c.example"),
             _page("appended", [*story, appended], "d.example"),
             _page("boxed", story, "e.example", (appended,))]
    got = {o.dedup["id"]: o.dedup for o in run_records(pages, tmp_path)}
    assert got["inside"]["status"] == "unique" and "story" in got["inside"]["supersedes"], got["inside"]
    assert got["copy"]["status"] == "duplicate" and got["copy"]["duplicate_of"] == "story", got["copy"]
    assert got["appended"]["status"] == "unique" and "story" in got["appended"]["supersedes"], got["appended"]
    # at its end in a box of its own, a paragraph under 100 words reads as its host's (a teaser, a blurb)
    assert got["boxed"]["status"] == "duplicate" and got["boxed"]["duplicate_of"] == "story", got["boxed"]


def _edited_and_lightly(paragraphs: list[str], at: int) -> tuple[list[str], list[str]]:
    """The paragraphs with the one `at` edited in a third of its words (no pair kept), and with one word changed."""
    words = paragraphs[at].split()
    words[1::3] = [f"altered{n}" for n in range(len(words[1::3]))]
    light = paragraphs[at].split()
    light[-2] = "altered"
    return ([*paragraphs[:at], " ".join(words), *paragraphs[at + 1:]],
            [*paragraphs[:at], " ".join(light), *paragraphs[at + 1:]])


def test_a_short_paragraph_past_a_long_copys_longest_is_an_edit_only_if_it_kept_a_value(tmp_path):
    """Judged, a short paragraph of a light edit past a long copy's 16 longest sometimes keeps none
    of its 4 sketch values (its words changed here and there). From 0.15.0 it was read as the other's
    paragraph of its length in its place, edited; but so is an attacker's paragraph of other words
    (`test_hostile_edit_in_place.py`), so since rules version 35 one that kept no value is new text
    and the copy is no duplicate. One word changed keeps its values: that copy is a duplicate."""
    story = make_article(63, paragraphs=30)
    lengths = [len(p.split()) for p in story]
    short = min((i for i in range(3, 27) if 20 <= lengths[i]), key=lambda i: lengths[i])
    assert sorted(lengths, reverse=True).index(lengths[short]) >= 16, "the paragraph must be past the 16 longest"
    edited, lightly = _edited_and_lightly(story, short)
    pages = [_page("story", story, "a.example"), _page("edited", edited, "b.example"),
             _page("lightly", lightly, "c.example")]
    got = {o.dedup["id"]: o.dedup for o in run_records(pages, tmp_path)}
    assert got["edited"]["status"] != "duplicate", got["edited"]
    assert got["lightly"]["status"] == "duplicate" and got["lightly"]["duplicate_of"] == "story", got["lightly"]


def test_a_copy_names_the_article_not_an_earlier_light_edit_that_dropped_a_short_line(tmp_path):
    """The light edit (one short line of the article dropped, a word changed) comes first; the
    article and then a copy of it follow on other sites. The copy holds the short line the edit
    lacks, so it names the article, whose text holds all of it: named, the edit would lose the line."""
    story = make_article(41, paragraphs=9)
    line = "The council will publish the full list of the affected streets on its website next week."
    article = [*story[:4], line, *story[4:]]
    pages = [_page("edit", _edited(story, 1, 7), "a.example"), _page("article", article, "b.example"),
             _page("copy", article, "c.example")]
    got = {o.dedup["id"]: o.dedup for o in run_records(pages, tmp_path)}
    # (the article itself, after the edit, is kept: its 16-word line stands inside the copy where the
    # edit has nothing in its place, `line_places.inserted_line`; the copy's exact match shows which holds all of it)
    assert got["copy"]["status"] == "duplicate" and got["copy"]["duplicate_of"] == "article", got["copy"]


def test_an_article_after_a_light_edit_that_dropped_one_of_its_lines_is_not_its_duplicate(tmp_path):
    """A light edit dropped a 16-word line of the article (under the 20 words a new paragraph needs
    alone) and came first, on another site; the article follows. Inside the copy, where the edit
    has nothing of its own in the line's place (no edited nor replacing line), the line is new
    text: the article is kept and supersedes the edit (multilingual dev: 3 such content-loss edges,
    limitations.md). The same line edited out of recognition (a third of its words changed: a line
    of the edit stands in its place) and a line at a copy's end on another site (its host's) stay
    duplicates; so does an edit that grew an 11-word line to 12 words: the sketch keeps lines of 12
    words or more, so the other page may hold a line within a few words of its length unsketched."""
    story = make_article(71, paragraphs=9)
    line = "The council will publish the full list of the affected streets on its website next week."
    other = "Readers can sign up for our free newsletter to receive the latest local news every morning."
    assert len(line.split()) == len(other.split()) == 16
    article = [*story[:4], line, *story[4:]]
    words = line.split()
    words[1::3] = [f"altered{n}" for n in range(len(words[1::3]))]
    reworded = [*story[:4], " ".join(words), *story[4:]]
    pages = [_page("edit", _edited(story, 1, 7), "a.example"), _page("article", article, "b.example"),
             _page("reworded", reworded, "c.example"), _page("ended", [*story, other], "d.example")]
    got = {o.dedup["id"]: o.dedup for o in run_records(pages, tmp_path)}
    assert got["article"]["status"] == "unique" and got["article"]["supersedes"] == ["edit"], got["article"]
    assert got["reworded"]["status"] == "duplicate" and got["reworded"]["duplicate_of"] == "article", got["reworded"]
    assert got["ended"]["status"] == "duplicate", got["ended"]

    eleven = "Parking on the affected streets will be banned from next Monday."
    grown = "Parking on the affected streets will be banned again from next Monday."
    assert (len(eleven.split()), len(grown.split())) == (11, 12)
    pages = [_page("eleven", [*story[:4], eleven, *story[4:]], "e.example"),
             _page("grown", [*story[:4], grown, *story[4:]], "f.example")]
    got = {o.dedup["id"]: o.dedup for o in run_records(pages, tmp_path / "grown")}
    assert got["grown"]["status"] == "duplicate" and got["grown"]["duplicate_of"] == "eleven", got["grown"]


def test_a_standfirst_a_copy_lacks_is_new_text(tmp_path):
    """An article whose standfirst sits in a box of its own between its title and its text (outside
    the article's block), after a copy on another site that lacks it: the standfirst was read as
    the host's line at the copy's start and the article was the copy's duplicate, which a crawler
    drops, losing it (issue 57: 21 of 69 real pages, `bench/outside_own_text.py --pairs`). A line
    there that shares a word with the title is the article's lead: the article supersedes the copy.
    A copy under a host's leftover line there, of another story, is still the article's duplicate."""
    story = make_article(81, paragraphs=8)
    title = "Flooding in the valley towns"
    lead = ("Three months after the water rose, the valley towns are still counting the cost, and the "
            "council has promised a full account of what went wrong before the winter.")
    leftover = ("Our guide to the best mountain walks of the season, from gentle afternoon strolls to "
                "demanding ridge routes, with maps and the huts that stay open all year.")
    pages = [_page("copy", story, "b.example", title=title),
             _page("article", story, "a.example", title=title, lead=lead),
             _page("leftover", story, "c.example", title=title, lead=leftover)]
    got = {o.dedup["id"]: o.dedup for o in run_records(pages, tmp_path)}
    assert got["article"]["status"] == "unique" and got["article"]["supersedes"] == ["copy"], got["article"]
    assert got["leftover"]["status"] == "duplicate" and got["leftover"]["duplicate_of"] == "copy", got["leftover"]


def test_a_paragraph_past_the_sketchs_cap_on_another_site_is_an_edit_only_with_a_value_kept(tmp_path):
    """Both pages past the sketch's 127 paragraphs (each keeps its longest and last, in text order),
    on two sites: a 20-30-word paragraph whose words changed so that it kept none of its 4 values is
    not told from other text of its length (an attacker's copy with a paragraph replaced: rules
    version 30 read it as the other's edited and hid the article 11 of 12 times), so since rules
    version 32 it is new text and the copy is no duplicate (web dev: a 4,300-word FAQ's 26-word answer
    with 2 words changed, lost). The same paragraph with one word changed keeps its values: an edit;
    a paragraph added there, where nothing is missing, and one replaced by text of another length,
    are new text."""
    article = [s for paragraph in make_article(43, paragraphs=45) for s in re.split(r"(?<=\.) ", paragraph)]
    lengths = [len(p.split()) for p in article]
    assert sum(n >= 12 for n in lengths) > 127, "the pages must be past the sketch's cap"
    place = next(i for i in range(40, len(article) - 40) if 20 <= lengths[i] <= 21)
    assert sorted(lengths, reverse=True).index(lengths[place]) >= 16, "the paragraph must be past the 16 longest"
    edited, lightly = _edited_and_lightly(article, place)
    added = [*article[:place], " ".join(make_article(44, paragraphs=1)[0].split()[:24]), *article[place:]]
    replaced = [*article[:place], " ".join(make_article(45, paragraphs=1)[0].split()[:lengths[place] + 8]),
                *article[place + 1:]]
    pages = [_page("chapter", article, "a.example"), _page("edited", edited, "b.example"),
             _page("added", added, "c.example"), _page("replaced", replaced, "d.example"),
             _page("lightly", lightly, "e.example")]
    got = {o.dedup["id"]: o.dedup for o in run_records(pages, tmp_path)}
    assert got["edited"]["status"] != "duplicate", got["edited"]
    assert got["lightly"]["status"] == "duplicate" and got["lightly"]["duplicate_of"] == "chapter", got["lightly"]
    assert got["added"]["status"] == "unique", got["added"]
    assert got["replaced"]["status"] == "unique", got["replaced"]
