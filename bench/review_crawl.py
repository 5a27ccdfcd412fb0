"""A fresh user's review crawl: real articles put in other real pages' templates, per kind, scored.

    python bench/review_crawl.py --readability ../shared/data/readability-test-pages.tar.gz \
        --trafilatura ../shared/data/trafilatura-test-pages.tar.gz \
        --newspaper ../sets/newspaper4k-0.9.6.tar.gz [--seed 1] [--kinds attack lines_added] [-v]

An independent generator (not `streamdedup devset`'s families, which the rules were tuned on),
written for the session-83 review. Articles: the paragraphs (22+ words, at most 14) of the article
Readability.js extracts from each of its test pages, and of newspaper4k's test texts (several
languages). Templates: trafilatura's test pages, whose labelled snippets locate the article's
element, which is emptied and filled with another article's paragraphs (kept where `fast` then
reads that article). Each page carries its truth: the article paragraphs it holds (a light edit
keeps their ids) and its story. Kinds: syndicated copies, re-crawls (dated, undated, changed),
light edits, print / AMP copies, parts before and after their view-all page, follow-ups reusing
55-75 %, 20-35 % of paragraphs replaced, a paragraph added (any site) or replacing the first or last
(another site), teasers before the article, three parts, a block of short lines added, briefs on
one template (alone or with a disclaimer), many articles in one template, and an attacker's pages:
a digest of two stories, half of each, a copy plus junk, each followed by copies of the stories.

Each kind is one crawl through `dedup_files` (file mode, defaults). Counted per kind: edges (pages
tagged duplicate), unsafe ones (`duplicate_of` lacks a paragraph the page holds: content lost),
redundant pages (an earlier page holds all its paragraphs), found and missed ones, false merges (a
story of clusters.jsonl holding pages of two stories; an attacker's pages belong to none) and
stories split over several. `-v` lists each. JSON on stdout, the table on stderr. Pure CPU: ~1 min.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import random
import re
import sys
import tarfile
import tempfile
from collections.abc import Iterable
from typing import Any

import lxml.html

from streamdedup import dedup_files
from streamdedup.clean.fast_extract import extract_fast

D = ""


def words(t: str) -> int:
    return len(t.split()) if re.search(r"[A-Za-z]", t) else len(t) // 2


def load_articles() -> list[dict]:
    arts = []
    for d in sorted(glob.glob(f"{D}/mozilla_readability_test_pages/test/test-pages/*")):
        try:
            doc = lxml.html.fromstring(open(f"{d}/expected.html", encoding="utf-8").read())
        except Exception:
            continue
        paras = [re.sub(r"\s+", " ", p.text_content()).strip() for p in doc.iter("p")]
        paras = [p for p in paras if words(p) >= 22]
        if len(paras) >= 6:
            arts.append({"name": "rd-" + os.path.basename(d), "paras": paras[:14]})
    for f in sorted(glob.glob(f"{D}/newspaper4k-0.9.6/tests/data/txt/*.txt")):
        txt = open(f, encoding="utf-8").read()
        paras = [re.sub(r"\s+", " ", p).strip() for p in re.split(r"\n\s*\n|\n", txt)]
        paras = [p for p in paras if words(p) >= 22]
        if len(paras) >= 6:
            arts.append({"name": "np-" + os.path.basename(f)[:-4], "paras": paras[:14]})
    return arts


EXPECTED: dict[str, Any] = {}


def with_box(name, doc):
    """The deepest element holding all of trafilatura's 'with' snippets: the article."""
    snips = [re.sub(r"\s+", " ", s) for s in EXPECTED.get(name + ".html", {}).get("with", [])]
    if not snips:
        return None
    best = None
    for el in doc.iter():
        if not isinstance(el.tag, str) or el.tag in ("html", "body"):
            continue
        t = re.sub(r"\s+", " ", el.text_content())
        if all(s in t for s in snips):
            best = el  # iter is document order: later hits are deeper
    return best


