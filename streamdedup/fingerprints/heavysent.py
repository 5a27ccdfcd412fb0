"""A5 HeavySent (004).

A sentence weighs the sum of its words' A2 (BM25 TF*IDF) weights; the 2 heaviest, alphabetical,
CRC32."""

from __future__ import annotations

from collections import Counter

from streamdedup.fingerprints.keyed import PositionalKeys, crc32_of
from streamdedup.fingerprints.longsent import SentenceParams, sentence_texts
from streamdedup.fingerprints.words import bm25_weights, content_words
from streamdedup.stats.lexicon import load_lexicon
from streamdedup.tokens.document import Document


class HeavySentMethod(PositionalKeys[SentenceParams]):
    """Heavy sentences (004): a key of the page's sentences of most BM25 weight."""

    name = "heavysent"
    params_type = SentenceParams

    def describe(self) -> str:
        """The method's description with its lexicon's version (another lexicon gives other keys)."""
        return f"{super().describe()}[{load_lexicon(self.params.lexicon).version}]"

    def keys(self, doc: Document) -> tuple[int, ...] | None:
        """A CRC of the page's heaviest sentences by their words' BM25 weights (None: no sentence long enough)."""
        sentences = sentence_texts(doc, self.params.min_sentence_words)
        if not sentences:
            return None
        weights = bm25_weights(Counter(content_words(doc)), load_lexicon(self.params.lexicon), doc.lang)
        scored = [(sum(weights.get(w, 0.0) for w in words), text) for text, words in sentences]
        heaviest = sorted(scored, key=lambda s: (-s[0], s[1]))[: self.params.sentences]
        return (crc32_of(text for _, text in heaviest),)
