from datetime import UTC, datetime

import pytest

from streamdedup.record.page import derive_page_id, page_from_record, parse_timestamp
from streamdedup.record.rejection import Reason, Rejected

LIMIT = 1_000_000


def test_minimal_page_gets_defaults_and_keeps_every_field():
    page = page_from_record({"url": "https://a.example/x", "content": "<p>hi</p>", "crawler": "x"},
                            max_content_bytes=LIMIT)
    assert page.content_type == "text/html"
    assert page.fetched_at is None
    assert page.id == derive_page_id("https://a.example/x", None)
    assert page.record["crawler"] == "x"


@pytest.mark.parametrize("record", [
    {"WARC-Target-URI": "https://a.example/", "html": "<p>x</p>", "WARC-Date": "2024-01-02T03:04:05Z"},
    {"uri": "https://a.example/", "body": "<p>x</p>", "tstamp": 1704164645000},
    {"url": "https://a.example/", "content": "<p>x</p>", "fetchTime": "20240102030405"},
])
def test_crawler_aliases(record):
    page = page_from_record(record, max_content_bytes=LIMIT)
    assert page.url == "https://a.example/"
    assert page.fetched_at == datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_text_field_means_plain_text():
    page = page_from_record({"url": "u", "text": "plain words"}, max_content_bytes=LIMIT)
    assert page.content_type == "text/plain"


def test_recrawls_of_one_url_are_different_pages():
    a = page_from_record({"url": "u", "content": "x", "fetched_at": "2024-01-01"}, max_content_bytes=LIMIT)
    b = page_from_record({"url": "u", "content": "x", "fetched_at": "2024-01-02"}, max_content_bytes=LIMIT)
    assert a.id != b.id


@pytest.mark.parametrize("record, reason", [
    ([1, 2], Reason.INVALID_SHAPE),
    ({"content": "x"}, Reason.MISSING_URL),
    ({"url": 5, "content": "x"}, Reason.INVALID_FIELD),
    ({"url": "u"}, Reason.MISSING_CONTENT),
    ({"url": "u", "content": 12}, Reason.INVALID_FIELD),
    ({"url": "u", "content": "   "}, Reason.EMPTY_CONTENT),
    ({"url": "u", "content": "x" * 2_000_000}, Reason.TOO_LARGE),
    ({"url": "u", "content": "x", "fetched_at": "yesterday"}, Reason.INVALID_FIELD),
    ({"url": "u", "content": "x", "id": {"a": 1}}, Reason.INVALID_FIELD),
    ({"url": "u", "content_base64": "!!!"}, Reason.INVALID_FIELD),
])
def test_bad_records_are_rejected_with_reason(record, reason):
    with pytest.raises(Rejected) as caught:
        page_from_record(record, max_content_bytes=LIMIT)
    assert caught.value.reason is reason
    assert caught.value.detail


def test_timestamps():
    assert parse_timestamp("2024-01-02T03:04:05+02:00").hour == 3
    assert parse_timestamp("2024-01-02").tzinfo is not None
    assert parse_timestamp(1704164645) == parse_timestamp(1704164645000)


def test_an_http_date_in_a_records_date_field_is_its_fetch_time():
    # crawl records copy the HTTP `Date` header into `date` (an alias of fetched_at): before, the
    # page was rejected as invalid_field
    instant = parse_timestamp("2024-01-01T10:00:00Z")
    assert parse_timestamp("Mon, 01 Jan 2024 10:00:00 GMT") == instant
    assert parse_timestamp("01 Jan 2024 12:00:00 +0200") == instant
    assert parse_timestamp("Mon, 01 Jan 2024 10:00:00 -0000") == instant  # no zone: UTC
    page = page_from_record({"url": "https://a.example/", "content": "x y z", "date": "Mon, 01 Jan 2024 10:00:00 GMT"},
                            max_content_bytes=LIMIT)
    assert page.fetched_at == instant
    for other in ("Mon, 01 Jan 2024 10:00:00 CEST", "Mon, 01 Jan 2024 10:00:00 GMT+2",  # a zone by name: not read
                  "Mon, 01 Jan 2024 10:00:00 GMT later", "Mon, 01 Jan 0024 10:00:00 GMT",  # as UTC, 2024
                  "01 Jan 2024 10:00:00 +0260"):  # minutes past 59: email.utils reads +03:00
        with pytest.raises(ValueError):
            parse_timestamp(other)
    with pytest.raises(Rejected) as caught:  # not a time in any form: bad input, with the forms to give
        page_from_record({"url": "https://a.example/", "content": "x", "date": "March 3, 2024"}, max_content_bytes=LIMIT)
    assert caught.value.reason is Reason.INVALID_FIELD and "HTTP date" in caught.value.detail


