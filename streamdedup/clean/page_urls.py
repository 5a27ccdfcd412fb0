"""Which URLs are one page of a site, and which are one document: the template model's and the ids' keys.

`page_key`: a site's distinct pages, which its template model counts (a re-crawl, a tracking
parameter or a crawler trap's query is the same page; on a script or the site's root, the query
names the page). `document_key`: one document, whose fetches are versions of it (the query kept).
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import xxhash

# scheme://netloc/path?query#fragment in printable ASCII without brackets in the netloc: what
# urlsplit makes of it is netloc, path and query as they stand (most URLs; the rest go through urlsplit)
_PLAIN_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://([!-\"$-.0->@-Z\\^-~]*)(/[!-\"$->@-~]*)?(?:\?([!-\"$-~]*))?(?:#[!-~]*)?")

# A path whose query names the page: a script (`article.php?id=7`, `viewtopic.php?t=123`,
# `index.php?option=com_content&id=7`, `Default.aspx?tabid=5`, `item.do?id=9`) or the site's root
# (WordPress's `/?p=7`, `/index.html?page=2`), as on the PHP, forum and Joomla sites whose every
# article is at one path. On any other path (`/2024/05/story/`, `/7/`) the path names the page and
# its query does not (`?replytocom=5`, `?amp`, `?cpage=2`, `?output=amp`: one page under many
# queries, each counted as a page of its own would make the page's own lines its site's template).
# Path parameters (`;jsessionid=...`) are not part of the test.
_SCRIPT_PATH = re.compile(
    r"(?:/(?:index|default)\.[^/]*|.*\.(?:php|asp|aspx|jsp|jspx|cgi|pl|cfm|do|action|nsf))?/?", re.IGNORECASE)

# Query parameters that do not name a page on a script (lowercased names): the tracking parameters
# of ClearURLs, Firefox's query stripping and AdGuard's list (by exact name, and the prefixes of
# whole families), other trackers (`ocid`, `cmp`, `smid`, `sh`, `ito`), another view or part of
# the same page (`amp`, `output`, `print`, WordPress's comment page `cpage` and its crawler trap
# `replytocom`), cache busters (a time or a random number a fetch) and session ids (Nutch's and
# Heritrix's URL normalisers): a re-crawl changes them, and each value counted as a page would
# make the page's own lines look like its site's template. Exact names, not courlan's
# TRACKERS_RE: its prefix search also drops `cid`, `uid`, `eid`, `gallery`, `game`, `global`,
# which name pages on many sites, and keeps `phpsessid`, `jsessionid` and `sid`. Not `mod`
# (Discuz!'s `forum.php?mod=viewthread&tid=5`, `index.php?mod=news&id=5` name a page with it).
_NOT_A_PAGE = frozenset((
    "fbclid", "gclid", "gclsrc", "dclid", "gbraid", "wbraid", "msclkid", "yclid", "ysclid", "twclid", "ttclid",
    "igshid", "igsh", "epik", "mc_cid", "mc_eid", "_ga", "_gl", "_hsenc", "_hsmi", "__hssc", "__hstc", "__hsfp",
    "hsctatracking", "mkt_tok", "oly_anon_id", "oly_enc_id", "vero_id", "vero_conv", "rb_clickid", "s_cid",
    "s_kwcid", "ncid", "cmpid", "xtor", "wt_mc", "wt_zmc", "_openstat", "ref_src", "ref_url", "referrer",
    "share", "sr_share", "li_fat_id", "trk", "spm", "ocid", "cmp", "smid", "sh", "ito",
    "amp", "output", "print", "cpage", "replytocom",
    "ts", "timestamp", "_", "cb", "cachebuster", "cache_buster", "nocache", "rnd", "rand",
    "phpsessid", "jsessionid", "sessionid", "session_id", "oscsid", "zenid", "cfid", "cftoken",
))
_NOT_A_PAGE_PREFIXES = ("utm_", "pk_", "mtm_", "matomo_", "piwik_", "hsa_", "itm_", "ns_", "aspsessionid")
# `sid` and `s` are session ids where their value is one (phpBB's and vBulletin's 32 hex digits),
# and name a page elsewhere (a PHP-Nuke story, a WordPress search)
_SESSION_NAMES = frozenset(("sid", "s"))
_SESSION_ID = re.compile(r"[0-9A-Fa-f]{32}")
# `ref`, `source`, `src` and `from` say where a reader came from where their value is a host, a
# URL or a channel (`?ref=news.ycombinator.com`, `?src=rss`, `?from=timeline`, `?ref=twitter_share`),
# and name a page elsewhere (`?ref=AB123` an item, GitLab's `?ref=main` a branch, `?from=20` a
# listing's offset)
_REFERRER_NAMES = frozenset(("ref", "source", "src", "from"))
_REFERRER_HOST = re.compile(r"(?:https?(?::|%3a)(?:/|%2f)*)?(?:[a-z0-9-]+\.)+[a-z]{2,}(?:[/%:?].*)?")
_REFERRER_CHANNELS = frozenset((
    "rss", "feed", "feeds", "atom", "homepage", "home", "hp", "frontpage", "email", "mail", "newsletter", "nl",
    "social", "share", "twitter", "tw", "x", "facebook", "fb", "instagram", "linkedin", "reddit", "pinterest",
    "youtube", "tiktok", "whatsapp", "telegram", "wechat", "weibo", "timeline", "singlemessage", "groupmessage",
    "google", "bing", "yahoo", "search", "hn", "producthunt", "sidebar", "nav", "menu", "footer", "header",
    "related", "widget", "push", "notification", "app", "direct", "internal", "copy", "link",
))
_NOT_A_WORD = re.compile(r"[^a-z0-9]")


def page_key(url: str) -> int:
    """One page of a site: its URL without fragment, and without the query where the path names the page.

    On a script or the site's root the query names the page (`article.php?id=7` is as many pages as
    articles) less its tracking parameters, session ids and other views (`page_query`); elsewhere
    (`/2024/story/?replytocom=5`) the path does, and re-crawls under any query count once."""
    plain = _PLAIN_URL.fullmatch(url)
    if plain is None:
        base = url_base(url)
    else:
        netloc, path, query = plain.groups()
        path = path or ""
        base = netloc.lower() + path + (page_query(path, query) if query else "")
    return xxhash.xxh3_64_intdigest(base.encode("utf-8", "surrogatepass"))


def page_query(path: str, query: str) -> str:
    """The query's parameters that name a page at this path, sorted, as "?a=1&b=2"; "" if none.

    None unless the path is a script or the site's root (`_SCRIPT_PATH`). Sorted: `?a=1&b=2` and
    `?b=2&a=1` are one page. Names and values stand as they are (only the tests of a name are by
    its lowercase): a site may tell `ID` from `id`."""
    if not query or _SCRIPT_PATH.fullmatch(path.partition(";")[0]) is None:
        return ""
    kept = sorted({part for part in query.split("&") if part and _names_a_page(part)})
    return "?" + "&".join(kept) if kept else ""


def _names_a_page(parameter: str) -> bool:
    """Whether a query parameter ("name=value") may name a page: no tracker, session id or other view."""
    name, _, value = parameter.partition("=")
    name = name.lower()
    if name in _NOT_A_PAGE or name.startswith(_NOT_A_PAGE_PREFIXES):
        return False
    if name in _REFERRER_NAMES:
        value = value.lower()
        channel = _NOT_A_WORD.split(value, 1)[0]  # `twitter` of `twitter_share`
        return bool(value) and channel not in _REFERRER_CHANNELS and _REFERRER_HOST.fullmatch(value) is None
    return name not in _SESSION_NAMES or _SESSION_ID.fullmatch(value) is None


def document_tag(key: int) -> int:
    """A document key's low 32 bits: what the template model keeps of a page that showed a line (`shown_once_by`).

    Two documents with one tag are taken for one (1 in 2^32 of pairs): a line of another story's
    page is then kept as the page's new text, as without the model's tags."""
    return key & 0xFFFFFFFF


def document_key(url: str) -> int:
    """One document: its URL without the fragment.

    Two fetches of it are versions of one document (a re-crawl, an update, a correction), which a
    template cannot make look alike. Unlike `page_key` the query stays: on many sites it names the
    article (`?id=123`)."""
    whole = url.strip().partition("#")[0]
    plain = _PLAIN_URL.fullmatch(whole)
    if plain is not None:  # most URLs: the netloc lowercased, path and query as they stand
        base = plain.group(1).lower() + whole[plain.end(1):]
    else:
        try:
            parts = urlsplit(whole)
            base = f"{parts.netloc.lower()}{parts.path}" + (f"?{parts.query}" if parts.query else "")
        except ValueError:
            base = whole
    return xxhash.xxh3_64_intdigest(base.encode("utf-8", "surrogatepass")) or 1  # 0 means "not known"


def url_base(url: str) -> str:
    """What `page_key` hashes: urlsplit's netloc (lowercased), path and `page_query`; the URL if urlsplit refuses it."""
    try:
        parts = urlsplit(url.strip())
        return f"{parts.netloc.lower()}{parts.path}{page_query(parts.path, parts.query)}"
    except ValueError:
        return url
