"""Keep the lines that read as prose: what extractors leave of navigation, share buttons,
slideshow captions and 'you might also like' lists is made of short or unpunctuated lines.

The rule is C4's (Raffel et al. 2020) in spirit: a line counts if it ends like a sentence
(Latin, CJK, Tibetan and Devanagari full stops, optionally followed by closing quotes or
brackets). Near-duplicate evidence lives in sentences, so this costs recall little and removes
most of the template text that makes different short articles on one site look alike. When no
line qualifies (a page of headlines), the text is kept as it was, so the page still gets a
signature.
"""

from __future__ import annotations

import regex

_SENTENCE_END = regex.compile(r"[.!?…。！？；།༎।॥:;][\"'”’»)\]]*\s*$", regex.V1)


def prose_lines(text: str) -> str:
    kept = [line for line in text.split("\n") if _SENTENCE_END.search(line)]
    return "\n".join(kept) if kept else text
