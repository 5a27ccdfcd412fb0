"""The multilingual family: its loaders on tiny generated copies of the installed sources (the
real ones are not needed), units for text without spaces, and the set it builds."""

import difflib
import gzip
import random
import shutil
import subprocess
from collections import defaultdict

import pytest
from conftest import wrap_in_template

from streamdedup.evaluate.construct import build_family
from streamdedup.evaluate.family_multilingual import LANGUAGES, build_multilingual
from streamdedup.evaluate.multilingual import (
    _SPACED,
    _unspaced,
    in_language,
    load_handbook,
    load_man_pages,
    load_udhr,
    without_repeated_paragraphs,
)
from streamdedup.evaluate.pages import SourcePage
from streamdedup.evaluate.sets import LabelledSet, split_of
from streamdedup.evaluate.surgery import light_edit, stray_article_text, usable_template
from streamdedup.evaluate.units import SPACES, UNITS

_CYRILLIC = "абвгдежзиклмнопрстуфхцчшщыэюя"
_VIETNAMESE = ["người", "được", "quyền", "tự", "do", "và", "bình", "đẳng", "về", "nhân", "phẩm", "của",
               "mọi", "thành", "viên", "gia", "đình", "những", "điều", "kiện", "sống", "xã", "hội"]


def _text(lang, rng, n):
    """n units of pseudo-text in the language's script."""
    if lang == "zh":
        return "".join(chr(rng.randrange(0x4E00, 0x6000)) + ("。" if i % 17 == 16 else "") for i in range(n))
    if lang == "bo":
        syllables = ("".join(chr(rng.randrange(0x0F40, 0x0F6A)) for _ in range(rng.randint(1, 3))) for _ in range(n))
        return "".join(s + ("། " if i % 11 == 10 else "\u0f0b") for i, s in enumerate(syllables))
    if lang == "ru":
        return " ".join("".join(rng.choices(_CYRILLIC, k=rng.randint(2, 9))) for _ in range(n))
    return " ".join(rng.choices(_VIETNAMESE, k=n))


def _article(lang, seed, paragraphs=5, units=60):
    rng = random.Random(f"{lang}{seed}")
    return [_text(lang, rng, units) for _ in range(paragraphs)]


def test_units_keep_the_text_and_a_light_edit_changes_few_characters():
    zh = _article("zh", 1)
    assert all(UNITS.join(UNITS.split(p)) == p for p in zh)
    bo = _article("bo", 1)[0]
    assert UNITS.join(UNITS.split(bo)) == bo and UNITS.split(bo)[0].endswith("\u0f0b")
    edited = light_edit(zh, random.Random(3), UNITS)
    assert len(edited) == len(zh) and edited != zh
    assert difflib.SequenceMatcher(None, "".join(zh), "".join(edited)).ratio() > 0.85
    # split on spaces, a Chinese paragraph is one 'word' (an edit would move whole paragraphs)
    assert sum(map(SPACES.count, zh)) == len(zh) and sum(map(UNITS.count, zh)) > 300


def test_units_of_thai_and_khmer_are_dictionary_words_with_what_follows():
    thai = "มนุษย์ทั้งหลายเกิดมามีอิสระ, และเสมอภาค"
    assert UNITS.split(thai) == ["มนุษย์", "ทั้ง", "หลาย", "เกิด", "มา", "มี", "อิสระ, ", "และ", "เสมอ", "ภาค"]
    khmer = "ការទទួលស្គាល់សេចក្ដីថ្លៃថ្នូរ"
    assert UNITS.split(khmer) == ["ការ", "ទទួលស្គាល់", "សេចក្ដីថ្លៃថ្នូរ"]
    assert UNITS.join(UNITS.split(thai)) == thai and UNITS.join(UNITS.split(khmer)) == khmer


def test_in_language_by_script():
    assert in_language("安装软件包 apt", "zh") and not in_language("install the package", "zh")
    assert in_language("Всеобщая декларация", "ru") and not in_language("Universal declaration", "ru")
    assert in_language("Mọi người sinh ra đều được tự do", "vi") and not in_language("Moi nguoi sinh ra", "vi")
    assert in_language("มนุษย์ทั้งหลาย", "th") and not in_language("ສະບາຍດີ", "th") and in_language("ສະບາຍດີ", "lo")


