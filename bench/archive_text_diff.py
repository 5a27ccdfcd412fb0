"""Which real pages of the shared archives change their main text between two versions of the cleaning.

    # once per version, from its worktree (PYTHONPATH=$PWD imports that version):
    PYTHONPATH=$PWD python bench/archive_text_diff.py texts DIR OUT.json
    python bench/archive_text_diff.py compare BEFORE.json AFTER.json

DIR holds the unpacked archives (readability-test-pages.tar.gz: its `*/source.html`, and
trafilatura-test-pages.tar.gz: `pages/*`, 1,163 pages in all). Each page goes through `clean_page`
(default `CleaningConfig`, no time bound: in process), its bytes as a crawler would hand them;
a rejection is written as its message. `compare` prints how many changed and, for each, the words
removed and added (what a reviewer of a `fast` rules bump reads).
"""

from __future__ import annotations

import base64
import difflib
import glob
import json
import sys
import time
from pathlib import Path


def page_files(root: str) -> list[str]:
    """The archives' pages under `root`, in a stable order."""
    return (sorted(glob.glob(f"{root}/**/test-pages/*/source.html", recursive=True))
            + sorted(glob.glob(f"{root}/**/pages/*", recursive=True)))


def texts(root: str, out: str) -> None:
    """Each page's cleaned main text (or its rejection) by its path under `root`, to `out`."""
    from streamdedup.clean.pipeline import CleaningConfig, clean_page
    from streamdedup.record.page import page_from_record
    from streamdedup.record.rejection import Rejected

    config = CleaningConfig(max_seconds=0)
    result, start = {}, time.process_time()
    for name in page_files(root):
        record = {"url": "https://x.example/", "content_base64": base64.b64encode(Path(name).read_bytes()).decode()}
        page = page_from_record(record, max_content_bytes=config.max_content_bytes)
        try:
            result[name[len(root):].lstrip("/")] = clean_page(page, config)
        except Rejected as err:
            result[name[len(root):].lstrip("/")] = f"REJECTED {err}"
    Path(out).write_text(json.dumps(result, ensure_ascii=False))
    print(f"{len(result)} pages, {time.process_time() - start:.1f} CPU s", file=sys.stderr)


def compare(before_path: str, after_path: str) -> None:
    """Print the pages whose text differs, with the words each lost and gained."""
    before, after = (json.loads(Path(p).read_text()) for p in (before_path, after_path))
    changed = [name for name in before if before[name] != after.get(name)]
    print(f"changed {len(changed)} of {len(before)}")
    for name in changed:
        old, new = before[name].split(), after.get(name, "").split()
        matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
        print(f"{name}: {len(old)} -> {len(new)} words, ratio {matcher.ratio():.3f}")
        for op, i1, i2, j1, j2 in matcher.get_opcodes():
            if op != "equal":
                print(f"    {op}: {' '.join(old[i1:i2])[:150]!r} => {' '.join(new[j1:j2])[:150]!r}")
    rejected = [sum(v.startswith("REJECTED") for v in side.values()) for side in (before, after)]
    print(f"rejected before {rejected[0]}, after {rejected[1]}")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "texts":
        texts(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 4 and sys.argv[1] == "compare":
        compare(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
