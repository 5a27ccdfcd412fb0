"""A crawled page, validated, with field aliases of common crawlers resolved.

Crawlers name the same things differently; we accept the aliases below, keep every field of the
original record untouched (it is passed through to the outputs) and only *read* the aliases.
"""

from __future__ import annotations

import base64
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

import xxhash
from publicsuffixlist import PublicSuffixList

from streamdedup.record.event_time import DEFAULT_MAX_CLOCK_SKEW, plausible
from streamdedup.record.rejection import Reason, Rejected

# canonical field -> accepted names, first present wins. Sources: StormCrawler (url, content,
# text, metadata), Nutch indexer (url, content, tstamp, digest), Heritrix crawl logs (uri,
# mime, timestamp), WARC headers (WARC-Target-URI, WARC-Date, WARC-Record-ID), Common Crawl.
FIELD_ALIASES: dict[str, tuple[str, ...]] = {
    "url": ("url", "uri", "URL", "URI", "target_uri", "WARC-Target-URI", "warc_target_uri",
            "page_url", "canonical_url"),
    "content": ("content", "html", "raw_html", "body", "raw_content", "page_content", "text",
                "content_base64"),
    "content_type": ("content_type", "contentType", "Content-Type", "mime", "mime_type",
                     "mimetype", "WARC-Identified-Payload-Type"),
    "fetched_at": ("fetched_at", "fetch_time", "fetchTime", "fetch_date", "tstamp", "timestamp",
                   "WARC-Date", "warc_date", "crawl_date", "date"),
    "id": ("id", "doc_id", "_id", "page_id", "WARC-Record-ID", "warc_record_id"),
    "lang": ("lang", "language", "content_language", "Content-Language"),
}


# the url the Python API gives a plain text that comes without one: `text:` and the text's id, its
# own site (candidates from other texts meet the cross-site policy), and no site template is
# learned from it or taken off it (streamdedup/detector.py): texts have no boilerplate of a site
TEXT_URL_SCHEME = "text:"


@dataclass(frozen=True, slots=True)
class Page:
    """One crawled page after validation.

    `record` is the original object, passed through."""

    id: str
    url: str
    content: str | bytes
    content_type: str
    fetched_at: datetime | None
    lang: str | None
    record: Mapping[str, Any]

    @property
    def site(self) -> str:
        """The page's site: the registrable domain of its url (`site_of`)."""
        return site_of(self.url)

    @property
    def event_time_ms(self) -> int | None:
        """The fetch time in milliseconds since the epoch (None: undated)."""
        return None if self.fetched_at is None else int(self.fetched_at.timestamp() * 1000)


# Bounds on the fields that are copied into every output of a page: the id is the key of its
# verdict, index and parts messages and appears again in the record, dedup.id, dedup.cluster_id,
# a header and the cluster events; an unbounded one makes outputs several times the input's size
# (a 300 KB id: verdicts over a 1 MB broker limit). WARC record ids are ~50 characters, hashes 32.
MAX_ID_CHARS = 1024
# A url is fetchable only if the server takes its request line: 8 KiB for Apache httpd and nginx
# by default; twice that leaves room for any real crawl
MAX_URL_CHARS = 16_384


@lru_cache(maxsize=1)
def _suffixes() -> PublicSuffixList:
    """The list as shipped in the package (no network); parsed on first use.

    Without the punycode copy of each rule that the library adds by default (encoding every rule was
    ~0.03 s of each process's start-up): hosts with punycode labels are looked up decoded
    (`_registrable_encoded`)."""
    return PublicSuffixList(accept_encoded_idn=False)


@lru_cache(maxsize=1)
def _suffixes_with_encoded() -> PublicSuffixList:
    """The list with the punycode copies, for the rare host whose labels do not decode cleanly."""
    return PublicSuffixList()


def site_of(url: str) -> str:
    """The site a page belongs to.

    Its registrable domain under the Public Suffix List, private section included, so www.bbc.co.uk
    and amp.bbc.co.uk are one site (bbc.co.uk) while alice.blogspot.com and bob.github.io are two
    authors, two sites, and so are alice.substack.com and bob.substack.com (a platform of authors'
    hosts that the list lacks: `USER_HOSTED`). IP addresses and hosts without a registrable domain
    (localhost) are their own site."""
    host = url_host(url.strip())
    if not host:
        return url.strip().lower()
    return _registrable(host)


