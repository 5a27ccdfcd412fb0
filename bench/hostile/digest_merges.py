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


OTHER_SITES = ("gamma.example", "delta.example")
HIS_SITE = ("evil.example", "evil.example")


def _crawl(a, b, digest, copies, copy_sites, digest_site="evil.example", before=(), beside=()):
    """Stories A and B on their own sites, his digest D, then a copy of each (A2, B2) on `copy_sites`."""
    return [
        *before,
        _page("A", "alpha.example", a, "08:00"),
        _page("B", "beta.example", b, "08:10"),
        _page("D", digest_site, digest, "08:30"),
        *beside,
        _page("A2", copy_sites[0], copies[0], "08:40"),
        _page("B2", copy_sites[1], copies[1], "08:50"),
    ]


def run(kind, seed):
    first, second = _stories(seed)  # stories sharing a quote
    a = make_article(seed, paragraphs=8, sentences=3)  # stories sharing nothing
    b = make_article(seed + 300, paragraphs=8, sentences=3)
    x = make_article(seed + 900, paragraphs=1, sentences=3)[0]
    y = make_article(seed + 950, paragraphs=1, sentences=3)[0]
    if kind == "plain":
        recs = _crawl(first, second, first + second, (first, second), OTHER_SITES)
    elif kind == "samesite":  # his own copies after his digest, on the digest's site
        recs = _crawl(first, second, first + second, (first, second), HIS_SITE)
    elif kind == "samesite_apart":  # stories sharing nothing
        recs = _crawl(a, b, a + b, (a, b), HIS_SITE)
    elif kind in ("teasers", "samesite_teasers"):  # his teasers (half of each story) after his digest
        recs = _crawl(a, b, a + b, (a[:3], b[:3]), HIS_SITE if kind == "samesite_teasers" else OTHER_SITES)
    elif kind in ("ownpart", "ownpart_teasers"):  # his own page first, which his digest holds under its heading
        e = make_article(seed + 700, paragraphs=8, sentences=3)
        copies = (a, b) if kind == "ownpart" else (a[:3], b[:3])
        recs = _crawl(a, b, e + a + b, copies, HIS_SITE if kind == "ownpart" else OTHER_SITES,
                      before=[_page("E1", "evil.example", e, "07:50")])
        for page in recs:
            if page["id"] in ("E1", "D"):
                page["html"] = page["html"].replace(f"Story {page['id']}", "Today")
    elif kind == "ugc":  # the digest and copies on a user-content path of a third news host
        ugc = "news.example/user/evil"
        recs = _crawl(first, second, first + second, (first, second), (ugc, ugc), digest_site=ugc)
    elif kind == "named":  # his copies on other sites each with an extra paragraph the digest holds
        recs = _crawl(first, second, first + [x] + second + [y], (first + [x], second + [y]),
                      ("evil2.example", "evil3.example"))
    elif kind == "nooverlap_named":  # stories sharing nothing, copies naming the digest
        recs = _crawl(a, b, a + [x] + b + [y], (a + [x], b + [y]), ("evil2.example", "evil3.example"))
    elif kind == "realcopies_after_marked":  # marked digest, then honest copies of both and a third real story copy
        recs = _crawl(first, second, first + second, (first, second), OTHER_SITES,
                      beside=[_page("D2", "evil2.example", first + second, "08:35")])
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
