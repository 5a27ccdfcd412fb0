"""`<noscript>` read as a browser with scripting on reads it (`clean.noscript`), and `no_text`'s reason."""

import pytest

from streamdedup.clean.extract import extract_main_text
from streamdedup.clean.fast_extract import extract_fast
from streamdedup.clean.learned_layout import WARM_AFTER, SiteLayout, learned_texts
from streamdedup.clean.noscript import noscript_sources
from streamdedup.clean.pipeline import CleaningConfig, clean_page
from streamdedup.record.page import page_from_record
from streamdedup.record.rejection import Reason, Rejected
from streamdedup.testing import make_article, run_records, wrap_in_template

TOPICS = ("wolves", "bears", "chamois", "eagles", "deer", "otters")
ARTICLE = "".join(
    f"<p>The park's rangers counted the {topic} of the Marsican valleys again this winter, walking the"
    f" same transects as in every year since the survey began, and found more {topic} than ever.</p>"
    for topic in TOPICS)
OTHER = "".join(f"<p>A story about {topic} in a harbour town, told by a fisherman who saw them at dawn"
                f" from his boat while mending nets near the old lighthouse.</p>" for topic in TOPICS)
HEADER = "<div id='top'><a href='/'>Home</a> <a href='/news'>News</a></div>"


def page(body: str, head: str = "") -> str:
    return f"<!doctype html><html><head><title>Park</title>{head}</head><body>{body}</body></html>"


# parcoabruzzo.it.58354 (trafilatura's test pages): a "no JavaScript" banner opened in one noscript
# and closed in another at the page's end; the scripting-off parse left the page inside the first
BANNER_PAGE = page(f"<noscript><div id='nojava'></noscript>{HEADER}<article><h1>Census</h1>{ARTICLE}</article>"
                   "<noscript></div></noscript><script>var x = 1;</script>")


def test_a_page_after_a_noscript_its_parser_left_open_is_read():
    text = extract_fast(BANNER_PAGE)
    assert "counted the wolves" in text and "more otters than ever" in text


def test_a_page_inside_a_noscript_never_closed_is_read():
    text = extract_fast(page(f"<noscript><div class='page'>{ARTICLE}</div>"))
    assert "counted the wolves" in text and "more otters than ever" in text


@pytest.mark.parametrize("notice", [
    "<noscript><p>Please enable JavaScript to use all the features of this site.</p></noscript>",
    "<noscript><div class='warn'><p>JavaScript is off: enable it to see the map.</p></div></noscript>",
    "<noscript><iframe src='https://tags.example/ns.html?id=GTM-1' height=0 width=0></iframe></noscript>",
    "<noscript><img src='https://pixel.example/p.gif'></noscript>",
    "<noscript><style>.gallery{opacity:1}</style><p>Enable JavaScript for the gallery.</p></noscript>",
    "<noscript><iframe src='https://tags.example/ns.html'></iframe><p>Enable JavaScript, GTM.</p></noscript>",
])
@pytest.mark.parametrize("where", ["head", "before", "after"])
def test_an_ordinary_noscript_notice_stays_out_of_the_text(notice, where):
    html = page(ARTICLE + (notice if where == "after" else ""), notice if where == "head" else "")
    if where == "before":
        html = page(notice + ARTICLE)
    text = extract_fast(html)
    assert "counted the wolves" in text and "more otters than ever" in text
    assert "JavaScript" not in text and "GTM" not in text and "iframe" not in text


def test_many_noscript_images_in_an_article_stay_out_of_its_text():
    lazy = "<img data-src='a.jpg'><noscript><img src='a.jpg' alt='a photo'></noscript>"
    text = extract_fast(page("<article>" + ARTICLE.replace("</p>", "</p>" + lazy) + "</article>"))
    assert "counted the wolves" in text and "more otters than ever" in text
    assert "<img" not in text and "a.jpg" not in text


def test_text_in_an_unclosed_noscript_is_not_added_to_a_page_that_shows_other_text():
    # a browser with scripting on shows the visible story only: the noscript's copy of another
    # article must not make this page that article's duplicate (or the article this page's)
    text = extract_fast(page(f"<article>{OTHER}</article><noscript><div>{ARTICLE}</div>"))
    assert "fisherman" in text and "rangers" not in text


