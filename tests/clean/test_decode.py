import gzip

import brotli
import pytest

from streamdedup.clean.decode import decode_bytes
from streamdedup.record.rejection import Reason, Rejected

MAX = 10_000_000
RUSSIAN = "<html><body><p>Съешь же ещё этих мягких французских булок, да выпей чаю. " * 5 + "</p></body></html>"
CHINESE = "<html><body><p>我们在这里测试中文网页的字符集检测，这是一个很长的句子，用来确保检测的准确性。" * 5 + "</p></body></html>"
TRADITIONAL = "<html><body><p>我們在這裡測試中文網頁的字元集偵測，這是一個很長的句子，用來確保偵測的準確性。" * 5 + "</p></body></html>"
JAPANESE = "<html><body><p>日本語のウェブページの文字コードを検出するテストです。これは長い文章です。" * 5 + "</p></body></html>"
KOREAN = "<html><body><p>모든 인간은 태어날 때부터 자유로우며 그 존엄과 권리에 있어 동등하다. " * 5 + "</p></body></html>"
THAI = "<html><body><p>มนุษย์ทั้งหลายเกิดมามีอิสระและเสมอภาคกันในเกียรติศักดิ์และสิทธิ " * 5 + "</p></body></html>"
ARABIC = "<html><body><p>يولد جميع الناس أحرارًا متساوين في الكرامة والحقوق. " * 5 + "</p></body></html>"
HEBREW = "<html><body><p>כל בני אדם נולדו בני חורין ושווים בערכם ובזכויותיהם. " * 5 + "</p></body></html>"
GREEK = "<html><body><p>Όλοι οι άνθρωποι γεννιούνται ελεύθεροι και ίσοι στην αξιοπρέπεια. " * 5 + "</p></body></html>"


@pytest.mark.parametrize("text, encoding", [
    (RUSSIAN, "cp1251"), (RUSSIAN, "koi8-r"), (CHINESE, "gbk"), (TRADITIONAL, "big5"),
    (JAPANESE, "shift_jis"), ("<p>Ünïcödé façade, naïve café, ¿qué tal?</p>" * 5, "latin-1"),
    (JAPANESE, "euc_jp"), (JAPANESE, "iso2022_jp"), (KOREAN, "euc_kr"), (THAI, "tis-620"), (ARABIC, "cp1256"),
    (HEBREW, "cp1255"), (GREEK, "cp1253"),
])
def test_legacy_encodings_without_declaration(text, encoding):
    assert decode_bytes(text.encode(encoding), None, max_bytes=MAX) == text


def test_latin1_mislabelled_as_utf8():
    text = "<p>Crème brûlée à la française, s'il vous plaît.</p>" * 5
    assert decode_bytes(text.encode("latin-1"), "utf-8", max_bytes=MAX) == text


def test_meta_charset_is_used():
    text = '<html><head><meta charset="windows-1251"></head><body>' + RUSSIAN + "</body></html>"
    assert decode_bytes(text.encode("cp1251"), None, max_bytes=MAX) == text


def test_compressed_content_is_inflated():
    text = "<p>hello compressed world</p>" * 20
    assert decode_bytes(gzip.compress(text.encode()), None, max_bytes=MAX) == text
    assert decode_bytes(brotli.compress(text.encode()), None, max_bytes=MAX) == text


def test_decompression_bomb_is_refused():
    with pytest.raises(Rejected) as caught:
        decode_bytes(gzip.compress(b"a" * 5_000_000), None, max_bytes=1_000_000)
    assert caught.value.reason is Reason.TOO_LARGE


def test_binary_garbage_is_undecodable():
    garbage = bytes(range(256)) * 40
    with pytest.raises(Rejected) as caught:
        decode_bytes(garbage, None, max_bytes=MAX)
    assert caught.value.reason is Reason.UNDECODABLE


def test_a_brotli_bomb_is_refused_without_inflating_it_whole():
    """841 bytes of brotli inflated 1 GiB (2.4 GB RSS) before the size test refused them; now the
    output stops growing at the limit."""
    import tracemalloc

    bomb = brotli.compress(b"a" * 200_000_000)
    tracemalloc.start()
    try:
        with pytest.raises(Rejected) as caught:
            decode_bytes(bomb, None, max_bytes=1_000_000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert caught.value.reason is Reason.TOO_LARGE
    assert peak < 20_000_000, peak


def test_a_charset_python_names_but_cannot_decode_with_falls_back_to_detection():
    """`charset=undefined` (a server printing an unset variable) raised the codec's UnicodeError:
    `processing_error` and a traceback; now the page is decoded as if it declared nothing."""
    page = RUSSIAN.encode("cp1251")
    assert decode_bytes(page, "undefined", max_bytes=MAX) == RUSSIAN
    meta = b'<html><head><meta charset="undefined"></head><body>' + "caf\u00e9 cr\u00e8me br\u00fbl\u00e9e ".encode("latin-1") * 20
    assert "cr\u00e8me" in decode_bytes(meta, None, max_bytes=MAX)
