"""The guides' links resolve: each relative link of README.md and docs/ names a file of the checkout,
and each #anchor a heading of the page it points to (GitHub's rule for heading ids)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\]\(([^)\s]+)\)")


def heading_ids(page: Path) -> set[str]:
    """The ids GitHub gives a page's headings (lowercase, punctuation dropped, spaces as hyphens, a
    repeated one numbered), and the ids of its explicit `<a id=...>` / `<a name=...>` anchors."""
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    ids: set[str] = set(re.findall(r"<a (?:id|name)=\"([^\"]+)\"", text))
    seen: dict[str, int] = {}
    for title in re.findall(r"^#{1,6}\s+(.*?)\s*#*\s*$", text, flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        ids.add(slug if count == 0 else f"{slug}-{count}")
    return ids


def test_every_link_of_the_guides_resolves() -> None:
    """docs/evaluation.md linked its families table by an id the heading had before `story` joined it."""
    broken = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
        for link in LINK.findall(text):
            if re.match(r"[a-z]+:", link):  # http(s), mailto: not this test's
                continue
            path, _, anchor = link.partition("#")
            target = (page.parent / path).resolve() if path else page
            if not target.exists():
                broken.append(f"{page.relative_to(ROOT)}: {link} (no such file)")
            elif anchor and target.suffix == ".md" and anchor not in heading_ids(target):
                broken.append(f"{page.relative_to(ROOT)}: {link} (no such heading)")
    assert broken == []