# scheme://host, the host plain ASCII (no user, port, brackets or %): most URLs. urlsplit's
# hostname of such a URL is the host lowercased; the rest go through urlsplit.
_SPECIAL_SCHEME = re.compile(r"(?i)(?:https?|wss?|ftp):[/\\]")  # the schemes whose URLs read "\\" as "/"
_PLAIN_HOST = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://([A-Za-z0-9._~!$&'()*+,;=\-]+)(?:[/?#]|\Z)")


def url_host(url: str) -> str:
    """`urlsplit(url).hostname` without trailing dots ("" if none or unparsable), for a stripped URL.

    Plain ones without urlsplit (a few µs a page). In an http(s) URL a backslash is a slash, as
    browsers and crawlers read it (the WHATWG URL standard): `https://evil.example\\@news.example/`
    is fetched from evil.example, so it must not count as a page of news.example."""
    if "\\" in url and _SPECIAL_SCHEME.match(url):
        url = url.replace("\\", "/")
    plain = _PLAIN_HOST.match(url)
    if plain is not None:
        return plain.group(1).lower().rstrip(".")
    try:
        return (urlsplit(url).hostname or "").rstrip(".")
    except ValueError:
        return ""


# Platforms that give anyone a host of their own (alice.substack.com) and are missing from the Public
# Suffix List's private section, which lists blogspot.com, github.io, wixsite.com and the like: each
# host there is a site of its own, as the list makes it for those. As one site, an attacker's free
# blog had the trust of every author's there: his digest of two newsletters' stories merged them (a
# page bridges what it supersedes on its own site, as a view-all page its parts) and his copy with
# its lines merged hid a paragraph (`verdict.line_places.SHOWN_EACH`; tests/verdict/test_platform_hosts.py).
USER_HOSTED = frozenset({
    "substack.com", "medium.com", "wordpress.com", "home.blog", "tumblr.com", "ghost.io", "livejournal.com",
    "dreamwidth.org", "weebly.com", "squarespace.com", "typepad.com", "over-blog.com", "canalblog.com",
    "skyrock.com", "beehiiv.com", "hashnode.dev", "write.as", "mataroa.blog", "micro.blog", "posthaven.com",
    "tistory.com", "seesaa.net", "exblog.jp", "livedoor.blog", "jimdofree.com", "jimdosite.com",
    "strikingly.com", "tilda.ws", "neocities.org", "narod.ru", "ucoz.ru"})


@lru_cache(maxsize=1 << 16)
def _registrable(host: str) -> str:
    if host.replace(".", "").isdigit() or ":" in host:  # IPv4, IPv6
        return host
    if "xn--" in host:
        return _registrable_encoded(host)
    found = _suffixes().privatesuffix(host) or host
    if found in USER_HOSTED and host not in (found, "www." + found):  # an author's host: one label more
        return ".".join(host.split(".")[-(found.count(".") + 2):])
    return found


def _registrable_encoded(host: str) -> str:
    """The registrable domain of a host with punycode (IDN) labels, in the host's own labels.

    The host is looked up with those labels decoded, as the list's rules are written."""
    labels = host.split(".")
    try:
        decoded = [label.encode("ascii").decode("idna") if label.startswith("xn--") else label for label in labels]
    except UnicodeError:
        decoded = []
    if not decoded or any("." in label or not label for label in decoded):
        return _suffixes_with_encoded().privatesuffix(host) or host
    found = _suffixes().privatesuffix(".".join(decoded))
    return host if found is None else ".".join(labels[-(found.count(".") + 1):])


def _first(record: Mapping[str, Any], canonical: str) -> tuple[str | None, Any]:
    for name in FIELD_ALIASES[canonical]:
        if name in record and record[name] is not None:
            return name, record[name]
    return None, None


def _none_of(record: Mapping[str, Any], canonical: str) -> str:
    """Why a record has no value for a field: it has none of its names, or it gives them as null."""
    nulls = [name for name in FIELD_ALIASES[canonical] if name in record]
    return f"{', '.join(nulls)} is null" if nulls else f"no {canonical} field"


def first_field(record: Mapping[str, Any], canonical: str) -> Any:
    """A record's value for a canonical field (`FIELD_ALIASES`), as given (None: none)."""
    return _first(record, canonical)[1]


