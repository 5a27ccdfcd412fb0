"""`streamdedup lexicon build`: frozen collection statistics from a corpus of pages.

Pages are cleaned and tokenised exactly as the detector does, so the statistics describe the
tokens the methods will look up. The result's version is the hash of its content; the store
records it through the methods' descriptions and refuses signatures made with another one.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson

from streamdedup.clean.pipeline import CleaningConfig, clean_page
from streamdedup.record.page import page_from_record
from streamdedup.record.readers import read_inputs
from streamdedup.record.rejection import Rejected
from streamdedup.stats.lexicon import Lexicon, build_lexicon
from streamdedup.tokens.document import Document


def corpus_documents(paths: list[str], cleaning: CleaningConfig) -> Iterator[tuple[str, list[str]]]:
    """Each readable page of the inputs as (language, tokens), cleaned as the detector cleans it."""
    for raw in read_inputs(paths):
        try:
            value = raw.fields if raw.fields is not None else orjson.loads(raw.data or b"")
            page = page_from_record(value, max_content_bytes=cleaning.max_content_bytes)
            doc = Document.from_text(clean_page(page, cleaning), page.lang)
        except (Rejected, orjson.JSONDecodeError):
            continue
        if doc.tokens:
            yield doc.lang, doc.tokens


def build_from_files(paths: list[str], out: Path, cleaning: CleaningConfig, min_df: int = 2) -> Lexicon:
    """Build a lexicon from the pages of the input files and save it to `out`."""
    lexicon = build_lexicon(corpus_documents(paths, cleaning), min_df=min_df)
    lexicon.save(out)
    return lexicon
