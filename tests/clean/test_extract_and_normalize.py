import pytest
from conftest import make_article, wrap_in_template

from streamdedup.clean.extract import extract_main_text, is_html
from streamdedup.clean.normalize import normalize_text
from streamdedup.clean.pipeline import CleaningConfig, clean_page
from streamdedup.record.page import page_from_record
from streamdedup.record.rejection import Reason, Rejected


@pytest.mark.parametrize("extractor", ["trafilatura", "resiliparse"])
def test_main_content_drops_template(extractor):
    article = make_article(1)
    html = wrap_in_template(article, "Daily Planet")
    text = extract_main_text(html, extractor)
    assert article[0][:60] in text and article[-1][-60:] in text
    assert "Most read on Daily Planet" not in text
    assert "Cookie settings" not in text


def test_whole_page_baseline_keeps_template():
    text = extract_main_text(wrap_in_template(make_article(1), "Daily Planet"), "none")
    assert "Most read on Daily Planet" in text


def test_unknown_extractor_is_named():
    with pytest.raises(ValueError, match="unknown extractor 'boiler'"):
        extract_main_text("<p>x</p>", "boiler")


def test_normalize_folds_case_width_quotes_and_spaces():
    assert normalize_text("ＦＵＬＬ\u00a0width  “Quotes” it’s\n\n\nNext ß") == 'full width "quotes" it\'s\nnext ss'


def test_plain_text_is_not_parsed_as_html():
    assert not is_html("text/html", "just words, no markup")
    page = page_from_record({"url": "u", "content": "Just  WORDS.", "content_type": "text/plain"},
                            max_content_bytes=1000)
    assert clean_page(page, CleaningConfig()) == "just words."


def test_markup_only_page_has_no_text():
    page = page_from_record({"url": "u", "content": "<html><body><div><img src=x></div></body></html>"},
                            max_content_bytes=1000)
    with pytest.raises(Rejected) as caught:
        clean_page(page, CleaningConfig())
    assert caught.value.reason is Reason.NO_TEXT


def test_binary_content_type_is_refused():
    page = page_from_record({"url": "u", "content": "x", "content_type": "image/png"}, max_content_bytes=10)
    with pytest.raises(Rejected) as caught:
        clean_page(page, CleaningConfig())
    assert caught.value.reason is Reason.UNSUPPORTED_CONTENT_TYPE


def test_a_parse_that_runs_too_long_is_cut_off(monkeypatch):
    import time

    from streamdedup.clean import extract

    def slow(html: str) -> str:
        time.sleep(5)
        return "never"

    monkeypatch.setitem(extract._BACKENDS, "trafilatura", slow)
    page = page_from_record({"url": "u", "content": "<html><body><p>x</p></body></html>"}, max_content_bytes=1000)
    started = time.monotonic()
    with pytest.raises(Rejected) as caught:  # trafilatura runs under the alarm (fast and resiliparse: a killed helper)
        clean_page(page, CleaningConfig(extractor="trafilatura", max_seconds=0.2))
    assert caught.value.reason is Reason.TIMEOUT
    assert time.monotonic() - started < 2


def test_whitespace_tidying_equals_the_substitution_rules():
    """Spaces/tabs runs -> ' ', whitespace runs with a newline -> '\\n', stripped: the two regex
    substitutions that tidy_whitespace replaces, on random whitespace-heavy strings."""
    import random
    import re

    from streamdedup.clean.normalize import tidy_whitespace

    def by_regex(text):
        return re.sub(r"\s*\n\s*", "\n", re.sub(r"[^\S\n]+", " ", text)).strip()

    rng = random.Random(5)
    for alphabet in (" \n\t\r\x0b\x0c\x1c\x85\u2028\u00a0\u3000ab.", " \n  ab", "é \n a\u00a0"):
        for _ in range(3000):
            text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14)))
            assert tidy_whitespace(text) == by_regex(text), repr(text)


def _spy_trafilatura(monkeypatch):
    """Records each pass of trafilatura: 'main' (its main extractor), 'compare' (its readability/
    justext comparison), as clean/trafilatura_once.py runs them."""
    from streamdedup.clean import trafilatura_once

    calls: list[str] = []
    for name, label in (("extract_content", "main"), ("compare_extraction", "compare")):
        real = getattr(trafilatura_once, name)

        def spy(*args, _real=real, _label=label):
            calls.append(_label)
            return _real(*args)

        monkeypatch.setattr(trafilatura_once, name, spy)
    return calls


