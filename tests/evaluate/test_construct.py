"""The labelled set built by construction, on small generated 'test pages' (never ../shared)."""

import io
import tarfile
from collections import Counter

from conftest import make_article, wrap_in_template

from streamdedup.evaluate.construct import SourcePage, build_devset, distinct_articles, in_template, load_test_pages
from streamdedup.evaluate.surgery import own_page


def _pages(n=12):
    pages = []
    for i in range(n):
        paragraphs = make_article(100 + i, paragraphs=8)
        pages.append(SourcePage(f"site{i}", wrap_in_template(paragraphs, f"Site{i}", f"Title {i}"),
                              tuple(paragraphs), f"Title {i}", "en"))
    return pages


def test_same_seed_same_set():
    assert build_devset(_pages(), 1, "all") == build_devset(_pages(), 1, "all")
    assert build_devset(_pages(), 1, "all") != build_devset(_pages(), 2, "all")


def test_dev_and_test_share_no_article():
    dev, test = build_devset(_pages(), 1, "dev"), build_devset(_pages(), 1, "test")
    assert dev and test
    assert not {r["source_page"] for r in dev if r["variant"] != "short"} & \
        {r["source_page"] for r in test if r["variant"] != "short"}


def test_syndicated_copy_is_the_article_inside_another_real_template():
    pages = _pages()
    article, template = pages[0], pages[1]
    html = in_template(template, article.paragraphs, article.title)
    assert article.paragraphs[3] in html
    assert "Most read on Site1" in html  # the other site's boilerplate stays
    assert template.paragraphs[3] not in html  # its own article is gone


def test_labels_follow_the_construction():
    records = build_devset(_pages(20), 3, "all")
    by_cluster = Counter(r["cluster"] for r in records)
    for r in records:
        if r["variant"] in ("short", "same_template"):
            assert by_cluster[r["cluster"]] == 1 and r["cluster"].startswith("neg-")
        else:
            assert r["cluster"] == f"c-{r['source_page']}"
    assert {r["variant"] for r in records} >= {"original", "syndicated", "short"}
    assert [r["fetched_at"] for r in records] == sorted(r["fetched_at"] for r in records)


def test_variants_of_one_text_are_kept_once():
    pages = _pages(3)
    copy = SourcePage("copy", pages[0].source, pages[0].paragraphs, "Copy", "en")
    assert [p.name for p in distinct_articles(pages + [copy])] == ["site0", "site1", "site2"]


def test_load_from_tarball(tmp_path):
    archive = tmp_path / "pages.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name, content in {"test/test-pages/a/source.html": "<p>src</p>",
                              "test/test-pages/a/expected.html": "<div><p>one</p><p>two</p></div>",
                              "test/test-pages/a/expected-metadata.json": '{"title": "A", "lang": "en"}'}.items():
            data = content.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    [page] = load_test_pages(archive)
    assert (page.name, page.paragraphs, page.title, page.lang) == ("a", ("one", "two"), "A", "en")


def test_an_original_shows_the_article_its_copies_carry_not_the_unannotated_rest():
    """A page whose located article is only part of what it shows (snippets that miss its last
    paragraphs): the original and its re-crawl carry the located part, as the copies do."""
    pages = _pages(20)
    full = make_article(999, paragraphs=10)
    pages[0] = SourcePage("site0", wrap_in_template(full, "Site0", "Title 0"), tuple(full[:4]), "Title 0", "en")
    records = build_devset(pages, 3, "all")
    own = [r for r in records if r["source_page"] == "site0" and r["variant"] in ("original", "recrawl")]
    assert own and all(full[3] in r["content"] and full[7] not in r["content"] for r in own)
    assert all("Most read on Site0" in r["content"] for r in own)  # its own template stays


def test_a_single_located_paragraph_still_replaces_the_page_article():
    full = make_article(998, paragraphs=10)
    page = SourcePage("one", wrap_in_template(full, "One", "Title"), (full[2],), "Title", "en")
    html = own_page(page)
    assert full[2] in html and full[5] not in html and "Most read on One" in html


def test_pages_that_are_no_whole_archive_are_named_in_one_line(tmp_path, capsys):
    """`devset --pages` of a download cut short or of another file ended in an EOFError or
    tarfile.ReadError traceback."""
    from streamdedup.evaluate.construct import main

    whole = tmp_path / "pages.tar.gz"
    with tarfile.open(whole, "w:gz") as tar:
        data = make_article(3, paragraphs=40)[0].encode() * 200
        info = tarfile.TarInfo("test/test-pages/a/source.html")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    other = tmp_path / "notes.txt"
    other.write_text("not an archive\n")
    for path, said in ((cut, "it ends early"), (other, "another kind of file")):
        code = main(["--pages", str(path), "--family", "web", "--out", str(tmp_path / "set.jsonl")])
        err = capsys.readouterr().err.strip()
        assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
        assert err.startswith(f"streamdedup devset: error: {path} is not a whole tar archive ({said}"), err
