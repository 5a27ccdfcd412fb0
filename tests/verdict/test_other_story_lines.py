"""A line one earlier page of a host showed is the host's where that page is another story's.

A host's second page shows a teaser of the story its first page ran (a "read more" box); the
template model makes a line the host's only once two pages show it, so against a copy of an
article on another site the teaser was the page's new text, and the copy was unique. The model
keeps which page showed a line one page showed (`SiteTemplate.shown_once_by`), and the engine
takes the line out of the new text where that page is not the page's own story
(`fingerprints.one_page_lines`). A paginated article's parts, a story's revisions and its re-fetches
keep their lines as content."""

from __future__ import annotations

from streamdedup.testing import make_article, run_records, wrap_in_template

# another story's teaser, in the main text (26 words)
TEASER = ("Read more: the harbour council votes next week on the new ferry timetable, after months of "
          "complaints from island residents about cancelled crossings and missed connections.")


def _page(page_id: str, paragraphs: list[str], site: str, path: str = "") -> dict:
    return {"id": page_id, "url": f"https://{site}/{path or page_id}", "fetched_at": "2026-01-01T00:00:00Z",
            "html": wrap_in_template(paragraphs, site)}


def _verdicts(pages: list[dict], tmp_path) -> dict[str, dict]:
    return {o.dedup["id"]: o.dedup for o in run_records(pages, tmp_path)}


def test_a_hosts_second_page_copying_an_article_beside_another_storys_teaser_is_a_duplicate(tmp_path):
    """The teaser its host's first page (another story) showed is the host's: the copy is the
    article's duplicate. Without that page (the teaser on no earlier page) it is the copy's new text:
    a paragraph inside the copy, between two of the article's."""
    ferry, article = make_article(31, paragraphs=6), make_article(32, paragraphs=6)
    pages = [_page("ferry", [*ferry[:3], TEASER, *ferry[3:]], "harbour.example"),
             _page("article", article, "wire.example"),
             _page("copy", [*article[:3], TEASER, *article[3:]], "harbour.example")]
    got = _verdicts(pages, tmp_path)
    assert got["copy"]["status"] == "duplicate" and got["copy"]["duplicate_of"] == "article", got["copy"]
    alone = _verdicts(pages[1:], tmp_path / "alone")
    assert alone["copy"]["status"] == "unique", alone["copy"]


def test_a_view_all_page_after_its_parts_is_no_duplicate_of_a_part(tmp_path):
    """`?page=1` then `?page=2` then the view-all page: the first part's lines are the story's, not
    the host's (one page of the site by URL), and the view-all page holds both parts."""
    story = make_article(33, paragraphs=8)
    pages = [_page("part1", story[:2], "paged.example", "story/ferry?page=1"),
             _page("part2", story[2:], "paged.example", "story/ferry?page=2"),
             _page("full", story, "paged.example", "story/ferry")]
    got = _verdicts(pages, tmp_path)
    assert got["full"]["status"] == "unique" and "part2" in got["full"].get("supersedes", []), got["full"]


def test_a_revision_restoring_a_paragraph_is_no_duplicate_of_the_one_that_dropped_it(tmp_path):
    """A story's first fetch, a second at another URL without a paragraph, a third restoring it:
    the paragraph only the first showed is the story's, and the third is not the second's duplicate."""
    story = make_article(34, paragraphs=8)
    pages = [_page("first", story, "news.example", "2026/story"),
             _page("other", make_article(35, paragraphs=6), "news.example"),
             _page("second", [*story[:4], *story[5:]], "news.example", "2026/story-updated"),
             _page("third", story, "news.example", "2026/story-final")]
    got = _verdicts(pages, tmp_path)
    assert got["third"].get("duplicate_of") != "second", got["third"]


def test_lines_of_a_page_linked_to_the_page_stay_its_new_text():
    """The engine's step alone: a paragraph one earlier page showed is marked shown (no new text)
    only where that page is not linked, neither the page's own URL nor a candidate (a story's
    earlier fetch, which a revision restoring the paragraph finds); a re-fetch keeps no such line."""
    import numpy as np

    from streamdedup.clean.page_urls import document_key, document_tag
    from streamdedup.clean.template import NO_LINES, line_hashes
    from streamdedup.fingerprinter import fingerprint_text
    from streamdedup.fingerprints.one_page_lines import with_one_page_lines, with_other_stories_lines
    from streamdedup.fingerprints.paragraph_rows import shown_before
    from streamdedup.fingerprints.wordpairs import WordPairsMethod

    method = WordPairsMethod()
    story = make_article(40, paragraphs=4)
    text = "\n".join([*story[:2], TEASER, *story[2:]])
    signature = fingerprint_text(text, "en", [method], 5)[method.name]
    hashes = line_hashes(text)
    first = document_key("https://news.example/2026/story")
    documents = np.where(hashes == hashes[2], np.uint32(document_tag(first)), np.uint32(0))
    kept = with_one_page_lines(signature, method, text, hashes, documents, NO_LINES, document_key("https://news.example/b"),
                               "en")
    assert [group.document for group in kept.one_page] == [document_tag(first)]
    assert with_other_stories_lines(kept, {document_tag(first)}) is kept  # linked: its own story's line
    marked = with_other_stories_lines(kept, {document_tag(document_key("https://wire.example/a"))})
    assert shown_before(marked.paragraphs).tolist() == [False, False, True, False, False]
    assert not shown_before(kept.paragraphs).any()
    # the page at the URL that showed the line (a re-fetch): its own story's line, kept as none
    assert with_one_page_lines(signature, method, text, hashes, documents, NO_LINES, first, "en") is signature