def test_handbook_section_keeps_its_in_language_paragraphs_as_p(tmp_path):
    folder = tmp_path / "zh-CN"
    folder.mkdir()
    zh = _article("zh", 2, paragraphs=4)
    body = "".join(f'<div class="para">{p}</div>' for p in zh[:2])
    body += '<div class="para">This paragraph was never translated from English at all.</div>'
    body += f'<div class="para">{zh[2]}<ul><li>{zh[3]}</li></ul></div>'
    (folder / "sect.apt.html").write_text(
        '<?xml version="1.0" encoding="UTF-8"?><html xmlns="http://www.w3.org/1999/xhtml"><head>'
        '<meta http-equiv="Content-Type" content="text/html; charset=UTF-8"/><title>6.2. 命令</title></head>'
        f'<body><div class="navheader">上一页 下一页</div><div class="section">{body}</div></body></html>',
        encoding="utf-8")
    (page,) = load_handbook(folder, "zh")
    assert page.paragraphs == (zh[0], zh[1], zh[3]) and page.lang == "zh" and page.dense
    assert page.site_key == "debian-handbook/sect.apt" and page.title == "6.2. 命令"
    assert page.source.count('<p class="para">') == 2  # the para holding a list stays a div
    assert "never translated" not in page.source  # the untranslated paragraph is not shown
    assert page.words == sum(UNITS.count(p) for p in page.paragraphs)
    # a section still mostly in English is left out
    english = "".join(f'<div class="para">{"An untranslated paragraph of the handbook. " * 8}</div>' for _ in range(6))
    (folder / "sect.apt.html").write_text(f'<html><head><meta charset="utf-8"/></head><body><div class="section">'
                                          f'<div class="para">{zh[0]}</div>{english}</div></body></html>',
                                          encoding="utf-8")
    assert load_handbook(folder, "zh") == []


def test_a_template_still_showing_part_of_its_article_is_not_used():
    def template(extra):
        paragraphs = _article("ru", 9, paragraphs=4, units=30)
        html = wrap_in_template(paragraphs, "Site", "T").replace("</article>", f"</article>{extra}")
        return SourcePage("p", html, tuple(paragraphs), "T", "ru", "s", "multilingual")

    second_half = f"<div class='body'><p>{_text('ru', random.Random(1), 60)}</p></div>"
    assert usable_template(template(second_half)) and stray_article_text(template(second_half))
    teaser = f"<div class='more'><p>{_text('ru', random.Random(1), 30)}</p></div>"  # a related story's teaser
    assert not stray_article_text(template(teaser)) and not stray_article_text(template(""))


def test_declaration_is_cut_into_groups_of_articles(tmp_path):
    rng = random.Random(4)
    articles = "".join(f'<article data-number="{n}"><h2>{_text("bo", rng, 3)}</h2><p>{_text("bo", rng, 90)}</p>'
                       f"</article>" for n in range(1, 5))
    (tmp_path / "bod.html").write_text(
        f'<!doctype html><html lang="bo"><body><h1>{_text("bo", rng, 5)}</h1><header><h2>{_text("bo", rng, 2)}</h2>'
        f'<p>{_text("bo", rng, 120)}</p></header>{articles}</body></html>', encoding="utf-8")
    pages = load_udhr(tmp_path)
    assert [p.site_key for p in pages] == ["udhr/0", "udhr/1", "udhr/2"]
    assert all(p.lang == "bo" and p.dense for p in pages)
    assert pages[0].source.count("<article") == 0 and pages[1].source.count("<article") == 2
    assert 'data-number="3"' in pages[2].source and 'data-number="1"' not in pages[2].source


def _groff_renders_html() -> bool:
    """groff with its HTML device (Debian's groff-base has `groff` but not `-Thtml`)."""
    if shutil.which("groff") is None:
        return False
    done = subprocess.run(["groff", "-Thtml", "-mandoc"], input=b".TH T 1\n", capture_output=True, check=False)
    return done.returncode == 0 and bool(done.stdout)


@pytest.mark.skipif(not _groff_renders_html(), reason="groff's HTML device renders manual pages (package groff)")
def test_manual_page_rendered_by_groff(tmp_path):
    folder = tmp_path / "ru" / "man1"
    folder.mkdir(parents=True)
    rng = random.Random(5)
    paragraphs = [_text("ru", rng, 40) for _ in range(4)]
    roff = ".TH FOO 1\n.SH ИМЯ\nfoo \\- " + _text("ru", rng, 6) + "\n.SH ОПИСАНИЕ\n" + "\n.PP\n".join(paragraphs)
    (folder / "foo.1.gz").write_bytes(gzip.compress(roff.encode()))
    (page,) = load_man_pages(tmp_path / "ru", "ru")
    assert page.site_key == "man/foo" and page.lang == "ru" and not page.dense
    assert page.paragraphs[-4:] == tuple(paragraphs) and "<main>" in page.source


