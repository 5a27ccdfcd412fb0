"""Bytes to text: decompression, BOM, declared charset, sniffed <meta> charset, detection.

UTF-8 is tried strictly first because most of the web is UTF-8 and a strict decode is the best
detector there is; a declared charset is trusted only if it decodes cleanly (crawls are full of
Latin-1 pages labelled UTF-8 and the reverse), and it is read as browsers read it (the WHATWG
Encoding Standard: `iso-8859-1` means windows-1252, `euc-kr` windows-949, ...); detection decides
the rest (GBK, Big5, cp1251, Shift-JIS, ...): chardetng, Firefox's detector, first,
charset-normalizer as the fallback.
"""

from __future__ import annotations

import codecs
import re
import zlib

from resiliparse.parse.encoding import map_encoding_to_html5

from streamdedup.record.rejection import Reason, Rejected

_BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([a-zA-Z0-9_.:-]+)""", re.IGNORECASE)
_HEADER_CHARSET = re.compile(r"charset\s*=\s*[\"']?([a-zA-Z0-9_.:-]+)", re.IGNORECASE)
_MAX_CONTROL_RATIO = 0.05


def charset_from_content_type(content_type: str | None) -> str | None:
    """The charset a Content-Type header names (None: none named)."""
    match = _HEADER_CHARSET.search(content_type or "")
    return match.group(1) if match else None


def decompress(data: bytes, max_bytes: int) -> bytes:
    """Undo a transfer encoding a crawler forgot to undo (gzip/zlib, brotli), bounded in size."""
    if data[:2] == b"\x1f\x8b":
        return _bounded(zlib.decompressobj(16 + zlib.MAX_WBITS), data, max_bytes, "gzip")
    if data[:1] == b"\x78" and len(data) > 2 and (data[0] * 256 + data[1]) % 31 == 0:
        try:
            return _bounded(zlib.decompressobj(), data, max_bytes, "zlib")
        except Rejected:
            raise
        except zlib.error:
            return data
    return data


def _bounded(decoder: zlib._Decompress, data: bytes, max_bytes: int, kind: str) -> bytes:
    try:
        out = decoder.decompress(data, max_bytes + 1)
    except zlib.error as err:
        raise Rejected(Reason.UNDECODABLE, f"corrupt {kind} content: {err}") from None
    if len(out) > max_bytes:
        raise Rejected(Reason.TOO_LARGE, f"{kind} content inflates beyond {max_bytes} bytes")
    return out


def try_brotli(data: bytes, max_bytes: int) -> bytes | None:
    """Brotli has no magic number: only tried when nothing else decodes the bytes."""
    try:
        import brotli
    except ImportError:  # pragma: no cover - brotli is a dependency
        return None
    try:
        decoder = brotli.Decompressor()
        # the output stops growing past the limit (a bomb of 841 bytes inflated 1 GiB before the
        # size test: 2.4 GB RSS for one page); the bound overshoots by at most a buffer (~32 KB)
        out = decoder.process(data, output_buffer_limit=max_bytes + 1)
    except brotli.error:
        return None
    if len(out) > max_bytes:
        raise Rejected(Reason.TOO_LARGE, f"brotli content inflates beyond {max_bytes} bytes")
    return out if out else None


def decode_bytes(data: bytes, declared_charset: str | None, *, max_bytes: int) -> str:
    """Decode page bytes to text, or raise Rejected(UNDECODABLE)."""
    data = decompress(data, max_bytes)
    text = _decode_text(data, declared_charset)
    if text is None:
        inflated = try_brotli(data, max_bytes)
        if inflated is not None:
            text = _decode_text(inflated, declared_charset)
    if text is None:
        raise Rejected(Reason.UNDECODABLE, "content is not text in any detectable encoding")
    return text


def _decode_text(data: bytes, declared_charset: str | None) -> str | None:
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return _clean_decode(data, encoding)
    for candidate in (_iso2022_jp(data), "utf-8", declared_charset, _sniff_meta(data)):
        if candidate:
            text = _clean_decode(data, browser_codec(candidate))
            if text is not None:
                return text
    return _detect(data)


# ISO-2022-JP's switches to JIS X 0208 (1978, 1983) and JIS X 0212: its text is 7-bit, so UTF-8
# would decode it "cleanly" and keep these escapes as control characters around ASCII letters
_ISO2022_JP_ESCAPES = (b"\x1b$B", b"\x1b$@", b"\x1b$(D")


def _iso2022_jp(data: bytes) -> str | None:
    """Detect ISO-2022-JP in 7-bit text that switches to JIS X 0208, else None.

    ISO-2022-JP (with its half-width katakana: Python's 'iso2022_jp_ext') for 7-bit text that
    switches to JIS X 0208, as browsers' Japanese detectors find it; else None. Text that then does
    not decode (JIS X 0212) goes on to the other candidates."""
    head = data[:200_000]
    return "iso2022_jp_ext" if head.isascii() and any(e in head for e in _ISO2022_JP_ESCAPES) else None


def _sniff_meta(data: bytes) -> str | None:
    match = _META_CHARSET.search(data[:4096])
    return match.group(1).decode("ascii", "ignore") if match else None


# The Encoding Standard (https://encoding.spec.whatwg.org/#names-and-labels) names the encoding a
# browser decodes each label with; resiliparse's table gives it a Python name, and here are the
# Python codecs that decode those bytes as the browser does where that name's codec is stricter:
# a browser's EUC-KR is Windows-949 (UHC), its Shift_JIS Windows-31J (NEC/IBM rows), its GBK the
# GB18030 decoder, its Big5 holds HKSCS, its windows-874 the Microsoft additions at 0x80-0x9F
# (resiliparse says iso8859-11), its ISO-2022-JP the half-width katakana escape. One departure
# from the Standard: KOI8-R is read as KOI8-U (as chardetng detects it), whose only changes are 8
# box-drawing characters, no text uses, made the Ukrainian letters і ї є ґ of pages labelled koi8-r.
_BROWSER_CODECS = {
    "euc_kr": "cp949", "shift_jis": "cp932", "gbk": "gb18030", "big5": "big5hkscs",
    "iso8859-11": "cp874", "iso2022_jp": "iso2022_jp_ext", "koi8-r": "koi8-u",
}
# the windows-* encodings whose unassigned bytes 0x80-0x9F a browser decodes as the C1 controls
# U+0080-U+009F (the Standard's indexes) where Python's codec raises: without this a stray 0x81 on
# a page labelled iso-8859-1, which Latin-1 decoded, would fail its now windows-1252 label
_C1_PASSTHROUGH_CODECS = frozenset({"cp874", *(f"cp125{n}" for n in range(9))})


def _c1_passthrough(error: UnicodeError) -> tuple[str, int]:
    """Decode the unassigned C1 bytes of a windows-* code page as their C1 controls, like a browser."""
    if isinstance(error, UnicodeDecodeError):
        bad = error.object[error.start:error.end]
        if all(0x80 <= byte <= 0x9F for byte in bad):
            return "".join(map(chr, bad)), error.end
    raise error


codecs.register_error("streamdedup-c1-passthrough", _c1_passthrough)


def browser_codec(label: str) -> str:
    """The Python codec that decodes bytes labelled `label` as a browser does.

    A label the Standard does not know (`cp1251`, `x-user-defined` ...) is left to Python's own
    codec lookup, as before."""
    name = map_encoding_to_html5(label, fallback_utf8=False)
    return label if name is None else _BROWSER_CODECS.get(name, name)


def _clean_decode(data: bytes, encoding: str) -> str | None:
    errors = "streamdedup-c1-passthrough" if encoding in _C1_PASSTHROUGH_CODECS else "strict"
    try:
        text = data.decode(encoding, errors)
    except (UnicodeError, LookupError):  # UnicodeError: the `undefined` and `punycode` codecs' own
        return None
    return text if looks_like_text(text) else None


def _detect(data: bytes) -> str | None:
    """chardetng (Firefox's detector, for pages that declare no charset) first.

    uchardet, used before it, sampled the two ends of a page: in a large template it saw markup
    only and answered a wrong single-byte code page (cp1252 for Vietnamese, Turkish, Arabic) that
    decodes "cleanly"; and it read Ukrainian KOI8-U as KOI8-R. chardetng reads the whole sample and
    was right on every legacy page of our multilingual tests (it can take two short Turkish
    sentences without İ or ’ for windows-1250: Firefox gives it the URL's TLD, which we do not).
    charset-normalizer second for what it cannot decode cleanly. UTF-8 is not among chardetng's
    answers: a strict decode already refused it."""
    from chardetng_py import detect
    from charset_normalizer import from_bytes

    sample = data[:200_000]
    text = _clean_decode(data, browser_codec(detect(sample)))
    if text is not None:
        return text
    best = from_bytes(sample).best()
    return None if best is None else _clean_decode(data, best.encoding)


# every byte but the control characters that give binary away (C0 less tab, newline, CR, form feed)
_NOT_CONTROL = bytes(b for b in range(256) if not (b < 32 and chr(b) not in "\t\n\r\f"))


def looks_like_text(text: str) -> bool:
    """Binary garbage decodes 'successfully' in single-byte charsets; its control characters give it away.

    Counted in C: UTF-8 never uses bytes below 0x80 inside a multi-byte character, so the control
    bytes left after deleting all others are the control characters (15x faster than a loop)."""
    if not text:
        return False
    sample = text[:20_000]
    controls = len(sample.encode("utf-8", "surrogatepass").translate(None, _NOT_CONTROL)) + sample.count("\ufffd")
    return controls / len(sample) <= _MAX_CONTROL_RATIO
