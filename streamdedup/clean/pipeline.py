"""Page -> normalised main text.

One function, so every runtime cleans the same way."""

from __future__ import annotations

from dataclasses import dataclass

import xxhash

from streamdedup.clean.decode import charset_from_content_type, decode_bytes
from streamdedup.clean.extract import EXTRACTORS, Texts, extract_texts, import_stack, is_html
from streamdedup.clean.fast_extract import RULES_VERSION
from streamdedup.clean.normalize import normalize_text
from streamdedup.clean.server_errors import without_server_errors
from streamdedup.record.page import Page
from streamdedup.record.readers import DEFAULT_MAX_CONTENT_BYTES
from streamdedup.record.rejection import Reason, Rejected

# What every extractor's text goes through after it (normalising, then `server_errors`) changes the
# signatures of the pages it reads, so it is part of what a store records, like `fast`'s rules.
# 1: PHP's error lines are dropped (`without_server_errors`).
TEXT_RULES_VERSION = 1
# `no_text`'s human text where the page shows no text at all (the reason code is the API, not this)
NO_TEXT_MARKUP = "no main text: the page is only markup or boilerplate"
# a cut page's whole-text hash (`Texts.main_hash`): a seed of its own, so it never equals a token hash
WHOLE_TEXT_SEED = 0x57484F4C45


@dataclass(frozen=True)
class CleaningConfig:
    """How a page's main text is read: the extractor and the bounds on a page's bytes, text and time."""

    extractor: str = "fast"  # resiliparse steered by trafilatura's rules, else trafilatura (fast_extract.py)
    max_content_bytes: int = DEFAULT_MAX_CONTENT_BYTES
    max_text_chars: int = 2_000_000
    min_words: int = 5  # fewer words of main text: too little to judge, `no_text` (not in the store fingerprint)
    max_seconds: float = 10.0  # wall-clock bound on parsing one page (see extract.extract_texts)

    def __post_init__(self) -> None:
        """Refuse an unknown extractor here: met page by page, it made each HTML page a processing_error."""
        if self.extractor not in EXTRACTORS:
            raise ValueError(f"extractor is one of {', '.join(EXTRACTORS)}; got {self.extractor!r}")

    def __str__(self) -> str:
        extractor = f"{self.extractor}@{RULES_VERSION}" if self.extractor == "fast" else self.extractor
        return f"clean(extractor={extractor},text={TEXT_RULES_VERSION},max_text_chars={self.max_text_chars})"


_TEXT_TYPES = ("text/", "application/xhtml", "application/xml", "application/json")


def clean_page(page: Page, config: CleaningConfig) -> str:
    """Return the page's normalised main text, or raise Rejected with the reason."""
    return clean_page_texts(page, config, visible=False)[0]


def clean_page_texts(page: Page, config: CleaningConfig, visible: bool, layout: str = "") -> Texts:
    """The page's `Texts`, each normalised.

    Its main text; if `visible`, all its visible text (where a site's template always shows, while
    it leaks into the main text only sometimes: clean/template.py learns from it); the article
    element's own text where a rescue replaced it; what the page showed of its site's layout
    (`layout`: how `fast` is to use it, `clean.learned_layout`). Each is cut to its first
    `max_text_chars` characters (a bound on a page's work); the main text's cut is told
    (`Texts.main_cut`): what lies past it is never compared, so such a page is a duplicate only of a whole copy
    (`verdict.engine.decide`). Raises Rejected with the reason."""
    content, html = _content(page, config)
    texts = Texts(content)
    if html:
        import_stack(config.extractor)  # (once: a command may leave it to the first HTML page, `check_extractor`)
        texts = extract_texts(content, config.extractor, config.max_seconds, visible, layout)
    text, everything, steered = (without_server_errors(normalize_text(t[: config.max_text_chars])) if t else ""
                                 for t in texts[:3])
    if not text:
        raise Rejected(Reason.NO_TEXT, _no_text(content, config, layout, everything) if html else NO_TEXT_MARKUP)
    if len(texts.main) <= config.max_text_chars:
        return Texts(text, everything, steered, texts.layout)
    # cut: the whole text's hash (as extracted: normalising it all is the work the cut bounds) is its
    # exact signature, so a copy of the whole page is still its duplicate (`verdict.engine.as_cut`)
    whole = xxhash.xxh3_128_digest(texts.main.encode("utf-8", "surrogatepass"), seed=WHOLE_TEXT_SEED)
    return Texts(text, everything, steered, texts.layout, True, whole)


def _content(page: Page, config: CleaningConfig) -> tuple[str, bool]:
    """The page's content as text, and whether it is HTML; Rejected where it is not a text type."""
    kind = page.content_type.split(";", 1)[0].strip().lower()
    if kind and not kind.startswith(_TEXT_TYPES):
        raise Rejected(Reason.UNSUPPORTED_CONTENT_TYPE, f"content_type {kind!r} is not a text type")
    content = page.content
    if isinstance(content, bytes):
        content = decode_bytes(content, charset_from_content_type(page.content_type),
                               max_bytes=config.max_content_bytes)
    return content, is_html(page.content_type, content)


def try_other_extractor(config: CleaningConfig) -> str:
    """The fix `no_text` names where the extractor kept too little of what a page shows: another `--extractor`."""
    other = "fast" if config.extractor == "trafilatura" else "trafilatura"
    return f"if the page's own text is among them, try --extractor {other}"


def _no_text(html: str, config: CleaningConfig, layout: str, everything: str) -> str:
    """Why an HTML page has no main text: the human text of `no_text` (the reason code stays the same).

    Where the page shows text (its visible text, `everything`, made here where it was not asked
    for: once, on a page rejected anyway), the extractor took none of it for the page's own: the
    reason says so, rather than that the page holds only markup."""
    shown = everything or _visible(html, config, layout)
    if shown is None:  # out of time: what it shows is not known
        return "no main text"
    words = len(normalize_text(shown).split())
    if not words:
        return NO_TEXT_MARKUP
    return (f"no main text: the page shows {words} words, but the {config.extractor} extractor took none"
            " of them for its main text (menus, notices or other boilerplate only, or text it does not read);"
            f" {try_other_extractor(config)}")


def _visible(html: str, config: CleaningConfig, layout: str) -> str | None:
    """All the visible text of an HTML page, by the same reading (None: out of time)."""
    try:
        return extract_texts(html, config.extractor, config.max_seconds, True, layout).visible
    except Rejected:
        return None


def shown_text(page: Page, config: CleaningConfig, layout: str) -> str | None:
    """All the text the page shows, normalised and cut as `clean_page_texts`' visible text (None: out of time).

    One more reading of the page (within `max_seconds`): for a page rejected anyway, never for one judged."""
    content, html = _content(page, config)
    shown = _visible(content, config, layout) if html else content
    return None if shown is None else without_server_errors(normalize_text(shown[: config.max_text_chars]))
