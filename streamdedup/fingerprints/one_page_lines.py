"""A page's lines that one earlier page of its site showed, kept by that page, and taken out where it is another story.

A line two earlier pages of a host showed is the host's (`wordpairs.mark_shown`,
`wordpairs.with_shown_lines`): no new text of the page. A line one earlier page showed may be that
page's content: the first part of a paginated article, a paragraph of a story's first fetch that
its second dropped and its third restores. Or it is the host's too: another story's teaser, a
"read more" line, a newsletter box, on the host's second or third page, before two pages show it.

The template model keeps which page showed a line only one page showed (32 bits of its document
key: `clean.template.SiteTemplate.shown_once_by`), and the page's signature keeps those lines by
that page (`with_one_page_lines`, `own_text`'s step). The engine takes them out of the page's new text,
as the host's, only where that page is another story: neither the page's own URL nor any of the
page's candidates (`with_other_stories_lines`). A paginated part, a revision or a re-fetch of the
story is a candidate of the page (it holds the page's text), and keeps its lines as content. The
text taken out is held by that other page, kept whatever the page's verdict, so dropping the page
loses none of it.
"""

from __future__ import annotations

import struct
from collections.abc import Collection
from dataclasses import replace

import numpy as np

from streamdedup.clean.page_urls import document_tag
from streamdedup.fingerprints.paragraph_rows import SHOWN_BIT
from streamdedup.fingerprints.wordpairs import OnePageLines, ShownLines, WordPairsMethod, WordPairsSignature
from streamdedup.hash_arrays import in_sorted

_GROUP = struct.Struct("<IHI")  # a group's document tag, its paragraphs (one bit each), its pairs' bytes


def with_one_page_lines(signature: WordPairsSignature, method: WordPairsMethod, text: str, line_hashes: np.ndarray,
                        documents: np.ndarray, furniture: np.ndarray, own_document: int,
                        lang: str | None) -> WordPairsSignature:
    """The signature with the page's lines one earlier page of its site showed, by that page (`one_page`).

    `documents`: of each of `text`'s non-empty lines (hashes `line_hashes`), the document tag of the
    one earlier page that showed it (0: none, or two pages: `SiteTemplate.shown_once_by`);
    `furniture`: the lines two earlier pages showed (sorted). Lines of the page's own URL's earlier
    fetch are left out (its own story). Unchanged where none, or where with `furniture` they are
    every line of the page (nothing would be left of it to judge)."""
    once = documents != 0
    if own_document:
        once &= documents != np.uint32(document_tag(own_document))
    if not once.any():
        return signature
    shown = in_sorted(furniture, line_hashes) if len(furniture) else np.zeros(len(line_hashes), dtype=bool)
    if (once | shown).all():
        return signature
    lines = [line for line in text.split("\n") if line]
    if len(lines) != len(line_hashes):  # not the lines hashed: nothing to say
        return signature
    groups = []
    for document in np.unique(documents[once]).tolist():
        mine = once & (documents == np.uint32(document))
        held = np.sort(line_hashes[mine | shown])  # a block of lines is its page's where each line is its or the host's
        paragraphs = in_sorted(held, signature.line_hashes)
        for place, block in signature.block_lines:
            paragraphs[place] = bool(in_sorted(held, block).all())
        group_text = "\n".join(line for line, one in zip(lines, mine.tolist(), strict=True) if one)
        groups.append(OnePageLines(int(document), ShownLines(group_text, lang, method), paragraphs))
    return replace(signature, one_page=tuple(groups))


def with_other_stories_lines(signature: WordPairsSignature, linked: Collection[int]) -> WordPairsSignature:
    """The signature with the lines of `one_page` whose page is not `linked` shown before, as two pages' are.

    `linked`: the document tags of the page and of its candidates (`clean.page_urls.document_tag`).
    Those lines' paragraphs are marked (`SHOWN_BIT`) and their word pairs kept (`other_stories`),
    which the engine takes out of the page's new text against a match that lacks them
    (`new_shares.without_shown`, `new_text`)."""
    groups = [group for group in signature.one_page if group.document not in linked]
    if not groups:
        return signature
    paragraphs = signature.paragraphs
    marked = np.zeros(len(paragraphs), dtype=bool)
    for group in groups:
        if len(group.paragraphs) == len(paragraphs):
            marked |= group.paragraphs
    return replace(signature, paragraphs=np.where(marked, paragraphs | SHOWN_BIT, paragraphs),
                   other_stories=tuple(group.lines for group in groups), one_page=())


def encode_one_page(signature: WordPairsSignature, method: WordPairsMethod) -> bytes:
    """The signature's `one_page` as bytes (b"": none): each group's tag, paragraphs and encoded word pairs.

    Carried beside the page's signatures to the global topology's index partitions
    (`messages.IndexRequest.one_page`), which judge it as file mode does."""
    parts = []
    for group in signature.one_page:
        pairs = group.lines.pairs
        data = b"" if pairs is None else method.encode(pairs)
        bits = np.packbits(group.paragraphs, bitorder="little").tobytes()
        parts += [_GROUP.pack(group.document, len(group.paragraphs), len(data)), bits, data]
    return b"".join(parts)


def decode_one_page(data: bytes, method: WordPairsMethod) -> tuple[OnePageLines, ...]:
    """The groups `encode_one_page` wrote."""
    groups, pos = [], 0
    while pos < len(data):
        document, count, size = _GROUP.unpack_from(data, pos)
        pos += _GROUP.size
        width = (count + 7) // 8
        paragraphs = np.unpackbits(np.frombuffer(data, dtype=np.uint8, count=width, offset=pos), count=count,
                                   bitorder="little").astype(bool)
        pos += width
        pairs = method.decode(data[pos: pos + size]) if size else None
        pos += size
        groups.append(OnePageLines(document, ShownLines(pairs=pairs), paragraphs))
    return tuple(groups)