def parse_timestamp(value: Any) -> datetime:
    """ISO-8601 (with or without zone; 'Z' allowed), WARC's 14-digit form, epoch s / ms, or an HTTP date.

    An HTTP date is RFC 9110's IMF-fixdate as an HTTP `Date` or `Last-Modified` header writes it
    ("Mon, 01 Jan 2024 10:00:00 GMT"), or RFC 5322's form with a numeric zone or GMT/UT/UTC
    ("01 Jan 2024 10:00:00 +0200"; -0000, no zone told: UTC): crawl records copy it into their
    `date` field. Other zone names (CEST, IST) are refused: they would be read as UTC (`_HTTP_DATE`);
    so are RFC 850's and asctime's obsolete forms. The weekday is not checked against the date."""
    if isinstance(value, bool):
        raise ValueError("boolean is not a timestamp")
    if isinstance(value, (int, float)):
        seconds = value / 1000 if value > 10_000_000_000 else value
        return datetime.fromtimestamp(seconds, tz=UTC)
    if not isinstance(value, str):
        raise ValueError(f"expected a string or number, got {type(value).__name__}")
    text = value.strip()
    if text.isdigit() and len(text) == 14:  # 20240131120000 (WARC/ARC, Heritrix)
        return datetime.strptime(text, "%Y%m%d%H%M%S").replace(tzinfo=UTC)
    if text.isdigit():
        return parse_timestamp(int(text))
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as err:
        if not _HTTP_DATE.fullmatch(text):  # a zone by name (CEST, IST), words after it: another instant
            raise err from None  # the ISO reader's complaint: the form most records use
        parsed = parsedate_to_datetime(text)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


# an HTTP date (`parse_timestamp`): RFC 9110's IMF-fixdate, or RFC 5322's date with a numeric zone
# or GMT/UT/UTC; no other zone names, whose offsets email.utils reads as UTC without a word
_HTTP_DATE = re.compile(r"(?:(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), )?\d{1,2} "
                        r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [12]\d{3} "
                        r"\d{2}:\d{2}(?::\d{2})? (?:GMT|UTC?|[+-](?:[01]\d|2[0-3])[0-5]\d)")


def derive_page_id(url: str, fetched_at: datetime | None, position: str | None = None) -> str:
    """Stable id from url and fetch time, so two crawls of one url are two pages.

    And, for a page without a usable fetch time, from its place in its input (`position`), so two
    fetches of one url are two pages there too."""
    stamp = "" if fetched_at is None else fetched_at.isoformat()
    key = f"{url}\x00{stamp}" if position is None else f"{url}\x00{stamp}\x00{position}"
    return xxhash.xxh3_128_hexdigest(key.encode("utf-8", "surrogatepass"))


_DEFAULT_MAX_SKEW_MS = int(DEFAULT_MAX_CLOCK_SKEW.total_seconds() * 1000)


def page_from_record(record: Any, *, max_content_bytes: int, position: str | None = None,
                     now_ms: int | None = None, max_skew_ms: int = _DEFAULT_MAX_SKEW_MS) -> Page:
    """Validate one decoded JSON value as a page, or raise `Rejected` naming the problem.

    `position`: the record's place in its input, unique and the same when the input is read
    again (`RawRecord.position`). A record with neither an id nor a usable fetch time (none, or
    one the retention clock would not trust against `now_ms`, e.g. 0) gets its id from its url and
    position: a re-crawl of one url without dates is judged, not a `duplicate_id`. Without a
    position, its id is the url's alone (two such records: a `duplicate_id`)."""
    if not isinstance(record, Mapping):
        raise Rejected(Reason.INVALID_SHAPE, f"a page must be a JSON object, got {type(record).__name__}")
    url_field, url = _first(record, "url")
    if url is None:
        raise Rejected(Reason.MISSING_URL, f"{_none_of(record, 'url')} (accepted: {', '.join(FIELD_ALIASES['url'])})")
    if not isinstance(url, str) or not url.strip():
        raise Rejected(Reason.INVALID_FIELD, f"{url_field} must be a non-empty string")
    if len(url) > MAX_URL_CHARS:
        raise Rejected(Reason.INVALID_FIELD, f"{url_field} is {len(url)} characters, the limit is {MAX_URL_CHARS}")
    content_field, content = _first(record, "content")
    if content is None:
        raise Rejected(Reason.MISSING_CONTENT,
                       f"{_none_of(record, 'content')} (accepted: {', '.join(FIELD_ALIASES['content'])})")
    if content_field == "content_base64" or record.get("content_encoding") == "base64":
        content = _decode_base64(content, content_field)
    if not isinstance(content, (str, bytes)):
        raise Rejected(Reason.INVALID_FIELD, f"{content_field} must be a string, got {type(content).__name__}")
    size = content_size(content, max_content_bytes)
    if size > max_content_bytes:
        raise Rejected(Reason.TOO_LARGE, f"content is {size} bytes, over the limit of {max_content_bytes} "
                       "(the max_content_bytes setting raises it)")
    if size == 0 or (isinstance(content, str) and not content.strip()):
        raise Rejected(Reason.EMPTY_CONTENT, f"{content_field} is empty")
    fetched_at = _fetched_at(record)
    return Page(
        id=_page_id(record, url, fetched_at, position, now_ms, max_skew_ms),
        url=url,
        content=content,
        content_type=_content_type(record, default="text/plain" if content_field == "text" else "text/html"),
        fetched_at=fetched_at,
        lang=_optional_str(record, "lang"),
        record=record,
    )


