"""Where a page's main-text lines sit: in its article's block (the element holding most of its words) or not."""

from __future__ import annotations

import numpy as np

from streamdedup.clean.article_block import INSIDE, OUTSIDE, UNKNOWN, article_lines, inside_marks
from streamdedup.clean.normalize import normalize_text
from streamdedup.clean.template import line_hashes
from streamdedup.fingerprints.wordpairs import WordPairsMethod, with_inside
from streamdedup.record.page import Page
from streamdedup.testing import make_article
from streamdedup.tokens.document import Document

ADDED = ("The council said on Friday it would publish the full report next month, after the families "
         "of the victims have been given time to read it.")
PROMO = ("Subscribe to our free weekly newsletter for the latest stories from our newsroom, delivered "
         "every Friday morning straight to your inbox.")


def _page(body: str) -> str:
    nav = "".join(f"<li><a href='/{s}'>{s}</a></li>" for s in ("world", "politics", "sport"))
    return f"<html><head><title>t</title></head><body><nav><ul>{nav}</ul></nav>{body}<footer>(c)</footer></body></html>"


def _marks(html: str, lines: list[str]) -> dict[str, int]:
    text = normalize_text("\n".join(lines))
    return dict(zip(lines, article_lines(html, text).tolist(), strict=True))


def test_an_added_paragraph_is_in_the_article_block_and_a_hosts_box_is_not():
    """The article's paragraphs and one an editor added beside them are in the block that holds most
    of the text; a newsletter box inside the same article element, outside that block, is not."""
    story = make_article(1, paragraphs=6)
    body = "".join(f"<p>{p}</p>" for p in [*story, ADDED])
    html = _page(f"<article><h1>Title</h1><div class='text'>{body}</div><div class='promo'><p>{PROMO}</p></div>"
                 "</article>")
    marks = _marks(html, ["Title", *story, ADDED, PROMO])
    assert all(marks[p] == INSIDE for p in story)
    assert marks[ADDED] == INSIDE
    assert marks[PROMO] == OUTSIDE
    assert marks["Title"] == UNKNOWN  # a line under 12 words is not asked


def test_a_paragraph_with_inline_markup_and_one_without_spaces_are_found():
    """A paragraph is found by a run of its text in one element: links and bold words inside it
    split its text, and a Chinese one has no spaces to start a run at."""
    story = make_article(2, paragraphs=4)
    linked = story[1].split()
    marked_up = " ".join(linked[:3]) + " <a href='/x'>" + " ".join(linked[3:5]) + "</a> <b>" + " ".join(linked[5:])
    chinese = "人人有思想、良心和宗教自由的权利;此项权利包括改变他的宗教或信仰的自由,以及单独或集体、公开或秘密地以教义表示他的信仰的自由。"
    html = _page(f"<div class='text'><p>{story[0]}</p><p>{marked_up}</b></p><p>{story[2]}</p><p>{chinese}</p></div>"
                 f"<div class='box'><p>{PROMO}</p></div>")
    marks = _marks(html, [story[0], story[1], story[2], chinese, PROMO])
    assert [marks[line] for line in (story[0], story[1], story[2], chinese)] == [INSIDE] * 4
    assert marks[PROMO] == OUTSIDE


def test_no_block_narrower_than_the_page_says_nothing():
    """Paragraphs straight in the page's body: every line would be in the block, so none is known;
    and a line the page does not hold (a rescue's text) is not known either."""
    story = make_article(3, paragraphs=4)
    html = f"<html><body>{''.join(f'<p>{p}</p>' for p in story)}</body></html>"
    assert set(_marks(html, story).values()) == {UNKNOWN}
    inside = _page(f"<article>{''.join(f'<p>{p}</p>' for p in story)}</article>")
    assert _marks(inside, [*story, ADDED])[ADDED] == UNKNOWN


def test_a_pages_marks_are_found_from_its_bytes_as_the_pipeline_decodes_them():
    """`inside_marks` decodes the page's bytes by its declared charset and answers for the lines
    asked by their hashes (in the order asked); a page that is not HTML says nothing."""
    story = ["Сообщается, что городской совет в пятницу опубликует полный доклад о наводнении, после "
             "того как семьи пострадавших получат время его прочитать и обсудить с юристами.",
             "Жители долины говорят, что вода поднялась за несколько часов, а предупреждение пришло "
             "слишком поздно, когда многие дороги уже были закрыты для движения транспорта."]
    html = _page(f"<article><div>{''.join(f'<p>{p}</p>' for p in story)}</div><aside><p>{PROMO}</p></aside></article>")
    text = normalize_text("\n".join([*story, PROMO]))
    page = Page(id="x", url="https://a.example/x", content=html.encode("cp1251", "replace"),
                content_type="text/html; charset=windows-1251", fetched_at=None, lang="ru", record={})
    assert inside_marks(page, text, line_hashes(text)[::-1]).tolist() == [False, True, True]
    plain = Page(id="y", url="https://a.example/y", content="\n".join(story), content_type="text/plain",
                 fetched_at=None, lang="ru", record={})
    assert not inside_marks(plain, text, line_hashes(text)).any()


