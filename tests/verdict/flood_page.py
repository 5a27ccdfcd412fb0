"""A local news story about a flood, as the bare page the verdict tests re-fetch with one thing changed."""

from __future__ import annotations

from collections.abc import Iterable

STORY = [
    "The regional council met on Tuesday evening to discuss the flooding that hit the valley towns last week "
    "and the repairs that residents have been waiting for since the river burst its banks.",
    "Engineers from the county office inspected the old footbridge near the mill and found that the supports "
    "had been weakened by debris carried down from the hills during the storm.",
    "The council will vote next month on a plan to rebuild the bridge with a wider span and to raise the "
    "embankment along the northern bank before the autumn storms arrive in the region.",
    "Residents who lost property in the flood can apply for support at the town hall, where volunteers will "
    "help them fill in the forms and collect the documents the insurers ask for.",
]


def flood_html(paragraphs: Iterable[str], after: str = "") -> str:
    """The page's HTML: the title "Flood", then each paragraph and `after` (HTML) in its article element."""
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return (f"<html><head><title>Flood</title></head><body><article><h1>Flood</h1>{body}{after}"
            "</article></body></html>")