def content_size(content: str | bytes, limit: int) -> int:
    """Size in UTF-8 bytes, exact only where it matters.

    A str of n characters encodes to at most 4n bytes, so below the limit its length (0 iff empty)
    stands in, sparing an encode per page."""
    if isinstance(content, bytes) or 4 * len(content) <= limit:
        return len(content)
    return len(content.encode("utf-8", "surrogatepass"))


def _decode_base64(content: Any, field: str | None) -> bytes:
    if not isinstance(content, str):
        raise Rejected(Reason.INVALID_FIELD, f"{field} must be a base64 string")
    try:
        return base64.b64decode(content, validate=True)
    except ValueError as err:
        raise Rejected(Reason.INVALID_FIELD, f"{field} is not valid base64: {err}") from None


def _content_type(record: Mapping[str, Any], default: str) -> str:
    field, value = _first(record, "content_type")
    if value is None:
        return default
    if not isinstance(value, str):
        raise Rejected(Reason.INVALID_FIELD, f"{field} must be a string")
    return value


def _fetched_at(record: Mapping[str, Any]) -> datetime | None:
    field, value = _first(record, "fetched_at")
    if value is None:
        return None
    try:
        return parse_timestamp(value)
    except (ValueError, OverflowError, OSError) as err:
        raise Rejected(Reason.INVALID_FIELD, f"{field} is not a time ({err}): give ISO-8601, a 14-digit WARC date, "
                       "epoch seconds or milliseconds, or an HTTP date; or leave the field out") from None


def _usable(fetched_at: datetime | None, now_ms: int | None, max_skew_ms: int) -> bool:
    """Whether a fetch time tells two fetches of a url apart.

    Present and plausible by the retention clock's rule (not before 1991, not beyond `now_ms` plus
    the skew)."""
    if fetched_at is None:
        return False
    try:
        stamp_ms = int(fetched_at.timestamp() * 1000)
    except (OverflowError, OSError, ValueError):
        return False
    return plausible(stamp_ms, now_ms if now_ms is not None else int(time.time() * 1000), max_skew_ms)


def _page_id(record: Mapping[str, Any], url: str, fetched_at: datetime | None, position: str | None,
             now_ms: int | None, max_skew_ms: int) -> str:
    """The record's own id, else one derived from its url and fetch time or its position.

    The record's own id, else one derived from its url and fetch time, or its `position` when
    the fetch time cannot tell two fetches apart (`_usable`, asked only then)."""
    field, value = _first(record, "id")
    if value is None:
        undated = position is not None and not _usable(fetched_at, now_ms, max_skew_ms)
        return derive_page_id(url, fetched_at, position if undated else None)
    if isinstance(value, bool) or not isinstance(value, (str, int)) or str(value) == "":
        raise Rejected(Reason.INVALID_FIELD, f"{field} must be a non-empty string or integer")
    text = str(value)
    if len(text) > MAX_ID_CHARS:
        raise Rejected(Reason.INVALID_FIELD, f"{field} is {len(text)} characters, the limit is {MAX_ID_CHARS}")
    return text


def _optional_str(record: Mapping[str, Any], canonical: str) -> str | None:
    field, value = _first(record, canonical)
    if value is None:
        return None
    if not isinstance(value, str):
        raise Rejected(Reason.INVALID_FIELD, f"{field} must be a string")
    return value