def _pages(per_language=30):
    pages = []
    for lang in LANGUAGES:
        for i in range(per_language):
            paragraphs = _article(lang, i, paragraphs=5, units=80)
            pages.append(SourcePage(f"{lang}:{i}", wrap_in_template(paragraphs, f"Site{lang}{i}", f"T{i}"),
                                    tuple(paragraphs), f"T{lang}{i}", lang, f"doc/{i}", "multilingual",
                                    lang in ("zh", "bo")))
    return pages


def test_family_builds_each_language_on_its_own_hosts_with_every_kind():
    pool = _pages()
    out = LabelledSet("multilingual", "dev")
    build_multilingual(pool, [p for p in pool if usable_template(p)], random.Random(6), out)
    clusters, hosts = defaultdict(set), defaultdict(set)
    for r in out.records:
        clusters[r["cluster"]].add(r["lang"])
        hosts[r["host"]].add(r["lang"])
    assert all(len(langs) == 1 for langs in clusters.values())
    assert {r["lang"] for r in out.records} == set(LANGUAGES)
    variants = {r["variant"] for r in out.records}
    assert {"original", "recrawl", "syndicated", "light_edit", "teaser", "paragraph_swap", "print"} <= variants
    assert {r["negative"] for r in out.records} >= {"same_template", "same_host_article", "short_page", "short"}
    for lang in LANGUAGES:  # one home host per language carries many different articles
        home = [h for h, langs in hosts.items() if h.startswith(f"www.{lang}-")]
        assert len(home) == 1
        assert sum(1 for r in out.records if r["host"] == home[0] and r["variant"] == "original") >= 5


def test_splits_keep_each_document_in_one_split():
    pool = _pages()
    records = build_family(pool, 7, "all", "multilingual")
    sites = {p.name: p.site_key for p in pool}
    by_split = defaultdict(set)
    for r in records:
        by_split[r["split"]].add(sites[r["source_page"]])
    assert by_split["dev"] and by_split["test"] and not by_split["dev"] & by_split["test"]
    assert all(split_of(p) == r["split"] for r in records for p in pool if p.name == r["source_page"])


def test_groff_spaces_between_chinese_characters_are_taken_out():
    html = "&#22312; &#25509;\n&#25910; socket &#65292; abc &#25509; x"  # 在 接 收 ，
    assert _SPACED.sub(_unspaced, html) == "&#22312;&#25509;&#25910; socket &#65292; abc &#25509; x"


def test_paragraphs_shared_by_many_pages_of_a_language_are_not_article():
    colophon = "Этот перевод является бесплатной документацией; прочитайте лицензию GNU."
    pages = [SourcePage(f"man:ru:{i}", "", (f"Статья номер {i} о разном.", colophon), "T", "ru", f"man/{i}",
                        "multilingual") for i in range(4)]
    pages.append(SourcePage("udhr:vie:0", "", (colophon,), "T", "vi", "udhr/0", "multilingual"))
    kept = without_repeated_paragraphs(pages)
    assert [p.paragraphs for p in kept[:4]] == [(f"Статья номер {i} о разном.",) for i in range(4)]
    assert kept[4].paragraphs == (colophon,)  # counted per language


def test_devset_builds_the_family_from_a_source_folder_given(tmp_path, capsys):
    import json

    from streamdedup.evaluate.construct import main

    folder = tmp_path / "declaration"
    folder.mkdir()
    for code, lang in (("bod", "bo"), ("cmn_hans", "zh"), ("rus", "ru"), ("vie", "vi")):
        rng = random.Random(code)
        articles = "".join(f'<article data-number="{n}"><h2>{_text(lang, rng, 3)}</h2><p>{_text(lang, rng, 70)}</p>'
                           f'<p>{_text(lang, rng, 70)}</p></article>' for n in range(1, 31))
        (folder / f"{code}.html").write_text(
            f'<!doctype html><html><body><nav>{_text(lang, rng, 9)}</nav><main><h1>{_text(lang, rng, 4)}</h1>'
            f'<header><p>{_text(lang, rng, 90)}</p></header>{articles}</main><footer>{_text(lang, rng, 12)}</footer>'
            f'</body></html>', encoding="utf-8")  # in <main>: each group's page can be a template too
    out = tmp_path / "ml.jsonl"
    assert main(["--pages", str(folder), "--family", "multilingual", "--split", "all", "--lang", "zh,bo",
                 "--out", str(out)]) == 0
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert {r["lang"] for r in records} == {"zh", "bo"} and {r["split"] for r in records} == {"dev", "test"}
    assert {r["family"] for r in records} == {"multilingual"} and len({r["variant"] for r in records}) >= 5