def test_lines_an_attacker_showed_on_his_host_keep_an_article_of_another_host(tmp_path):
    """A hostile page on the attacker's host shows the paragraph a real article adds to a copy,
    beside another story: the article, on another host, stays unique (a host's lines are its own)."""
    article, added = make_article(36, paragraphs=6), make_article(37, paragraphs=1)[0]
    pages = [_page("bait", [*make_article(38, paragraphs=4), added], "attacker.example"),
             _page("bait2", make_article(39, paragraphs=4), "attacker.example"),
             _page("article", article, "wire.example"),
             _page("real", [*article, added], "paper.example")]
    got = _verdicts(pages, tmp_path)
    assert got["real"]["status"] == "unique" and got["real"].get("supersedes") == ["article"], got["real"]


def test_the_lines_of_one_page_cross_to_the_index_partitions_as_they_are():
    """The global topology's request carries the page's lines of one earlier page (`one_page`) after its
    site's shown lines: decoded, each group's page, paragraphs and word pairs are the ones sent; a
    request without them is written as before (`shown` its tail)."""
    import numpy as np

    from streamdedup.fingerprints.one_page_lines import decode_one_page, encode_one_page
    from streamdedup.fingerprints.wordpairs import OnePageLines, ShownLines, WordPairsMethod, WordPairsSignature
    from streamdedup.runtime.scaleout.messages import IndexRequest
    from streamdedup.runtime.scaleout.routing import ORDER_BYTES
    from streamdedup.store.layout import DocRecord
    from streamdedup.tokens.document import Document

    method = WordPairsMethod()
    pairs = method.pairs_signature(Document.from_text(TEASER, "en"))
    mask = np.array([False, True, False, False, False, False, False, False, True, False], dtype=bool)
    signature = WordPairsSignature(pairs.packed, pairs.set_size,
                                   one_page=(OnePageLines(7, ShownLines(TEASER, "en", method), mask),))
    data = encode_one_page(signature, method)
    [group] = decode_one_page(data, method)
    assert group.document == 7 and group.paragraphs.tolist() == mask.tolist()
    assert group.lines.pairs is not None and method.encode(group.lines.pairs) == method.encode(pairs)
    doc = DocRecord(0, "p", 1, "", site=3, document=9)
    request = IndexRequest(b"\x00" * ORDER_BYTES, doc, {}, made_by=b"m" * 8, judged_with=b"j" * 8, shown=b"shown",
                           one_page=data)
    assert IndexRequest.decode(request.encode()) == request
    plain = IndexRequest(b"\x00" * ORDER_BYTES, doc, {}, made_by=b"m" * 8, judged_with=b"j" * 8, shown=b"shown")
    assert plain.encode().endswith(b"shown") and IndexRequest.decode(plain.encode()) == plain


def _edited(paragraphs: list[str], every: int) -> list[str]:
    """The paragraphs with every `every`-th word replaced: scattered edits, no run of new words."""
    out = []
    for paragraph in paragraphs:
        words = paragraph.split()
        out.append(" ".join("revised" if i % every == every // 2 else w for i, w in enumerate(words)))
    return out


# another story's box on the host's first page: more words than a short copy's own edits make pairs
BOX = [TEASER, "Also read: the ferry operator answers readers' questions on refunds, season tickets, "
       "winter crossings, bicycles on board and the new booking site, in a live chat on Thursday evening."]


def test_a_lightly_edited_copy_beside_another_storys_box_reads_its_edits_as_edits(tmp_path):
    """Scattered word edits read as edits (no run of new words) on the page's own text: the host's
    box, one other story's lines, is a run of new pairs, not words of the copy changed. With the box
    over a quarter of the copy's pairs, the edits were read as new pairs, and the copy was unique."""
    ferry, article = make_article(41, paragraphs=4), make_article(42, paragraphs=4, sentences=4)
    edited = _edited(article, 16)
    pages = [_page("ferry", [*ferry, *BOX], "harbour.example"),
             _page("article", article, "wire.example"),
             _page("copy", [*edited, *BOX], "harbour.example")]
    got = _verdicts(pages, tmp_path)
    assert got["copy"]["status"] == "duplicate" and got["copy"]["duplicate_of"] == "article", got["copy"]


def test_notes_added_beside_another_storys_box_stay_new_text(tmp_path):
    """The copy adding two short notes (18 and 19 words, each under a paragraph's 20) beside the box
    is unique, as it is without the box: the notes are runs of new words, which reading edits as
    edits keeps, and the pairs taken out are the box's. A box cannot hide a page's own additions."""
    ferry, article = make_article(41, paragraphs=4), make_article(42, paragraphs=5, sentences=4)
    notes = ["Correction: an earlier version named the wrong harbour master and gave the vote's date as a Tuesday.",
             "Update: the council postponed the vote by a week after the operator asked for more time to reply."]
    copy = [*_edited(article, 24), *notes]
    for box, folder in ((BOX, "box"), ([], "plain")):
        pages = [_page("ferry", [*ferry, *BOX], "harbour.example"),
                 _page("article", article, "wire.example"),
                 _page("copy", [*copy, *box], "harbour.example")]
        got = _verdicts(pages, tmp_path / folder)
        assert got["copy"]["status"] == "unique" and got["copy"].get("supersedes") == ["article"], (folder, got["copy"])
