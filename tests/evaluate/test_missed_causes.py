"""`bench/missed_causes.py`: a miss's cause is the first rule of `NewTextTolerance.exceeded_by` its new text meets."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from streamdedup.verdict.policy import NewText, NewTextTolerance


def _bench() -> Any:
    path = Path(__file__).resolve().parents[2] / "bench" / "missed_causes.py"
    spec = importlib.util.spec_from_file_location("missed_causes", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_each_cause_is_the_rule_that_made_the_text_new():
    cause = _bench().cause
    tolerance = NewTextTolerance()
    nothing = NewText(0.0, 0.0)

    def of(new: NewText) -> str:
        verdict = cause((new, nothing, tolerance))
        assert bool(verdict) == tolerance.exceeded_by(new), (new, verdict)  # the same decision as the engine's
        return str(verdict)

    assert of(NewText(0.05, 20.0)) == ""  # within the tolerance: a duplicate
    assert of(NewText(0.30, 8.0)) == ""  # over the share, but no more pairs than an update stamp
    assert of(NewText(0.30, 40.0)) == "share (0.300, 40 pairs)"
    assert of(NewText(0.30, 40.0, paragraph=25)) == "paragraph (25 words)"  # the paragraph rule comes first
    assert of(NewText(0.02, 2.0, paragraph=15, inserted=True)) == "paragraph (15 words, inserted)"
    assert of(NewText(0.02, 2.0, paragraph=15, replaced=True)) == "paragraph (15 words, replaced)"
    assert of(NewText(0.02, 2.0, paragraph=15)) == ""  # a short line beside the copy: no new text
    assert of(NewText(0.0, 0.0, numbers_changed=True)) == "numbers"


def test_a_pages_place_among_its_hosts_pages_follows_the_sets_order(tmp_path: Path):
    lines = [{"id": "a1", "url": "https://a.example/1"}, {"id": "b1", "url": "https://b.example/1"},
             {"id": "a2", "url": "https://a.example/2"}, {"id": "a3", "url": "https://a.example/3?x"}]
    dataset = tmp_path / "set.jsonl"
    dataset.write_text("".join(f'{{"id": "{r["id"]}", "url": "{r["url"]}"}}\n' for r in lines))
    assert _bench().host_places(dataset) == {"a1": (1, 3), "b1": (1, 1), "a2": (2, 3), "a3": (3, 3)}
