import gzip
import unicodedata

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


# a browser reads a label by the WHATWG Encoding Standard: these pages' labels name a stricter or
# older encoding than the bytes are in, as on real sites, and Python's codec of that name garbled them
@pytest.mark.parametrize("label, codec, text", [
    ("iso-8859-1", "cp1252", "Le cœur de l’affaire : “les œuvres” coûtent 5 M€ — selon l’État…"),
    ("us-ascii", "cp1252", "Crème brûlée, “naïve” café"),
    ("iso-8859-9", "cp1254", "Toplantı İstanbul’da yapıldı, “hükümet” yeni politikayı açıkladı…"),
    ("tis-620", "cp874", "การประชุมจัดขึ้นที่กรุงเทพฯ “นายกรัฐมนตรี” ประกาศนโยบายใหม่…"),
    ("EUC-KR", "cp949", "똠방각하 쀍 햏 뷁 한국어 기사 본문입니다."),
    ("Shift_JIS", "cp932", "①会議は東京で開かれ、髙橋氏が～新しい方針を発表した。㈱テスト"),
    ("gb2312", "gb18030", "会议在北京召开，朱镕基总理宣布了新的政策。瞭解"),
    ("koi8-r", "koi8_u", "Засідання відбулося в Києві. Ґанок, їжак, єнот."),
])
def test_a_label_is_read_as_browsers_read_it(label, codec, text):
    page = f'<html><head><meta charset="{label}"><title>t</title></head><body><p>{text}</p></body></html>'
    assert decode_bytes(page.encode(codec), None, max_bytes=MAX) == page
    assert decode_bytes(page.encode(codec), label, max_bytes=MAX) == page


def test_an_unassigned_windows_1252_byte_decodes_as_its_c1_control():
    """A browser decodes 0x81 of windows-1252 (what `iso-8859-1` means) as U+0081, as Latin-1 did:
    one stray byte must not send the page to detection."""
    page = "<p>l’été “à Paris” \x81 déjà</p>" * 5
    data = page.replace("\x81", "").encode("cp1252").replace(b"\xe0 Paris\x94 ", b"\xe0 Paris\x94 \x81")
    assert decode_bytes(data, "iso-8859-1", max_bytes=MAX) == page


def _vietnamese_cp1258(text: str) -> str:
    """Vietnamese as windows-1258 writes it: base letters precomposed, tone marks combining."""
    out = []
    for char in text:
        parts = unicodedata.normalize("NFD", char)
        base = unicodedata.normalize("NFC", "".join(c for c in parts if c not in _TONES))
        out.append(base + "".join(c for c in parts if c in _TONES))
    return "".join(out)


_TONES = "\u0300\u0301\u0303\u0309\u0323"
VIETNAMESE = ("Tất cả mọi người sinh ra đều được tự do và bình đẳng về nhân phẩm và quyền lợi. Mọi con người "
              "đều được tạo hóa ban cho lý trí và lương tâm và cần phải đối xử với nhau trong tình bằng hữu. ")
UKRAINIAN = ("Всі люди народжуються вільними і рівними у своїй гідності та правах. Вони наділені розумом "
             "і совістю і повинні діяти у відношенні один до одного в дусі братерства. Їхні права є невід'ємними. ")


@pytest.mark.parametrize("text, codec", [
    (_vietnamese_cp1258(VIETNAMESE), "cp1258"), (UKRAINIAN, "koi8_u"),
    ("Toplantı İstanbul’da yapıldı, hükümet yeni politikayı açıkladı. Bakanlar kurulu bugün toplandı ve önemli "
     "kararlar aldı. Türkiye Büyük Millet Meclisi Genel Kurulu’nda görüşmeler sürüyor. ", "cp1254"),
])
def test_an_undeclared_legacy_article_in_the_middle_of_a_large_template(text, codec):
    """uchardet sampled the two ends of the page, all markup here, then charset-normalizer took the
    Vietnamese for a Latin code page; and KOI8-U was read as KOI8-R (і ї є as box drawing)."""
    nav = "".join(f'<li class="nav"><a href="/section/{i}/index.html" data-id="{i}">Section {i}</a></li>\n'
                  for i in range(1500))
    page = f"<html><head><title>News</title></head><body><ul>{nav}</ul><article>{('<p>' + text + '</p>') * 4}</article><ul>{nav}</ul></body></html>"
    assert decode_bytes(page.encode(codec), None, max_bytes=MAX) == page
