"""Pages filed in advance to fill a story's capped keys (`bench/flood.py`) do not hide the story
from its real copies: a unique page takes a full key's slot, and a full key answers its latest."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from streamdedup.store import candidates, signature_store


def test_a_flood_of_crafted_pages_before_a_story_leaves_every_copy_found(monkeypatch):
    monkeypatch.setattr(candidates, "MAX_POSTINGS_PER_KEY", 6)  # a small cap: a small flood fills it
    spec = importlib.util.spec_from_file_location("flood", Path(__file__).parents[2] / "bench" / "flood.py")
    assert spec is not None and spec.loader is not None
    flood = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(flood)
    result = flood.run(fill=6, copies=30, budget=2048, seed=7)
    assert result["story_keys"]["minhash"]["filled"] >= 24  # most of the story's bands were full
    assert result["story_status"] == "unique"  # no crafted page is the story's duplicate
    assert result["copies_found"] == 30, result  # 26 before: 4 copies came out unique
    assert result["copy_work_per_page"]["candidates_verified"] <= signature_store.MAX_CANDIDATES