def test_the_marks_travel_in_the_encoded_signature_and_an_older_record_reads_none():
    """A bit a kept paragraph after its numbers, written where one is inside: decoded as encoded,
    2 bytes for 9-16 paragraphs; a record of 0.17.0 (numbers, no marks) or 0.16.0 (neither) decodes
    with none (the old rule) and is laid out as this version's; a page with none inside adds nothing."""
    method = WordPairsMethod()
    story = make_article(4, paragraphs=10)
    signature = method.signature(Document.from_text(normalize_text("\n".join(story)), "en"))
    assert signature is not None and len(signature.paragraphs) == 10
    inside = np.array([True] * 9 + [False])
    data = method.encode(with_inside(signature, inside))
    plain = method.encode(signature)
    assert len(data) == len(plain) + 2 and method.encode(with_inside(signature, ~inside & False)) == plain
    assert method.decode(data).inside.tolist() == inside.tolist()
    assert method.decode(data).numbers.tolist() == signature.numbers.tolist()
    for older in (plain, plain[: len(plain) - 10]):  # 0.17.0's layout, 0.16.0's
        assert method.laid_out_as_mine(older) and len(method.decode(older).inside) == 0
    assert method.laid_out_as_mine(data) and not method.laid_out_as_mine(data[:-1])


TITLE = "Flooding in the valley towns"
LEAD = ("Three months after the water rose, the valley towns are still counting the cost, and the council "
        "has promised a full account of what went wrong before the winter.")
COOKIES = ("This site uses cookies to help the valley towns newsroom understand how readers use its pages; "
           "you can change your choice in the settings at any time.")


def test_a_standfirst_between_the_title_and_the_block_is_the_articles_own():
    """A line in a box of its own after the page's `<h1>` and before the article's block, sharing a
    word with the title, is the article's lead (issue 57: a standfirst outside the block was read as
    a host's line). A host's line there that speaks of something else (a template's leftover deck
    of another story), a notice before the title and a line after the block stay outside, as does
    every line of a page without an `<h1>`. Chinese shares pairs of characters."""
    story = make_article(5, paragraphs=6)
    text = "".join(f"<p>{p}</p>" for p in story)
    html = _page(f"<div class='cookies'><p>{COOKIES}</p></div><article><h1>{TITLE}</h1>"
                 f"<div class='deck'><p>{LEAD}</p></div><div class='promo'><p>{PROMO}</p></div>"
                 f"<div class='text'>{text}</div><div class='more'><p>More on the valley towns: {ADDED}</p></div>"
                 "</article>")
    marks = _marks(html, [COOKIES, LEAD, PROMO, *story, f"More on the valley towns: {ADDED}"])
    assert marks[LEAD] == INSIDE
    assert marks[PROMO] == OUTSIDE and marks[COOKIES] == OUTSIDE
    assert marks[f"More on the valley towns: {ADDED}"] == OUTSIDE
    assert all(marks[p] == INSIDE for p in story)
    untitled = html.replace(f"<h1>{TITLE}</h1>", f"<p class='kicker'>{TITLE}</p>")
    assert _marks(untitled, [LEAD, *story])[LEAD] == OUTSIDE
    chinese_lead = "洪水过后三个月,山谷里的城镇仍在清点损失,市议会承诺在冬季之前对出错的原因作出完整的说明和交代。"
    chinese = _page(f"<article><h1>山谷城镇的洪水</h1><div class='deck'><p>{chinese_lead}</p></div>"
                    f"<div class='text'>{text}</div></article>")
    assert _marks(chinese, [chinese_lead, *story])[chinese_lead] == INSIDE


def test_a_line_is_found_in_the_element_whose_text_it_is_where_another_starts_alike():
    """A title made of the lead's opening words (a post without a title, a wire brief) starts like
    the lead: the lead sits in the block's paragraph that holds it, not in the title's element before
    the block (`bench/crawler_cases.py --kinds hostile_lead`: 4 leads of 8 were read as outside).
    A host's box after the text repeating the lead's opening words is the box's line; a lead split
    by a link finds its paragraph by the text around it."""
    story = make_article(6, paragraphs=6)
    lead = " ".join(make_article(7, paragraphs=1)[0].split()[:40])
    summary, words = " ".join(lead.split()[:20]), lead.split()
    linked = f"{' '.join(words[:4])} <a href='/x'>{' '.join(words[4:6])}</a> {' '.join(words[6:])}"
    for title, paragraph in ((lead[:60], lead), (lead[:60], linked)):
        html = _page(f"<article><header><h1>{title}</h1></header><div class='entry-content'><p>{paragraph}</p>"
                     f"{''.join(f'<p>{p}</p>' for p in story)}</div><div class='summary'><p>{summary}</p></div>"
                     "</article>")
        marks = _marks(html, [lead, *story, summary])
        assert marks[lead] == INSIDE and all(marks[p] == INSIDE for p in story), (title, paragraph)
        assert marks[summary] == OUTSIDE, (title, paragraph)
