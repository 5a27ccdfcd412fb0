"""The library as a notebook user meets it: results read without isinstance, stories, Ctrl-C, DataFrame rows."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from streamdedup import Deduplicator, Rejection, Verdict

ROOT = Path(__file__).resolve().parents[1]
TEXT = ("The council voted on Monday to keep the library open on Sundays through the winter, "
        "after three hundred residents signed a letter asking for longer opening hours.")

# a notebook user's cell: the verdict's fields read straight off what `add` returns
USER_SNIPPET = '''
from streamdedup import Deduplicator

with Deduplicator() as dedup:
    v = dedup.add("An article about the harbour.")
    print(v.status, v.duplicate_of, v.cluster_id, v.similarity, v.method, v.new_share)
    print(v.supersedes, v.related_to, v.merged_clusters, v.time_note, v.text_cut, v.reason, v.detail)
    shared: str | None = v.duplicate_of
    links: tuple[str, ...] = v.supersedes + v.related_to
    for r in dedup.add_many(["", "text"]):
        print(r.page_id, r.status, r.cluster_id, r.reason)
'''


def test_a_result_s_fields_read_and_type_check_without_isinstance(tmp_path: Path, pytestconfig: Any) -> None:
    """`v = dedup.add(text); v.duplicate_of` failed mypy (union-attr: Rejection had no such field)."""
    snippet = tmp_path / "cell.py"
    snippet.write_text(USER_SNIPPET)
    cache = pytestconfig.cache.mkdir("mypy-snippet")  # kept between runs: a cold check of the package is ~7 s CPU
    checked = subprocess.run([sys.executable, "-m", "mypy", "--follow-imports=silent", "--cache-dir", str(cache),
                              str(snippet)], cwd=ROOT, capture_output=True, text=True,
                             env={**os.environ, "MYPYPATH": str(ROOT)}, timeout=300)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    with Deduplicator() as dedup:
        rejected, unique = dedup.add_many(["", TEXT])
    assert isinstance(rejected, Rejection) and isinstance(unique, Verdict)
    assert (rejected.duplicate_of, rejected.cluster_id, rejected.similarity, rejected.method, rejected.new_share,
            rejected.time_note) == (None,) * 6
    assert (rejected.supersedes, rejected.related_to, rejected.merged_clusters, rejected.text_cut) == ((),) * 3 + (
        False,)
    assert (unique.reason, unique.detail) == (None, None)
    assert rejected.as_dict() == {"status": "rejected", "reason": "empty_content", "detail": rejected.detail,
                                  "origin": "item 1"}  # the output form is unchanged
    assert "reason" not in unique.as_dict() and unique._fields[-1] == "text_cut"
