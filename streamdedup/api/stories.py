"""Story -> pages for a `Deduplicator`: its filed pages' verdicts folded as file mode folds clusters.jsonl.

Each filed page's verdict, url and fetch time are kept as the batch is written (the verdict is
the tuple the caller got back: ~0.45 KB a page in all, measured on 3,000 news pages), and folded into a
`clusters.Stories` when stories are asked for, by `Stories.add`, file mode's own fold: merged
clusters and a story's name come out as in clusters.jsonl. A store holds no cluster events (nor
merges, nor urls), so the pages a store held before the Deduplicator opened it are in no story.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from streamdedup.clusters import Stories, page_fields
from streamdedup.fingerprinter import Outcome
from streamdedup.record.page import TEXT_URL_SCHEME
from streamdedup.verdict.contract import Verdict


class FiledStories:
    """The stories of the pages one `Deduplicator` filed (`keep` after each batch's write, `stories`)."""

    def __init__(self, keep: bool, filed_before: int) -> None:
        self.kept = keep
        self._filed_before = filed_before  # pages in the store when it was opened: in no story
        self._told = False
        self._stories = Stories()
        # verdict, url, fetch time as given, an undated page's place (`arrival`: its dedup's, not the tuple's)
        self._unfolded: list[tuple[Verdict, Any, Any, Any]] = []

    def keep(self, outcomes: Sequence[Outcome]) -> None:
        """Keep the judged pages of a written batch (a rejection joins no story)."""
        if self.kept:
            self._unfolded += [(o.verdict, *_given_fields(o.record), o.dedup.get("arrival")) for o in outcomes
                               if o.verdict is not None]

    def stories(self) -> list[dict[str, Any]]:
        """`Stories.stories()` of every page kept so far: [{cluster_id, size, related, pages}], made afresh."""
        if not self.kept:
            raise ValueError("this Deduplicator keeps no stories (opened with keep_stories=False): open it with "
                             "keep_stories=True (the default) before adding the pages")
        if self._filed_before and not self._told:
            self._told = True
            warnings.warn(f"stories() holds the pages this Deduplicator filed; the {self._filed_before} pages filed "
                          "into its store before it was opened are in none (a store keeps no cluster events): file "
                          "mode's clusters.jsonl or the cluster view topic has their stories", stacklevel=3)
        for verdict, url, fetched, arrival in self._unfolded:
            dedup = verdict.as_dict()
            if arrival is not None:
                dedup["arrival"] = arrival
            self._stories.add(dedup, url, fetched)
        self._unfolded.clear()
        return self._stories.stories()  # made afresh, lists too (`_Node.member`): a caller changes no later answer


def _given_fields(record: Mapping[str, Any]) -> tuple[Any, Any]:
    """The url and fetch time the item gave: None for a text without url (filed under `text:` + its id)."""
    url, fetched = page_fields(record)
    return (None if isinstance(url, str) and url.startswith(TEXT_URL_SCHEME) else url), fetched