def test_a_noscript_tag_in_a_script_string_does_not_hide_the_page():
    html = page(f"<script>document.write('<noscript>');</script>{HEADER}<article>{ARTICLE}</article>"
                "<noscript><img src=p.gif></noscript>")
    assert "more otters than ever" in extract_fast(html)


def test_the_rewrite_is_one_linear_pass_and_leaves_pages_without_noscript_alone():
    assert noscript_sources(BANNER_PAGE.replace("noscript", "b")) == (BANNER_PAGE.replace("noscript", "b"), "")
    many = page("<noscript><img src=p.gif></noscript>" * 20000 + ARTICLE)
    assert noscript_sources(many).scripting_on.count("<template>") == 20000


def test_the_banner_page_is_judged_not_rejected(tmp_path):
    records = [{"id": "parco", "url": "https://parco.example/news/1", "content": BANNER_PAGE},
               {"id": "copy", "url": "https://parco.example/news/1?print", "content": page(ARTICLE)}]
    outcomes = run_records(records, tmp_path / "state")
    assert [outcome.status for outcome in outcomes] == ["unique", "duplicate"]


def test_helper_and_in_process_read_the_banner_page_alike():
    assert extract_main_text(BANNER_PAGE, "fast", max_seconds=5.0) == extract_fast(BANNER_PAGE)


def rejection(html: str) -> Rejected:
    with pytest.raises(Rejected) as caught:
        clean_page(page_from_record({"url": "u", "content": html}, max_content_bytes=100_000), CleaningConfig())
    assert caught.value.reason is Reason.NO_TEXT
    return caught.value


def test_no_text_says_the_page_shows_words_where_it_does():
    message = str(rejection("<html><body><header><nav><ul><li><a href=/>Home</a></li><li><a href=/n>News of the"
                            " park</a></li></ul></nav></header><footer><p>Copyright 2024 Park</p></footer></body></html>"))
    assert "the page shows 8 words" in message and "only markup" not in message


def test_no_text_says_only_markup_where_the_page_shows_nothing():
    assert "only markup" in str(rejection(page("<div><img src=a.png></div>")))


def test_a_warm_sites_page_inside_a_noscript_never_closed_is_read():
    # the learned path parsed the scripting-on view only: the learned container was not on the page
    # (all of it in the noscript's fragment), and its fallback read that same view: no text
    layout = SiteLayout()
    for seed in range(WARM_AFTER + 1):
        layout.observe(learned_texts(wrap_in_template(make_article(seed), "park.example"), layout.request(),
                                     visible=False).layout)
    assert layout.warm
    html = wrap_in_template(make_article(50), "park.example").replace("<body>", "<body><noscript>")
    texts = learned_texts(html, layout.request(), visible=True)
    assert texts.main == extract_fast(html) and make_article(50)[-1] in texts.main
    assert layout.observe(texts.layout) == "fallback"


LINKS = "".join(f"<li><a href='/s/{i}'>The rangers counted wolves and bears in valley number {i} this"
                " winter</a></li>" for i in range(40))


@pytest.mark.parametrize("template", [False, True])
def test_too_few_words_says_how_many_the_page_shows_and_what_to_try(tmp_path, template):
    # the extractor kept 4 words of a page that shows 484: not "only boilerplate or markup"
    html = f"<html><body><nav><ul>{LINKS}</ul></nav><article><p>Photo of the day.</p></article></body></html>"
    overrides = {} if template else {"template": None}
    [outcome] = run_records([{"id": "p", "url": "https://park.example/photo", "content": html}],
                            tmp_path / "state", **overrides)
    assert outcome.status == "rejected" and outcome.dedup["reason"] == "no_text"
    detail = outcome.dedup["detail"]
    assert "the main text has 4 words" in detail and "the page shows 484 words" in detail
    assert "--extractor trafilatura" in detail and "only boilerplate" not in detail


def test_too_few_words_on_a_page_that_shows_no_more_says_so(tmp_path):
    [outcome] = run_records([{"id": "p", "url": "https://park.example/p", "content": page("<p>Photo of the day.</p>")}],
                            tmp_path / "state")
    detail = outcome.dedup["detail"]
    assert outcome.dedup["reason"] == "no_text" and "the main text has 4 words" in detail
    assert "the page shows no more" in detail and "--extractor" not in detail
