"""(a) attacks on the overlapping-digest mark: N of seeds where stories A and B end in one story."""

import pathlib
import sys
import tempfile

sys.path.insert(0, ".")

from streamdedup.testing import make_article, run_records, wrap_in_template


def _page(page_id, site, paragraphs, when):
    return {
        "id": page_id,
        "url": f"https://{site}/a/{page_id}",
        "fetched_at": f"2026-12-07T{when}:00Z",
        "html": wrap_in_template(paragraphs, site, title=f"Story {page_id}"),
    }


def _story_of(parents, page):
    while parents.setdefault(page, page) != page:
        page = parents[page]
    return page


def _stories(seed):
    quote = make_article(seed + 600, paragraphs=1, sentences=6)[0]
    second = make_article(seed + 300, paragraphs=8, sentences=3)
    first = make_article(seed, paragraphs=8, sentences=3)
    return [*first[:4], quote, *first[4:]], [*second[:4], quote, *second[4:]]


def _parents(outcomes):
    parents = {}
    for out in outcomes:
        verdict = out.dedup
        for cluster in [verdict["id"], *(verdict.get("merged_clusters") or [])]:
            parents[_story_of(parents, cluster)] = _story_of(parents, verdict["cluster_id"])
    return parents


def run(kind, seed):
    first, second = _stories(seed)
    if kind == "plain":
        recs = [
            _page("A", "alpha.example", first, "08:00"),
            _page("B", "beta.example", second, "08:10"),
            _page("D", "evil.example", first + second, "08:30"),
            _page("A2", "gamma.example", first, "08:40"),
            _page("B2", "delta.example", second, "08:50"),
        ]
    elif kind == "samesite":  # his own copies after his digest, on the digest's site
        recs = [
            _page("A", "alpha.example", first, "08:00"),
            _page("B", "beta.example", second, "08:10"),
            _page("D", "evil.example", first + second, "08:30"),
            _page("A2", "evil.example", first, "08:40"),
            _page("B2", "evil.example", second, "08:50"),
        ]
    elif kind == "samesite_apart":  # stories sharing nothing
        a = make_article(seed, paragraphs=8, sentences=3)
        b = make_article(seed + 300, paragraphs=8, sentences=3)
        recs = [
            _page("A", "alpha.example", a, "08:00"),
            _page("B", "beta.example", b, "08:10"),
            _page("D", "evil.example", a + b, "08:30"),
            _page("A2", "evil.example", a, "08:40"),
            _page("B2", "evil.example", b, "08:50"),
        ]
    elif kind in ("teasers", "samesite_teasers"):  # his teasers (half of each story) after his digest
        a = make_article(seed, paragraphs=8, sentences=3)
        b = make_article(seed + 300, paragraphs=8, sentences=3)
        there = ("evil.example", "evil.example") if kind == "samesite_teasers" else ("gamma.example", "delta.example")
        recs = [
            _page("A", "alpha.example", a, "08:00"),
            _page("B", "beta.example", b, "08:10"),
            _page("D", "evil.example", a + b, "08:30"),
            _page("A2", there[0], a[:3], "08:40"),
            _page("B2", there[1], b[:3], "08:50"),
        ]
    elif kind in ("ownpart", "ownpart_teasers"):  # his own page first, which his digest holds under its heading
        a = make_article(seed, paragraphs=8, sentences=3)
        b = make_article(seed + 300, paragraphs=8, sentences=3)
        e = make_article(seed + 700, paragraphs=8, sentences=3)
        copies = (a, b) if kind == "ownpart" else (a[:3], b[:3])
        there = ("evil.example", "evil.example") if kind == "ownpart" else ("gamma.example", "delta.example")
        own = _page("E1", "evil.example", e, "07:50")
        own["html"] = own["html"].replace("Story E1", "Today")
        digest = _page("D", "evil.example", e + a + b, "08:30")
        digest["html"] = digest["html"].replace("Story D", "Today")
        recs = [
            own,
            _page("A", "alpha.example", a, "08:00"),
            _page("B", "beta.example", b, "08:10"),
            digest,
            _page("A2", there[0], copies[0], "08:40"),
            _page("B2", there[1], copies[1], "08:50"),
        ]
    elif kind == "ugc":  # the digest and copies on a user-content path of a third news host
        recs = [
            _page("A", "alpha.example", first, "08:00"),
            _page("B", "beta.example", second, "08:10"),
            _page("D", "news.example/user/evil", first + second, "08:30"),
            _page("A2", "news.example/user/evil", first, "08:40"),
            _page("B2", "news.example/user/evil", second, "08:50"),
        ]
    elif kind == "named":  # his copies on other sites each with an extra paragraph the digest holds
        x = make_article(seed + 900, paragraphs=1, sentences=3)[0]
        y = make_article(seed + 950, paragraphs=1, sentences=3)[0]
        recs = [
            _page("A", "alpha.example", first, "08:00"),
            _page("B", "beta.example", second, "08:10"),
            _page("D", "evil.example", first + [x] + second + [y], "08:30"),
            _page("A2", "evil2.example", first + [x], "08:40"),
            _page("B2", "evil3.example", second + [y], "08:50"),
        ]
    elif kind == "nooverlap_named":  # stories sharing nothing, copies naming the digest
        a = make_article(seed, paragraphs=8, sentences=3)
        b = make_article(seed + 300, paragraphs=8, sentences=3)
        x = make_article(seed + 900, paragraphs=1, sentences=3)[0]
        y = make_article(seed + 950, paragraphs=1, sentences=3)[0]
        first, second = a, b
        recs = [
            _page("A", "alpha.example", a, "08:00"),
            _page("B", "beta.example", b, "08:10"),
            _page("D", "evil.example", a + [x] + b + [y], "08:30"),
            _page("A2", "evil2.example", a + [x], "08:40"),
            _page("B2", "evil3.example", b + [y], "08:50"),
        ]
    elif kind == "realcopies_after_marked":  # marked digest, then honest copies of both and a third real story copy
        recs = [
            _page("A", "alpha.example", first, "08:00"),
            _page("B", "beta.example", second, "08:10"),
            _page("D", "evil.example", first + second, "08:30"),
            _page("D2", "evil2.example", first + second, "08:35"),
            _page("A2", "gamma.example", first, "08:40"),
            _page("B2", "delta.example", second, "08:50"),
        ]
    with tempfile.TemporaryDirectory() as d:
        outs = run_records(recs, pathlib.Path(d))
    p = _parents(outs)
    v = {o.dedup["id"]: o.dedup for o in outs}
    hidden = [k for k in ("A", "B") if v[k]["status"] == "duplicate"]
    return (
        _story_of(p, "A") == _story_of(p, "B"),
        hidden,
        {
            k: (v[k]["status"], v[k].get("duplicate_of"), v[k]["cluster_id"], v[k].get("merged_clusters"))
            for k in v
            if k not in "AB"
        },
    )


kinds = sys.argv[1].split(",")
seeds = range(1, int(sys.argv[2]) + 1)
for kind in kinds:
    res = [run(kind, s) for s in seeds]
    print(kind, "merged", sum(r[0] for r in res), "of", len(res), "hidden", sum(bool(r[1]) for r in res))
    if len(sys.argv) > 3:
        for r in res[:3]:
            print("  ", r)