def test_content_size_is_exact_near_the_limit_and_length_below_it():
    from streamdedup.record.page import content_size

    assert content_size("é" * 10, limit=1000) == 10  # far below the limit: the length stands in
    assert content_size("é" * 10, limit=30) == 20  # could exceed: exact UTF-8 bytes
    assert content_size(b"\xff" * 7, limit=1) == 7
    with pytest.raises(Rejected) as rejected:
        page_from_record({"url": "https://a.example/", "content": "€" * 400}, max_content_bytes=1000)
    assert rejected.value.reason == Reason.TOO_LARGE


def test_the_site_is_the_registrable_domain_under_the_public_suffix_list():
    from streamdedup.record.page import site_of

    assert site_of("https://www.bbc.co.uk/news/1") == site_of("https://amp.bbc.co.uk/news/1") == "bbc.co.uk"
    assert site_of("https://news.example.com.au/a") == "example.com.au"  # a three-label suffix
    # private suffixes: every blog and every project page is a site of its own
    assert site_of("https://alice.blogspot.com/2024/post") == "alice.blogspot.com"
    assert site_of("https://alice.blogspot.com/") != site_of("https://bob.blogspot.com/")
    assert site_of("https://bob.github.io/x") == "bob.github.io"
    assert site_of("http://192.168.0.1:8080/x") == "192.168.0.1"
    assert site_of("http://localhost/x") == "localhost"
    assert site_of("HTTPS://WWW.Example.COM./") == "example.com"


def test_a_backslash_in_an_http_url_is_a_slash_as_crawlers_fetch_it():
    """`https://evil.example\\@news.example/` is fetched from evil.example (browsers, urllib3 and
    the WHATWG URL standard read the backslash as a slash); urlsplit read news.example, so an
    attacker's pages counted as the news site's and could teach its template model the site's
    article (found by an adversarial review)."""
    from streamdedup.record.page import site_of, url_host

    assert url_host("https://evil.example\\@www.dailynews.com/post-1") == "evil.example"
    assert site_of("HTTPS:\\\\evil.example\\@www.dailynews.com/") == "evil.example"
    assert site_of("https://www.dailynews.com\\news\\1") == "dailynews.com"


def test_url_host_is_urlsplits_hostname_for_any_url():
    """The fast path for plain URLs (no urlsplit) gives urlsplit's answer, on plain and odd URLs."""
    import random
    from urllib.parse import urlsplit

    from streamdedup.record.page import url_host

    def reference(url: str) -> str:  # site_of's host before the fast path, "\\" read as "/" in http(s)
        if url[:6].lower() in ("http:/", "http:\\") or url[:7].lower() in ("https:/", "https:\\") or \
                url[:5].lower() in ("ftp:/", "ftp:\\"):
            url = url.replace("\\", "/")
        try:
            return (urlsplit(url).hostname or "").rstrip(".")
        except ValueError:
            return ""

    rng = random.Random(14)
    pieces = ["http", "HTTPS", "ftp", "h2", "a+b", "://", ":", "//", "/", "?", "#", "@", "[", "]", "::1", "%",
              "%41", "Ab", "\\", "www", ".", "..", "-", "_", "~", "é", "ä.de", "\t", "\n", " ", "\x00", "80", "user",
              "Example", "COM", "xn--bcher-kva", "!$&'()*+,;=", "1.2.3.4", "[fe80::1%tESt]"]
    urls = ["https://www.bbc.co.uk/news/1", "HTTPS://WWW.Example.COM./", "http://192.168.0.1:8080/x",
            "http://[::1]:80/", "http://u:p@Host.EXAMPLE/", "http://exa\tmple.com/", "https://a.example?q#f",
            "http:/a.example/", "//a.example/", "mailto:a@b.example", "http://", "http://.", "http://%41B.example/"]
    urls += ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 12))) for _ in range(20_000)]
    urls += ["https://" + "".join(rng.choice(pieces[9:]) for _ in range(rng.randint(1, 6))) for _ in range(20_000)]
    for url in urls:
        assert url_host(url) == reference(url), url


def test_sites_of_punycode_hosts_are_the_librarys_with_its_encoded_rules():
    """The list is parsed without the punycode copies of its rules (start-up): a host with
    punycode labels, looked up decoded, has the site the library finds with them."""
    from publicsuffixlist import PublicSuffixList

    from streamdedup.record.page import _registrable

    reference = PublicSuffixList()  # the library's default: every rule also punycode-encoded
    hosts = ["www.xn--bcher-kva.de", "shop.example.xn--55qx5d.cn", "a.b.xn--fiqs8s", "xn--fiqs8s",
             "news.xn--h1alffa9f.xn--p1ai", "x.xn--12c1fe0br.xn--o3cw4h", "blog.xn--kprw13d",
             "a.xn--b-.com", "xn--.example.com", "xn--zz.xn--55qx5d.cn", "deep.er.xn--mgbaam7a8h"]
    for host in hosts:
        assert _registrable(host) == (reference.privatesuffix(host) or host), host