def usable(html: str) -> bool:
    """The article put in is what the project's fast extractor reads (truth must hold)."""
    probe = [f"Probe paragraph {i} about the harbour ferry timetable and the dredging of the channel by the board, "
             "with its costs." for i in range(6)]
    try:
        t = extract_fast(render(html, "Harbour ferry", probe))
    except Exception:
        return False
    return all(p[:40] in t for p in probe) and len(t) < 4 * sum(map(len, probe))


def load_templates() -> list[tuple[str, str]]:
    """(name, html) of real pages whose article box (trafilatura's labels) takes our article."""
    out = []
    files = sorted(glob.glob(f"{D}/pages/*.html"))
    random.Random(5).shuffle(files)
    for f in files[:400]:
        try:
            html = open(f, encoding="utf-8", errors="replace").read()
            doc = lxml.html.fromstring(html)
        except Exception:
            continue
        best = with_box(os.path.basename(f)[:-5], doc)
        if best is None or len(html) > 600_000:
            continue
        best.set("data-s83-box", "1")
        html = lxml.html.tostring(doc, encoding="unicode")
        if usable(html):
            out.append((os.path.basename(f)[:-5], html))
        if len(out) >= 80:
            break
    return out


def container(doc):
    for el in doc.iter():
        if isinstance(el.tag, str) and el.get("data-s83-box"):
            return el
    best, n = None, 2
    for el in doc.iter():
        if not isinstance(el.tag, str):
            continue
        k = sum(1 for c in el if c.tag == "p" and len(c.text_content().split()) >= 8)
        if k > n:
            best, n = el, k
    return best


def render(tpl_html: str, title: str, paras: list[str]) -> str:
    doc = lxml.html.fromstring(tpl_html)
    box = container(doc)
    for c in list(box):
        box.remove(c)
    box.text = None
    box.attrib.pop("data-s83-box", None)
    for i, p in enumerate(paras):
        el = lxml.html.Element("p")
        el.text = p
        box.insert(i, el)
    for h in doc.iter("h1"):
        h.text = title
        for c in list(h):
            h.remove(c)
        break
    for t in doc.iter("title"):
        t.text = title
    return lxml.html.tostring(doc, encoding="unicode")


def bare(title: str, paras: list[str]) -> str:
    body = "".join(f"<p>{p}</p>" for p in paras)
    return f"<html><head><title>{title}</title></head><body><h1>{title}</h1><article>{body}</article></body></html>"


def light(p: str, rnd: random.Random) -> str:
    w = p.split()
    if len(w) < 10:
        return p
    i = rnd.randrange(1, len(w) - 1)
    w[i] = w[i] + ("," if not w[i].endswith(",") else "")
    j = rnd.randrange(1, len(w) - 1)
    w[j] = {"the": "a", "a": "the", "and": "&"}.get(w[j], w[j])
    return " ".join(w)


class Crawl:
    def __init__(self, kind: str) -> None:
        self.kind, self.pages, self.t = kind, [], 0

    def add(self, url, html, units, story, dated=True, note=""):
        self.t += 1
        pid = f"{self.kind}-{len(self.pages):03d}"
        rec = {"id": pid, "url": url, "content": html}
        if dated:
            rec["fetched_at"] = f"2026-11-{1 + self.t // 1440:02d}T{(self.t // 60) % 24:02d}:{self.t % 60:02d}:00Z"
        self.pages.append({"rec": rec, "units": sorted(units), "story": story, "note": note})
        return pid


def host(tpl_name: str) -> str:
    return f"https://{tpl_name[:10]}.example"


