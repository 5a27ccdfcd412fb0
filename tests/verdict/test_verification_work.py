"""The engine measures only what can move a verdict: new paragraphs of the matched candidates.

A candidate no rule matched is related whatever its new paragraphs (`relations.relation`), and so is
a matched one whose new text exceeds the tolerance both ways without them; the paragraph sketch is
compared for the others only (`new_text.paragraphs_asked`). Pages of one topic's sentences have
~10 related candidates a page, and this was half of their verdict step."""

from __future__ import annotations

from streamdedup import detector
from streamdedup.testing import make_article, run_records, wrap_in_template
from streamdedup.verdict import relations


def _page(page_id: str, paragraphs: list[str], site: str) -> dict:
    return {"id": page_id, "url": f"https://{site}/{page_id}", "fetched_at": "2026-01-01T00:00:00Z",
            "html": wrap_in_template(paragraphs, site)}


def _pages() -> list[dict]:
    """Matched candidates (a part, its whole, light edits) and related ones no rule matches."""
    article, story, other = (make_article(seed, paragraphs=10) for seed in (1, 2, 3))
    edited = [p.replace(" the ", " a ", 1) for p in story]
    return [_page("part1", article[:5], "a.example"), _page("full", article, "b.example"),
            _page("part2", article[5:], "c.example"), _page("story", story, "d.example"),
            _page("followup", story[:6] + other[:5], "e.example"),
            _page("replaced", story[:6] + other[5:9], "f.example"),
            _page("again", story[:6] + other[1:6], "g.example"),
            _page("edited", edited, "h.example")]


def test_new_paragraphs_are_measured_only_where_they_can_move_a_relation(tmp_path, monkeypatch):
    """The same verdicts as measuring every linked candidate's paragraphs (the old way), with
    fewer measured: the related candidates no rule matched are not."""
    real_paragraphs, real_judged = relations.new_paragraphs, detector.judged
    asked, linked = [0], [0]

    def every_linked(*args, **kwargs):  # the old way: each candidate `judged` yields is measured
        args = args[:5] + (None,)
        return real_paragraphs(*args, **kwargs)

    monkeypatch.setattr(relations, "new_paragraphs", every_linked)
    want = [o.dedup for o in run_records(_pages(), tmp_path / "all")]

    def counted(*args, **kwargs):
        rows = args[5]
        asked[0] += len(args[0]) if rows is None else len(rows)
        return real_paragraphs(*args, **kwargs)

    def counting_links(*args, **kwargs):
        links = list(real_judged(*args, **kwargs))
        linked[0] += len(links)
        return iter(links)

    monkeypatch.setattr(relations, "new_paragraphs", counted)
    monkeypatch.setattr(detector, "judged", counting_links)
    got = [o.dedup for o in run_records(_pages(), tmp_path / "asked")]
    assert got == want
    by_id = {d["id"]: d for d in got}
    related_only = [i for i in ("followup", "replaced", "again") if by_id[i]["status"] == "unique"
                    and by_id[i].get("related_to")]
    assert len(related_only) >= 2, by_id  # the case holds related candidates no rule matched
    assert by_id["part2"]["status"] == "duplicate" and by_id["edited"]["status"] == "duplicate"
    assert 0 < asked[0] < linked[0], (asked, linked)