def test_an_article_page_is_read_by_trafilaturas_main_extractor_alone(monkeypatch):
    """The readability/justext comparison doubles trafilatura's cost; a page its main extractor
    reads well does not need it."""
    calls = _spy_trafilatura(monkeypatch)
    article = make_article(2)
    text = extract_main_text(wrap_in_template(article, "Daily Planet"), "trafilatura")
    assert article[0][:60] in text and article[-1][-60:] in text
    assert calls == ["main"]


def test_trafilaturas_whole_cascade_rescues_what_its_main_extractor_misses(monkeypatch):
    """Text in <br>-separated runs of one div: the main extractor alone finds nothing."""
    calls = _spy_trafilatura(monkeypatch)
    article = make_article(5)
    html = "<html><body><div id='x'>" + "<br><br>".join(article) + "</div></body></html>"
    text = extract_main_text(html, "trafilatura")
    assert article[0][:60] in text and article[-1][-60:] in text
    assert calls[-1] == "compare"


def test_a_main_text_past_max_text_chars_is_cut_and_says_so():
    """The cut bounds a page's work; the flag tells the engine its text past it was never compared."""
    from streamdedup.clean.pipeline import clean_page_texts

    config = CleaningConfig(max_text_chars=40)
    for text, cut in (("word " * 8, False), ("word " * 9, True)):  # 40 characters, then 45
        page = page_from_record({"url": "u", "content": text, "content_type": "text/plain"}, max_content_bytes=1000)
        texts = clean_page_texts(page, config, visible=False)
        assert texts.main_cut is cut and len(texts.main) <= 40


def test_arabic_script_is_folded_as_sites_write_one_word():
    """A Persian text written with the Arabic yeh and kaf (common between Persian sites, and in
    Urdu), or a word stretched with tatweel, or vowelled, was another text: its copy was unique
    (a multilingual review). They are folded as Lucene's Arabic and Persian normalisers fold them."""
    persian = "\u06a9\u062a\u0627\u0628\u06cc \u06a9\u0647 \u062f\u06cc\u0631\u0648\u0632 \u062e\u0631\u06cc\u062f\u0645"
    arabic_letters = persian.replace("\u06a9", "\u0643").replace("\u06cc", "\u064a")
    stretched = "\u0643\u062a\u0640\u0640\u0627\u0628"
    vowelled = "\u0643\u064e\u062a\u064e\u0628\u064e \u0627\u0644\u0648\u064e\u0644\u064e\u062f\u064f"  # kataba al-waladu
    assert normalize_text(persian) == normalize_text(arabic_letters)
    assert normalize_text(stretched) == normalize_text("\u0643\u062a\u0627\u0628")
    assert normalize_text(vowelled) == normalize_text("\u0643\u062a\u0628 \u0627\u0644\u0648\u0644\u062f")
    # hamza on alef, in a text with a lam (the article): texts are folded where an alef or a lam shows the script
    assert normalize_text("\u0623\u062d\u0645\u062f \u0627\u0644\u0639\u0631\u0628\u064a") == normalize_text(
        "\u0627\u062d\u0645\u062f \u0627\u0644\u0639\u0631\u0628\u064a")
    assert normalize_text("Caf\u00e9 \u00bbx\u00ab") == 'café "x"'  # other scripts as before


def test_greek_and_turkish_in_capitals_read_as_in_lower_case():
    """A paragraph set in capitals was another text: Greek capitals carry no accents, and case
    folding makes Turkish "İ" an i with a dot above and keeps "ı" (a multilingual review: both
    copies unique). Read without accents, dots above and the dotless i, both match."""
    greek = "Η Αθήνα είναι η πρωτεύουσα της Ελλάδας και η μεγαλύτερη πόλη της χώρας."
    turkish = "Kırmızı kitabı İstanbul'daki büyük kütüphaneye ilk iş olarak götürdü."
    for text, capitals in ((greek, "Η ΑΘΗΝΑ ΕΙΝΑΙ Η ΠΡΩΤΕΥΟΥΣΑ ΤΗΣ ΕΛΛΑΔΑΣ ΚΑΙ Η ΜΕΓΑΛΥΤΕΡΗ ΠΟΛΗ ΤΗΣ ΧΩΡΑΣ."),
                           (turkish, "KIRMIZI KİTABI İSTANBUL'DAKİ BÜYÜK KÜTÜPHANEYE İLK İŞ OLARAK GÖTÜRDÜ.")):
        assert normalize_text(text) == normalize_text(capitals)
    assert normalize_text("ΐ ΰ αλφα") == "ι υ αλφα"