def generate(seed: int) -> dict[str, Crawl]:
    """Every kind's crawl, from the archives extracted under `D`."""
    global EXPECTED
    EXPECTED = json.load(open(f"{D}/expected.json"))
    arts = load_articles()
    tpls = load_templates()
    crawls: dict[str, Crawl] = {}

    def C(k):
        return crawls.setdefault(k, Crawl(k))

    def T():
        return tpls[rnd.randrange(len(tpls))]

    def units(a, idx):
        return [f"{a['name']}#{i}" for i in idx]

    def page(c, a, idx, tpl, path, story=None, paras=None, extra=(), dated=True, note="", url=None, render_fn=None):
        ps = paras if paras is not None else [a["paras"][i] for i in idx]
        u = units(a, idx) + list(extra)
        html = (render_fn or (lambda t, p: render(tpl[1], a["paras"][0][:60], p)))(tpl, ps)
        return c.add(url or f"{host(tpl[0])}/{path}", html, u, story or a["name"], dated, note)

    rnd = random.Random(seed)
    rnd.shuffle(arts)

    A = iter(arts * 4)
    for n in range(12):
        a = next(A)
        allidx = list(range(len(a["paras"])))
        t1, t2 = T(), T()
        while t2[0] == t1[0]:
            t2 = T()
        slug = f"{a['name']}-{n}"
        # syndicated copy on another site
        c = C("syndicated")
        page(c, a, allidx, t1, slug, note="orig")
        page(c, a, allidx, t2, "wire/" + slug, note="copy")
        # re-crawls dated / undated same url; undated changed (paragraph added)
        c = C("recrawl")
        page(c, a, allidx, t1, slug, note="first")
        page(c, a, allidx, t1, slug, note="dated same")
        page(c, a, allidx, t1, slug, dated=False, note="undated same")
        b = arts[(arts.index(a) + 7) % len(arts)]
        ps = a["paras"] + [b["paras"][2]]
        page(c, a, allidx, t1, slug, paras=ps, extra=[f"{b['name']}#2"], dated=False, note="undated +para")
        # light edits / corrections on same site
        c = C("light_edit")
        page(c, a, allidx, t1, slug, note="orig")
        ps = [light(p, rnd) for p in a["paras"]]
        ps[-1] = ps[-1] + " (Updated 14:05.)"
        page(c, a, allidx, t1, slug + "?v=2", paras=ps, note="light edit")
        # print / amp copies
        c = C("print_amp")
        page(c, a, allidx, t1, slug, note="orig")
        page(c, a, allidx, t1, slug + "/print", render_fn=lambda t, p, a=a: bare(a["paras"][0][:60], p), note="print")
        page(c, a, allidx, t1, "amp/" + slug, render_fn=lambda t, p, a=a: bare(a["paras"][0][:60], p), note="amp")
        # parts vs view-all, both orders
        half = len(allidx) // 2
        c = C("parts_first")
        page(c, a, allidx[:half], t1, slug + "?page=1", note="part1")
        page(c, a, allidx[half:], t1, slug + "?page=2", note="part2")
        page(c, a, allidx, t1, slug + "?view=all", note="viewall")
        c = C("viewall_first")
        page(c, a, allidx, t1, slug + "?view=all", note="viewall")
        page(c, a, allidx[:half], t1, slug + "?page=1", note="part1")
        page(c, a, allidx[half:], t1, slug + "?page=2", note="part2")
        # follow-up: first 55-75 %, then another article's paragraphs
        c = C("followup")
        page(c, a, allidx, t1, slug, note="orig")
        k = max(3, round(len(allidx) * rnd.uniform(0.55, 0.75)))
        b = arts[(arts.index(a) + 3) % len(arts)]
        nb = max(2, len(allidx) - k)
        ps = a["paras"][:k] + b["paras"][:nb]
        page(c, a, allidx[:k], t1, slug + "-followup", paras=ps, extra=units(b, range(nb)),
             story=a["name"] + "/fu", note=f"followup {k}/{len(allidx)}")
        # replaced 20-35 %
        c = C("replaced")
        page(c, a, allidx, t1, slug, note="orig")
        r = max(2, round(len(allidx) * rnd.uniform(0.2, 0.35)))
        pos = sorted(rnd.sample(allidx[1:], r))
        b = arts[(arts.index(a) + 5) % len(arts)]
        ps, keep = list(a["paras"]), [i for i in allidx if i not in pos]
        for j, i in enumerate(pos):
            ps[i] = b["paras"][j % len(b["paras"])]
        page(c, a, keep, t2 if n % 2 else t1, slug + "-rev", paras=ps,
             extra=[f"{b['name']}#{j % len(b['paras'])}" for j in range(r)], story=a["name"] + "/rep",
             note=f"replaced {r}/{len(allidx)} {'other site' if n % 2 else 'same site'}")
        # adds new paragraphs (must not be a duplicate)
        c = C("added")
        page(c, a, allidx, t1, slug, note="orig")
        b = arts[(arts.index(a) + 9) % len(arts)]
        ins = rnd.randrange(1, len(allidx))
        ps = a["paras"][:ins] + [b["paras"][1]] + a["paras"][ins:]
        page(c, a, allidx, t2 if n % 2 else t1, slug + "-plus", paras=ps, extra=[f"{b['name']}#1"],
             note=f"+1 para at {ins} {'other site' if n % 2 else 'same site'}")
        # attacker: copy + junk after; digest of two stories; prefix-of-A + suffix-of-B merge try
        c = C("attack")
        b = arts[(arts.index(a) + 11) % len(arts)]
        bidx = list(range(len(b["paras"])))
        page(c, a, allidx, t1, slug, note="A")
        page(c, b, bidx, t2, f"{b['name']}-{n}", note="B")
        evil = ("https://evil-digest.example", "")
        ps = a["paras"] + b["paras"]
        c.add(f"{evil[0]}/digest-{n}", bare("Digest", ps), units(a, allidx) + units(b, bidx), None, True, "digest A+B")
        ha, hb = len(allidx) // 2, len(bidx) // 2
        ps = a["paras"][:ha] + b["paras"][hb:]
        c.add(f"{evil[0]}/mix-{n}", bare("Mix", ps), units(a, allidx[:ha]) + units(b, bidx[hb:]), None, True, "half A + half B")
        page(c, a, allidx, t2, "again/" + slug, note="A copy after attack")
        page(c, b, bidx, t1, "again/" + f"{b['name']}-{n}", note="B copy after attack")
        # attacker: A plus 3 junk paragraphs, published before A's copies
        junk = [f"Click here to win {n} free prizes today and share this page with all of your friends on every network you use right now" for _ in range(1)]
        ps = a["paras"] + junk
        c.add(f"{evil[0]}/copy-{n}", bare("Copy", ps), units(a, allidx) + [f"junk{n}"], None, True, "A + junk")
    # ---- harder kinds (second pass)
    A2 = iter(arts[::-1] * 4)
    for n in range(12):
        a = next(A2)
        b = arts[(arts.index(a) + 13) % len(arts)]
        allidx, bidx = list(range(len(a["paras"]))), list(range(len(b["paras"])))
        t1, t2, t3 = T(), T(), T()
        slug = f"{a['name']}-x{n}"
        evil = "https://evil-mix.example"
        c = C("mix_only")
        page(c, a, allidx, t1, slug, note="A")
        page(c, b, bidx, t2, f"{b['name']}-x{n}", note="B")
        ha, hb = len(allidx) * 2 // 3, len(bidx) // 3
        c.add(f"{evil}/mix-{n}", bare("Mix", a["paras"][:ha] + b["paras"][hb:]),
              units(a, allidx[:ha]) + units(b, bidx[hb:]), None, True, "2/3 A + 2/3 B")
        page(c, a, allidx, t3, "wire/" + slug, note="A copy")
        page(c, b, bidx, t3, "wire/" + f"{b['name']}-x{n}", note="B copy")
        page(c, a, allidx[:3], t2, "teaser/" + slug, note="A teaser")
        c = C("edge_added")
        page(c, a, allidx, t1, slug, note="orig")
        extra_p = b["paras"][0]
        if n % 2:
            ps, where = [extra_p] + a["paras"], "start"
        else:
            ps, where = a["paras"] + [extra_p], "end"
        page(c, a, allidx, t2, "wire/" + slug, paras=ps, extra=[f"{b['name']}#0"], note=f"+para at {where} ({words(extra_p)}w) other site")
        c = C("edge_replaced")
        page(c, a, allidx, t1, slug, note="orig")
        ps = list(a["paras"])
        i = 0 if n % 2 else len(ps) - 1
        ps[i] = b["paras"][1]
        page(c, a, [j for j in allidx if j != i], t2, "wire/" + slug, paras=ps, extra=[f"{b['name']}#1"],
             story=a["name"] + "/er", note=f"{'first' if i == 0 else 'last'} para replaced other site")
        c = C("teaser_first")
        page(c, a, allidx[:2], t2, "teaser/" + slug, note="teaser (2 paras) first")
        page(c, a, allidx, t1, slug, note="full article after teaser")
        page(c, a, allidx[:2], t3, "teaser2/" + slug, note="another teaser")
        c = C("parts3")
        k = len(allidx) // 3
        parts = [allidx[:k], allidx[k:2 * k], allidx[2 * k:]]
        for j, pp in enumerate(parts):
            page(c, a, pp, t1, f"{slug}?page={j + 1}", note=f"part{j + 1}/3")
        page(c, a, allidx, t1, slug + "?view=all", note="viewall after 3 parts")
        page(c, a, parts[1], t1, f"{slug}?page=2&r=1", note="part2 again after viewall")
    # ---- third pass: short lines added (a list / a table of results), inside the block
    A3 = iter(arts[5:] * 4)
    for n in range(12):
        a = next(A3)
        b = arts[(arts.index(a) + 17) % len(arts)]
        allidx = list(range(len(a["paras"])))
        t1, t2 = T(), T()
        slug = f"{a['name']}-l{n}"
        ws = " ".join(b["paras"][1:4]).split()
        k = 6 + n % 5
        lines = [" ".join(ws[i * 7:(i + 1) * 7]) for i in range(k)]
        c = C("lines_added")
        page(c, a, allidx, t1, slug, note="orig")
        at = len(allidx) // 2
        ps = a["paras"][:at] + lines + a["paras"][at:]
        page(c, a, allidx, t1 if n % 2 == 0 else t2, slug + "-upd", paras=ps, extra=[f"{b['name']}#list{n}"],
             note=f"+{k} lines of 7 words ({7 * k}w) mid, {'same' if n % 2 == 0 else 'other'} site, article {sum(words(p) for p in a['paras'])}w")
    # ---- the same URL fetched again after a rewrite: 20-35 % of its paragraphs replaced (one story)
    A4 = iter(arts[9:] * 4)
    for n in range(12):
        a = next(A4)
        b = arts[(arts.index(a) + 19) % len(arts)]
        allidx = list(range(len(a["paras"])))
        t1 = T()
        slug = f"{a['name']}-w{n}"
        c = C("rewrite_same_url")
        page(c, a, allidx, t1, slug, note="first fetch")
        r = max(2, round(len(allidx) * rnd.uniform(0.2, 0.35)))
        pos = sorted(rnd.sample(allidx[1:], r))
        ps = list(a["paras"])
        for j, i in enumerate(pos):
            ps[i] = b["paras"][j % len(b["paras"])]
        page(c, a, [i for i in allidx if i not in pos], t1, slug, paras=ps, dated=n % 2 == 0,
             extra=[f"{b['name']}#{j % len(b['paras'])}" for j in range(r)],
             note=f"refetch, {r}/{len(allidx)} replaced, {'dated' if n % 2 == 0 else 'undated'}")
    c = C("briefs_disclaimer")
    t1 = tpls[11]
    disc = ("This story was produced by the regional newsroom with support from local partners. "
            "Readers can send corrections and tips to the desk at any time through the contact form on this site.")
    for i in range(24):
        a = arts[(i * 7) % len(arts)]
        s = re.split(r"(?<=[.!?。])\s*", a["paras"][2])[0]
        c.add(f"{host(t1[0])}/brief-{i}", render(t1[1], s[:50], [s, disc]), [f"{a['name']}#s{i}", "disc"],
              f"{a['name']}#s{i}", True, f"brief {words(s)}w + disclaimer")
    # briefs on one template, many articles in one template
    c = C("briefs")
    t1 = tpls[3]
    for i in range(30):
        a = arts[i % len(arts)]
        p = a["paras"][1 + i // len(arts)]
        s = re.split(r"(?<=[.!?。])\s*", p)[:2]
        c.add(f"{host(t1[0])}/brief-{i}", render(t1[1], s[0][:50], [" ".join(s)]), [f"{a['name']}#b{i}"], f"{a['name']}#b{i}", True, "brief")
    c = C("one_template")
    t1 = tpls[7]
    for i, a in enumerate(arts[:40]):
        c.add(f"{host(t1[0])}/story-{i}", render(t1[1], a["paras"][0][:50], a["paras"][:8]), units(a, range(min(8, len(a['paras'])))), a["name"], True, "article")
    return crawls


def dedup_kind(tmp: str, kind: str, records: Iterable[dict]) -> str:
    """Run file mode (`dedup_files`, defaults) on a kind's records, written to TMP/KIND.jsonl; its out folder."""
    path, out = f"{tmp}/{kind}.jsonl", f"{tmp}/out-{kind}"
    with open(path, "w") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
    dedup_files([path], out)
    return out


def score(kind: str, crawl: Crawl, out: str, verbose: bool) -> dict[str, Any]:
    """The kind's counts from its verdicts.jsonl and clusters.jsonl (`out`)."""
    truth = {p["rec"]["id"]: p for p in crawl.pages}
    verdicts = {}
    for line in open(f"{out}/verdicts.jsonl"):
        r = json.loads(line)
        verdicts[r["dedup"].get("id") or r["id"]] = r["dedup"]
    order = list(truth)
    row = dict.fromkeys(("pages", "edges", "unsafe", "redundant", "found", "missed", "false_merges",
                         "split_stories", "rejected"), 0)
    row["pages"], cases = len(order), []
    for i, pid in enumerate(order):
        t, v = truth[pid], verdicts.get(pid, {})
        held = set(t["units"])
        holders = [q for q in order[:i] if held <= set(truth[q]["units"])]
        row["redundant"] += bool(holders)
        row["rejected"] += v.get("status") == "rejected"
        if v.get("status") == "duplicate":
            row["edges"] += 1
            q = v["duplicate_of"]
            if not held <= set(truth[q]["units"]):
                row["unsafe"] += 1
                cases.append(f"UNSAFE {pid} ({t['note']}) duplicate_of {q} ({truth[q]['note']}), "
                             f"new_share {v.get('new_share')}")
            elif holders:
                row["found"] += 1
        elif holders:
            row["missed"] += 1
            cases.append(f"MISSED {pid} ({t['note']}) held by {holders[:2]}: {v.get('status')}, "
                         f"supersedes {v.get('supersedes')}, related_to {v.get('related_to')}")
    clusters_of: dict[str, set[str]] = {}
    for line in open(f"{out}/clusters.jsonl"):
        c = json.loads(line)
        stories = {truth[p["id"]]["story"] for p in c["pages"] if truth[p["id"]]["story"]}
        if len(stories) > 1:
            row["false_merges"] += 1
            cases.append(f"MERGE {c['cluster_id']}: {[(p['id'], truth[p['id']]['note']) for p in c['pages']]}")
        for s in stories:
            clusters_of.setdefault(s, set()).add(c["cluster_id"])
    split = {s: sorted(cs) for s, cs in clusters_of.items() if len(cs) > 1}
    row["split_stories"] = len(split)
    cases += [f"SPLIT {s} in {cs}" for s, cs in split.items()]
    if verbose:
        row["cases"] = cases
    return row


def main() -> None:
    global D
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--readability", required=True)
    parser.add_argument("--trafilatura", required=True)
    parser.add_argument("--newspaper", required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--kinds", nargs="*", default=None)
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        D = f"{tmp}/data"
        for archive in (args.readability, args.trafilatura, args.newspaper):
            with tarfile.open(archive) as tar:
                tar.extractall(D, filter="data")
        crawls = generate(args.seed)
        results = {}
        for kind, crawl in crawls.items():
            if args.kinds and kind not in args.kinds:
                continue
            out = dedup_kind(tmp, kind, (p["rec"] for p in crawl.pages))
            results[kind] = score(kind, crawl, out, args.verbose)
            r = results[kind]
            print(f"{kind:18s} " + " ".join(f"{k} {r[k]}" for k in r if k != "cases"), file=sys.stderr)
    json.dump(results, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
