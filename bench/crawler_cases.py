"""A crawler's review: an earlier page, then a later one, per kind, in real templates; what a dropping indexer loses.

    python bench/crawler_cases.py --readability ../shared/data/readability-test-pages.tar.gz \
        --trafilatura ../shared/data/trafilatura-test-pages.tar.gz \
        --newspaper ../sets/newspaper4k-0.9.6.tar.gz [--handbook /usr/share/doc/debian-handbook/html] \
        [--kinds numbers product] [-v]

A crawler's review (an indexer that drops every page tagged duplicate). Articles and
templates as `review_crawl.py` takes them (readability's extracted articles, newspaper4k's texts,
trafilatura's pages with their article box emptied). Kinds, each one crawl through `dedup_files`
(file mode, defaults), each case an earlier page then a later one, on a cold or warm host, at the
same URL or on another site: a paragraph of 30-80 words added at the end, middle or start (English;
`add_lang_*`: the article's own paragraph, other languages); one number replaced in a real paragraph
(`numbers`) or in a fact line of 17-30 words (`numbers_fact`: a death toll, a score, a price, a date,
a share price, a line of 7 numbers); a name or a negation corrected; product pages differing in a spec
or price line; a reader's comment (in a box named as comments or not); page 2 after page 1; a page
quoting 60 % of an article with 40 % of its own; 40-word briefs beside an 18-teaser sidebar; a
results table updated (and, a duplicate, re-fetched with its kick-off times and update stamp changed:
`dup_stamp`); a handbook section in 4 languages after English (`--handbook`); the story
after an attacker's copy crawled first (a number falsified, its lead or a middle paragraph left out).
Those should be unique. And re-fetches that should be duplicates: sidebar teasers changed, a cookie banner, a
byline and caption on another site, a print copy with a footer. `--agreement`: only how many of its
4 sketch values a real paragraph keeps when one of its numbers is replaced, by its length.

Each case's line (-v: all, else those not as expected) on stderr; per kind the verdicts against the
expected one; JSON on stdout. A duplicate is "unsafe" where the later page should be unique and it
names the earlier page (which lacks what the later adds). Pure CPU: ~2 min.
"""

import argparse
import json
import os
import random
import re
import sys
import tarfile
import tempfile
from collections import Counter

import lxml.html
import review_crawl as rc

W = rc.words
ARTS: list = []
TPLS: list = []


def lang_of(a):
    t = " ".join(a["paras"][:3])
    if re.search(r"[\u4e00-\u9fff]", t):
        return "zh"
    if re.search(r"[\u0400-\u04ff]", t):
        return "ru"
    if re.search(r"[\u0600-\u06ff]", t):
        return "ar"
    for w, code in ((" der ", "de"), (" et ", "fr"), (" el ", "es"), (" il ", "it"), (" the ", "en"), (" de ", "fr?")):
        if w in t:
            return code
    return "?"


class Kind:
    def __init__(self, name):
        self.name, self.recs, self.checks, self.t = name, [], [], 0

    def add(self, url, html, dated=True):
        self.t += 1
        pid = f"{self.name}-{len(self.recs):03d}"
        r = {"id": pid, "url": url, "content": html}
        if dated:
            r["fetched_at"] = f"2026-11-{1 + self.t // 1440:02d}T{(self.t // 60) % 24:02d}:{self.t % 60:02d}:00Z"
        self.recs.append(r)
        return pid

    def check(self, later, earlier, expect, note, lang="?"):
        self.checks.append({"later": later, "earlier": earlier, "expect": expect, "note": note, "lang": lang})


def render_extra(tpl_html, title, paras, tail_html="", head_html="", aside_html=""):
    """render() plus raw html put at the container's end/start, and an aside beside it."""
    html = rc.render(tpl_html, title, paras)
    doc = lxml.html.fromstring(html)
    box = None
    for el in doc.iter("p"):
        if el.text == paras[0]:
            box = el.getparent()
            break
    if tail_html:
        for frag in lxml.html.fragments_fromstring(tail_html):
            box.append(frag)
    if head_html:
        for i, frag in enumerate(lxml.html.fragments_fromstring(head_html)):
            box.insert(i, frag)
    if aside_html:
        par = box.getparent() if box.getparent() is not None else box
        for frag in lxml.html.fragments_fromstring(aside_html):
            par.append(frag)
    return lxml.html.tostring(doc, encoding="unicode")


def warm(k, tpl, hostname, n=2, off=0):
    for j in range(n):
        a = ARTS[(off * 3 + j + 40) % len(ARTS)]
        k.add(f"{hostname}/warm-{j}", rc.render(tpl[1], a["paras"][0][:50], a["paras"][:6]))


def case_on_host(kind, art_at, tpl_at, host, warm_off=None):
    """A case's kind, article (`ARTS[art_at]`), template (`TPLS[tpl_at]`) and host (`https://HOST-template.example`),
    the host warmed first (`warm`, from `warm_off`) if `warm_off` is given."""
    k = K(kind)
    a = ARTS[art_at % len(ARTS)]
    tpl = TPLS[tpl_at % len(TPLS)]
    hostn = f"https://{host}-{tpl[0][:10]}.example"
    if warm_off is not None:
        warm(k, tpl, hostn, off=warm_off)
    return k, a, tpl, hostn


def para_between(lo, hi, avoid, start=0):
    for i in range(start, start + len(ARTS)):
        a = ARTS[i % len(ARTS)]
        if a is avoid:
            continue
        for p in a["paras"]:
            if lo <= W(p) <= hi:
                return p
    raise SystemExit("no para")



KINDS: dict = {}


def K(name):
    return KINDS.setdefault(name, Kind(name))


def generate(handbook: str) -> None:
    """Every kind's pages and checks, into `KINDS`."""
    rnd = random.Random(86)
    N = 8
    for n in range(N):
        a = ARTS[n]
        tpl, tpl2 = TPLS[n], TPLS[(n + 20) % len(TPLS)]
        hostn = f"https://s{n}-{tpl[0][:10]}.example"
        title = a["paras"][0][:60]
        ps = a["paras"]
        lg = lang_of(a)
        warmed = n % 2 == 1
        extra = para_between(30, 80, a, start=n * 5 + 11)
        for where in ("end", "mid", "start"):
            k = K(f"add_{where}")
            if warmed:
                warm(k, tpl, hostn, off=n)
            e = k.add(f"{hostn}/story-{n}", rc.render(tpl[1], title, ps))
            if where == "end":
                p2 = ps + [extra]
            elif where == "mid":
                p2 = ps[:len(ps) // 2] + [extra] + ps[len(ps) // 2:]
            else:
                p2 = [extra] + ps
            same = n % 4 < 2
            url = f"{hostn}/story-{n}" if same else f"https://c{n}-{tpl2[0][:10]}.example/wire/story-{n}"
            l2 = k.add(url, rc.render((tpl if same else tpl2)[1], title, p2))
            k.check(l2, e, "unique", f"+{W(extra)}w {where}, {'same url' if same else 'other site'}{', warm' if warmed else ''}", lg)

    # non-English articles: one of their own paragraphs (30-80 word-equivalents) added at end / mid / start
    NONEN = [a for a in ARTS if lang_of(a) not in ("en",)]
    for n, a in enumerate(NONEN[:8]):
        cand = [i for i, p in enumerate(a["paras"][1:], 1) if 30 <= W(p) <= 80] or [len(a["paras"]) - 1]
        x = cand[len(cand) // 2]
        base = [p for i, p in enumerate(a["paras"]) if i != x]
        extra = a["paras"][x]
        tpl, tpl2 = TPLS[(n + 3) % len(TPLS)], TPLS[(n + 43) % len(TPLS)]
        for where in ("end", "mid", "start"):
            k = K(f"add_lang_{where}")
            hostn = f"https://l{n}{where}-{tpl[0][:10]}.example"
            e = k.add(f"{hostn}/story-{n}", rc.render(tpl[1], base[0][:60], base))
            p2 = base + [extra] if where == "end" else [extra] + base if where == "start" else base[:len(base) // 2] + [extra] + base[len(base) // 2:]
            same = n % 2 == 0
            url = f"{hostn}/story-{n}" if same else f"https://lc{n}{where}-{tpl2[0][:10]}.example/wire/{n}"
            l2 = k.add(url, rc.render((tpl if same else tpl2)[1], base[0][:60], p2))
            k.check(l2, e, "unique", f"+{W(extra)}w {where}, {'same url' if same else 'other site'} ({a['name']})", lang_of(a))

    # numbers changed: a real paragraph with digits, one number replaced
    num_cases = []
    for a in ARTS:
        for i, p in enumerate(a["paras"]):
            nums = re.findall(r"(?<![\w.,])\d[\d,.]*\d|(?<![\w.,])\d(?![\w])", p)
            if nums and W(p) >= 15:
                num_cases.append((a, i, nums))
                break
    rnd.shuffle(num_cases)
    for n, (a, i, nums) in enumerate(num_cases[:10]):
        k = K("numbers")
        tpl = TPLS[(n + 30) % len(TPLS)]
        hostn = f"https://n{n}-{tpl[0][:10]}.example"
        title = a["paras"][0][:60]
        ps = list(a["paras"])
        tok = nums[len(nums) // 2]
        new = tok[:-1] + str((int(tok[-1]) + 3) % 10) if tok[-1].isdigit() else tok + "1"
        changed = re.sub(r"(?<![\w.,])" + re.escape(tok) + r"(?![\w])", new, ps[i], count=1)
        if changed == ps[i]:  # the number sits in a word ("25%" read whole): no case
            continue
        e = k.add(f"{hostn}/story-{n}", rc.render(tpl[1], title, ps))
        ps[i] = re.sub(r"(?<![\w.,])" + re.escape(tok) + r"(?![\w])", new, ps[i], count=1)
        same = n % 2 == 0
        url = f"{hostn}/story-{n}" if same else f"https://m{n}-{TPLS[(n + 50) % len(TPLS)][0][:10]}.example/wire/{n}"
        l2 = k.add(url, rc.render((tpl if same else TPLS[(n + 50) % len(TPLS)])[1], title, ps))
        k.check(l2, e, "unique", f"{tok}->{new} in a {W(a['paras'][i])}w para with {len(nums)} numbers, {'same url' if same else 'other site'}", lang_of(a))

    # synthetic death toll / score / price / date in a real article: a sentence appended to a real paragraph
    FACTS = [
        ("The death toll rose to 45 on Tuesday, officials said, with 12 people still missing and 3 villages cut off.", "45", "61"),
        ("The match ended 2-1 after a late goal, leaving the club 4 points clear at the top with 6 games left.", "2-1", "2-2"),
        ("Tickets cost 35 euros for adults and the hall holds 400 people, the organisers said on their website.", "35 euros", "53 euros"),
        ("The hearing was set for 14 March 2025 at the district court, the clerk confirmed to reporters.", "14 March", "21 March"),
        ("Shares closed at 12.40 dollars, up 3 percent on the day, after the company raised its forecast.", "12.40", "11.20"),
        # many numbers in one paragraph (>= 7): a results / stats paragraph
        ("By Friday 45 people had died in 3 provinces, 1,200 were injured, 8,000 homes lay damaged, 14 bridges were down, 2 dams had burst and 600 soldiers had been sent.", "45 people", "61 people"),
    ]
    for n, (fact, old, new) in enumerate(FACTS):
        for same in (True, False):
            k, a, tpl, hostn = case_on_host("numbers_fact", n * 3 + 17 + int(same), n + 40, f"f{n}{int(same)}")
            title = a["paras"][0][:60]
            ps = list(a["paras"])
            j = len(ps) // 2
            p1 = ps[:j] + [fact] + ps[j:]
            e = k.add(f"{hostn}/story-{n}", rc.render(tpl[1], title, p1))
            p2 = ps[:j] + [fact.replace(old, new)] + ps[j:]
            ot = TPLS[(n + 60) % len(TPLS)]
            url = f"{hostn}/story-{n}" if same else f"https://g{n}-{ot[0][:10]}.example/wire/{n}"
            l2 = k.add(url, rc.render((tpl if same else ot)[1], title, p2))
            k.check(l2, e, "unique", f"{old}->{new} ({len(re.findall(r'[0-9][0-9,.]*', fact))} nums, {W(fact)}w), {'same url' if same else 'other site'}", lang_of(a))

    # corrections: a name, a negation
    CORR = [
        ("The jury found Mark Hollis not guilty of all charges after two days of deliberation at the crown court.", "not guilty", "guilty"),
        ("Police named the driver as Peter Brandt, a 52-year-old delivery worker from the north of the city.", "Peter Brandt", "Paul Brandt"),
        ("The minister said the government would not cut funding for the regional hospitals next year.", "would not cut", "would cut"),
        ("The company confirmed that the plant will close in spring and that most of the staff will be laid off.", "will close", "will not close"),
    ]
    for n, (fact, old, new) in enumerate(CORR):
        k, a, tpl, hostn = case_on_host("correction", n * 5 + 23, n + 45, f"k{n}")
        ps = list(a["paras"])
        j = len(ps) // 2
        e = k.add(f"{hostn}/story-{n}", rc.render(tpl[1], ps[0][:60], ps[:j] + [fact] + ps[j:]))
        l2 = k.add(f"{hostn}/story-{n}", rc.render(tpl[1], ps[0][:60], ps[:j] + [fact.replace(old, new)] + ps[j:]))
        k.check(l2, e, "unique", f"{old!r}->{new!r} same url", lang_of(a))

    # product pages, one template, a shared description, a differing spec/price line
    SPECS = [
        ("Price: 59.90 EUR", "Price: 64.90 EUR"),
        ("Colour: black, size 42", "Colour: white, size 44"),
        ("Item 40112 - in stock, ships in 2 days", "Item 40113 - out of stock"),
        ("Price 59.90 EUR including VAT, free delivery within 3 working days to all addresses in Germany.",
         "Price 64.90 EUR including VAT, free delivery within 3 working days to all addresses in Germany."),
    ]
    for n, (s1, s2) in enumerate(SPECS):
        for w in (0, 1):
            k, a, tpl, hostn = case_on_host("product", n * 2 + 31 + w, n + 5 + 9 * w, f"shop{n}{w}",
                                            warm_off=n + 9 if w else None)
            desc = a["paras"][:3]
            e = k.add(f"{hostn}/p/1001", rc.render(tpl[1], "Ergonomic desk chair", desc + [s1]))
            l2 = k.add(f"{hostn}/p/1002", rc.render(tpl[1], "Ergonomic desk chair", desc + [s2]))
            k.check(l2, e, "unique", f"spec {W(s1)}w {s1[:20]!r}->{s2[:20]!r}{', warm' if w else ''}", lang_of(a))

    # a comment under the article, inside the main content
    for n in range(6):
        k, a, tpl, hostn = case_on_host("comment", n + 50, n + 12, f"cm{n}", warm_off=n + 20 if n % 2 else None)
        ps = a["paras"]
        com = para_between(20 if n < 3 else 40, 45 if n < 3 else 80, a, start=n * 7 + 3)
        head = '<h3>1 comment</h3>'
        e = k.add(f"{hostn}/story-{n}", rc.render(tpl[1], ps[0][:60], ps))
        if n >= 3:
            c_html = f'<div class="replies">{head}<div class="reply"><span class="who">Karin M.</span> <span class="when">7 Dec 2026</span><p>{com}</p></div></div>'
        else:
            c_html = f'<div class="comments">{head}<div class="comment"><span class="author">Karin M.</span> <span class="date">7 Dec 2026</span><p>{com}</p></div></div>'
        l2 = k.add(f"{hostn}/story-{n}", render_extra(tpl[1], ps[0][:60], ps, tail_html=c_html))
        k.check(l2, e, "unique", f"comment {W(com)}w {'no comment class' if n >= 3 else 'class=comment'}{', warm' if n % 2 else ''}", lang_of(a))

    # paginated: page 2 after page 1, sharing the template only
    for n in range(8):
        k, a, tpl, hostn = case_on_host("page2", n + 60, n + 25, f"pg{n}", warm_off=n + 30 if n % 2 else None)
        ps = a["paras"]
        m = 2 if n < 4 else 3
        e = k.add(f"{hostn}/story-{n}", rc.render(tpl[1], ps[0][:60], ps[:m]))
        l2 = k.add(f"{hostn}/story-{n}?page=2", rc.render(tpl[1], ps[0][:60], ps[m:2 * m]))
        k.check(l2, e, "unique", f"{m} paras each ({sum(W(p) for p in ps[m:2*m])}w){', warm' if n % 2 else ''}", lang_of(a))

    # quoting 60 % of another article and adding 40 % own analysis, another site
    for n in range(6):
        k = K("quote")
        a, b = ARTS[(n + 70) % len(ARTS)], ARTS[(n + 90) % len(ARTS)]
        tpl, tpl2 = TPLS[(n + 33) % len(TPLS)], TPLS[(n + 55) % len(TPLS)]
        e = k.add(f"https://q{n}-{tpl[0][:10]}.example/story", rc.render(tpl[1], a["paras"][0][:60], a["paras"]))
        tot = sum(W(p) for p in a["paras"])
        qa, acc = [], 0
        for p in a["paras"]:
            if acc >= 0.6 * tot * 0.6:  # 60 % of the new page: quote ~ 0.6*len(A) words
                break
            qa.append(p)
            acc += W(p)
        own, acc2 = [], 0
        for p in b["paras"]:
            if acc2 >= acc * 0.4 / 0.6:
                break
            own.append(p)
            acc2 += W(p)
        mixed = (own[:1] + qa + own[1:]) if n % 2 else (qa + own)
        l2 = k.add(f"https://r{n}-{tpl2[0][:10]}.example/analysis", rc.render(tpl2[1], "Analysis: " + a["paras"][0][:40], mixed))
        k.check(l2, e, "unique", f"quote {acc}w + own {acc2}w ({'own first' if n % 2 else 'quote first'})", lang_of(a))

    # a 40-word brief in a template with a long sidebar
    for n in range(8):
        k = K("brief_sidebar")
        tpl = TPLS[(n + 65) % len(TPLS)]
        hostn = f"https://b{n}-{tpl[0][:10]}.example"
        teasers = []
        for j in range(18):
            p = ARTS[(j * 3 + n) % len(ARTS)]["paras"][1]
            teasers.append(" ".join(p.split()[:10]))
        aside = '<aside class="sidebar"><h3>Most read</h3><ul>' + "".join(f'<li><a href="/t{j}">{t}</a></li>' for j, t in enumerate(teasers)) + "</ul></aside>"
        if n % 2:
            for j in range(2):
                a = ARTS[(n + j + 100) % len(ARTS)]
                k.add(f"{hostn}/warm-{j}", render_extra(tpl[1], a["paras"][0][:50], a["paras"][:5], aside_html=aside))
        bs = []
        for j in range(2):
            a = ARTS[(n * 2 + j + 110) % len(ARTS)]
            bs.append(" ".join(" ".join(a["paras"][:2]).split()[:40]))
        e = k.add(f"{hostn}/brief-a", render_extra(tpl[1], bs[0][:40], [bs[0]], aside_html=aside))
        l2 = k.add(f"{hostn}/brief-b", render_extra(tpl[1], bs[1][:40], [bs[1]], aside_html=aside))
        k.check(l2, e, "unique", f"40w briefs, 18-teaser sidebar{', warm' if n % 2 else ''}", lang_of(ARTS[(n * 2 + 111) % len(ARTS)]))

    # sports results table updated
    TEAMS = ["Rapid", "Sturm", "Austria", "Salzburg", "LASK", "Hartberg", "Altach", "Wolfsberg", "Ried", "Tirol"]
    for n in range(6):
        k, a, tpl, hostn = case_on_host("table", n + 120, n + 70, f"t{n}")
        r = random.Random(n)
        rows = [(TEAMS[2 * i], r.randrange(4), r.randrange(4), TEAMS[2 * i + 1]) for i in range(5)]

        def tbl(rows):
            return "<table class=\"results\">" + "".join(f"<tr><td>{h}</td><td>{x}:{y}</td><td>{g}</td></tr>" for h, x, y, g in rows) + "</table>"
        ps = a["paras"][:5]
        e = k.add(f"{hostn}/round-{n}", render_extra(tpl[1], "Matchday results", ps, tail_html=tbl(rows)))
        rows2 = list(rows)
        if n % 3 == 0:
            h, x, y, g = rows2[2]
            rows2[2] = (h, x + 1, y, g)
            what = "one score changed"
        elif n % 3 == 1:
            rows2 = [(h, x + 1, y, g) for h, x, y, g in rows2]
            what = "every score changed"
        else:
            rows2.append(("Rapid II", 2, 2, "Amstetten"))
            what = "a row added"
        l2 = k.add(f"{hostn}/round-{n}", render_extra(tpl[1], "Matchday results", ps, tail_html=tbl(rows2)))
        k.check(l2, e, "unique", what, lang_of(a))

    # the results page re-fetched with only its times and dates changed, in a block of short lines under the
    # table (kick-off times, an update stamp): a duplicate (the block's numbers leave dates and times out)
    STAMPS = [("Kick-off: Saturday 15:30", "Kick-off: Saturday 17:30", "Updated 10:30 GMT", "Updated 12:05 GMT"),
              ("Anpfiff: Samstag, 15.30 Uhr", "Anpfiff: Samstag, 18.30 Uhr", "aktualisiert am 04.06.2024, 16:37 Uhr",
               "aktualisiert am 05.06.2024, 09:12 Uhr"),
              ("Coup d'envoi : samedi 15h30", "Coup d'envoi : samedi 17h00", "Mis à jour le 5 mars 2024",
               "Mis à jour le 6 mars 2024"),
              ("Played on 7 March", "Played on 8 March", "Last update: 2024-03-07", "Last update: 2024-03-08")]
    for n in range(8):
        k, a, tpl, hostn = case_on_host("dup_stamp", n + 140, n + 80, f"s{n}")
        r = random.Random(n + 10)
        rows = [(TEAMS[2 * i], r.randrange(4), r.randrange(4), TEAMS[2 * i + 1]) for i in range(5)]
        k1, k2, u1, u2 = STAMPS[n % len(STAMPS)]
        table = "<table class=\"results\">" + "".join(f"<tr><td>{h}</td><td>{x}:{y}</td><td>{g}</td></tr>"
                                                     for h, x, y, g in rows) + "</table>"
        ps = a["paras"][:5]
        e = k.add(f"{hostn}/round-{n}", render_extra(tpl[1], "Matchday results", ps,
                                                     tail_html=f"{table}<p>{k1}</p><p>{u1}</p>"))
        l2 = k.add(f"{hostn}/round-{n}", render_extra(tpl[1], "Matchday results", ps,
                                                      tail_html=f"{table}<p>{k2}</p><p>{u2}</p>"))
        k.check(l2, e, "duplicate", f"same url, {k1!r} -> {k2!r}, {u1!r} -> {u2!r}", lang_of(a))

    # a site's language versions: debian handbook sections in several languages, the handbook's own template
    HB = handbook
    secs = ["sect.apt-get", "sect.the-shell", "sect.debian-packages", "sect.regular-upgrades", "sect.users-database"]
    for s in secs:
        k = K("lang_versions")
        pids = []
        for lg in ("en-US", "de-DE", "fr-FR", "es-ES", "it-IT"):
            f = f"{HB}/{lg}/{s}.html"
            if not os.path.exists(f):
                continue
            html = open(f, encoding="utf-8", errors="replace").read()
            pids.append((lg, k.add(f"https://debian-handbook.example/{lg}/{s}.html", html)))
        for lg, p in pids[1:]:
            k.check(p, pids[0][1], "unique", f"{s} {lg} after en-US", lg)

    # ---- hostile (docs/limitations.md, Hostile pages): a copy crawled first on the attacker's site
    shares = "Shares closed at 12.40 dollars, up 3 percent on the day, after the company raised its forecast."
    hostile = list(ARTS)

    def filler(a, count):
        """`count` paragraphs of 12+ words of other articles (an archive page's)."""
        return [p for b in ARTS if b is not a for p in b["paras"] if len(p.split()) >= 12][:count]
    random.Random(7).shuffle(hostile)
    for n in range(8):
        a = hostile[n]
        ps, tpl, title = a["paras"], TPLS[(n + 10) % len(TPLS)], a["paras"][0][:60]
        j = len(ps) // 2
        for name, evil, real, note in (
                ("hostile_falsified", ps[:j] + [shares.replace("12.40", "11.20")] + ps[j:], ps[:j] + [shares] + ps[j:],
                 "a copy stating 11.20 for 12.40 in a 17-word line, first"),
                ("hostile_lead", ps[1:], ps, f"a copy lacking the {W(ps[0])}-word lead, first"),
                ("hostile_middle", ps[:3] + ps[4:], ps, "a copy lacking a middle paragraph, first"),
                # the same copy laid out otherwise: its lines merged three to one or into one, or padded past the
                # 127 paragraphs a sketch keeps with other articles' (tests/verdict/test_hostile_layout.py)
                ("hostile_merged", [" ".join(rest[i:i + 3]) for rest in [ps[:3] + ps[4:]] for i in range(0, len(rest), 3)],
                 ps, "a copy lacking a middle paragraph, its lines merged three to one, first"),
                ("hostile_oneline", [" ".join(ps[:3] + ps[4:])], ps,
                 "a copy lacking a middle paragraph, its lines merged into one, first"),
                ("hostile_padded", ps[:3] + ps[4:] + filler(a, 130), ps,
                 "a copy lacking a middle paragraph, then 130 paragraphs of other articles, first")):
            k = K(name)
            e = k.add(f"https://evil{n}.example/{name}", rc.bare(title, evil))
            later = k.add(f"https://news{n}-{tpl[0][:10]}.example/story", rc.render(tpl[1], title, real))
            k.check(later, e, "unique", note, lang_of(a))

    # ---- should be duplicates (misses)
    for n in range(8):
        a = ARTS[(n + 140) % len(ARTS)]
        tpl, tpl2 = TPLS[(n + 15) % len(TPLS)], TPLS[(n + 35) % len(TPLS)]
        hostn = f"https://d{n}-{tpl[0][:10]}.example"
        ps, title = a["paras"], a["paras"][0][:60]
        warmed = n % 2 == 1

        def side(off):
            ts = [" ".join(ARTS[(j * 5 + off) % len(ARTS)]["paras"][1].split()[:10]) for j in range(18)]
            return '<aside class="sidebar"><h3>Most read</h3><ul>' + "".join(f'<li><a href="/t{j}">{t}</a></li>' for j, t in enumerate(ts)) + "</ul></aside>"
        k = K("dup_sidebar")
        if warmed:
            for j in range(2):
                b = ARTS[(n + j + 160) % len(ARTS)]
                k.add(f"{hostn}/warm-{j}", render_extra(tpl[1], b["paras"][0][:50], b["paras"][:5], aside_html=side(j + 1)))
        e = k.add(f"{hostn}/story-{n}", render_extra(tpl[1], title, ps, aside_html=side(3)))
        l2 = k.add(f"{hostn}/story-{n}", render_extra(tpl[1], title, ps, aside_html=side(7)))
        k.check(l2, e, "duplicate", f"same url, 18 sidebar teasers changed{', warm' if warmed else ''}", lang_of(a))
        k = K("dup_banner")
        banner = ("<div class='cookie-banner'><p>We use cookies and similar technologies to improve your experience, "
                  "measure our audience and show you offers that matter to you. Accept all or manage your choices.</p></div>")
        e = k.add(f"{hostn}/story-{n}", rc.render(tpl[1], title, ps))
        h = rc.render(tpl[1], title, ps).replace("<body>", "<body>" + banner, 1) if "<body>" in rc.render(tpl[1], title, ps) else render_extra(tpl[1], title, ps, aside_html=banner)
        l2 = k.add(f"{hostn}/story-{n}", h)
        k.check(l2, e, "duplicate", "same url, 30-word cookie banner added", lang_of(a))
        k = K("dup_byline")
        e = k.add(f"{hostn}/story-{n}", rc.render(tpl[1], title, ps))
        head = ("<p class='byline'>By Jane Doe, Reuters | 7 December 2026 10:32 GMT</p>"
                "<figure><figcaption>Rescue workers search the rubble in the town centre on Tuesday. (Photo: AP / John Smith)</figcaption></figure>")
        l2 = k.add(f"https://w{n}-{tpl2[0][:10]}.example/wire/{n}", render_extra(tpl2[1], title, ps, head_html=head))
        k.check(l2, e, "duplicate", "other site, byline + 15-word photo caption at the start", lang_of(a))
        k = K("dup_print")
        e = k.add(f"{hostn}/story-{n}", rc.render(tpl[1], title, ps))
        pr = rc.bare(title, ps).replace("</article>", f"</article><p>Printed from d{n}.example on 7 December 2026. Copyright 2026 All rights reserved.</p>")
        l2 = k.add(f"{hostn}/story-{n}/print", pr)
        k.check(l2, e, "duplicate", "print copy + 'Printed from' footer line", lang_of(a))


def agreement() -> None:
    """How many of its 4 sketch values a real paragraph keeps when one of its numbers is replaced, by length."""
    from streamdedup.fingerprints.paragraph_rows import paragraph_values
    from streamdedup.fingerprints.wordpairs import WordPairsMethod
    from streamdedup.tokens.document import Document

    method, rnd, kept = WordPairsMethod(), random.Random(1), Counter()
    for a in rc.load_articles():
        for p in a["paras"]:
            found = list(re.finditer(r"(?<![\w.,])\d+(?![\w.,]\d)", p))
            if not found:
                continue
            m = rnd.choice(found)
            q = p[:m.start()] + str(int(m.group()) + 7) + p[m.end():]
            one, two = (method.signature(Document.from_text(t, "en")) for t in (p, q))
            if one is None or two is None or not len(one.paragraphs) or not len(two.paragraphs):
                continue
            n = len(p.split())
            band = "12-30" if n <= 30 else "31-60" if n <= 60 else "61+"
            kept[(band, int((paragraph_values(one.paragraphs)[0] == paragraph_values(two.paragraphs)[0]).sum()))] += 1
    for band in ("12-30", "31-60", "61+"):
        print(f"words {band}: paragraphs {sum(v for (b, _), v in kept.items() if b == band)}, keeping 4/3/2/1/0 values: "
              + " ".join(str(kept[(band, k)]) for k in (4, 3, 2, 1, 0)), file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--readability", required=True)
    parser.add_argument("--trafilatura", required=True)
    parser.add_argument("--newspaper", required=True)
    parser.add_argument("--handbook", default="/usr/share/doc/debian-handbook/html")
    parser.add_argument("--kinds", nargs="*", default=None)
    parser.add_argument("-v", "--verbose", action="store_true")
    parser.add_argument("--agreement", action="store_true",
                        help="only: the sketch values a paragraph keeps with one number replaced")
    args = parser.parse_args()
    results: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        rc.D = f"{tmp}/data"
        for archive in (args.readability, args.trafilatura, args.newspaper):
            with tarfile.open(archive) as tar:
                tar.extractall(rc.D, filter="data")
        rc.EXPECTED = json.load(open(f"{rc.D}/expected.json"))
        if args.agreement:
            agreement()
            return
        ARTS.extend(rc.load_articles())
        random.Random(86).shuffle(ARTS)
        TPLS.extend(rc.load_templates())
        generate(args.handbook)
        for name, k in KINDS.items():
            if args.kinds and name not in args.kinds:
                continue
            out = rc.dedup_kind(tmp, name, k.recs)
            verdicts = {}
            for line in open(f"{out}/verdicts.jsonl"):
                d = json.loads(line)
                verdicts[d.get("id")] = d.get("dedup", d)
            counts: Counter = Counter()
            for c in k.checks:
                d = verdicts.get(c["later"], {})
                st, of = d.get("status"), d.get("duplicate_of")
                # a duplicate of the earlier page is unsafe where the later page adds to it (expected unique);
                # one naming a page after the earlier (another case's later page, holding the same text) is not
                safe = st != "duplicate" or c["expect"] == "duplicate" or (of or "") > c["earlier"]
                counts[(st, "safe" if safe else "unsafe")] += 1
                if args.verbose or st != c["expect"]:
                    print(f"{name:14s} {c['lang']:5s} {st:9s} {'as expected' if st == c['expect'] else 'NOT ' + c['expect']:15s} "
                          f"new_share={d.get('new_share')} supersedes={c['earlier'] in (d.get('supersedes') or [])} "
                          f"related={c['earlier'] in (d.get('related_to') or [])} {c['note']}", file=sys.stderr)
            results[name] = {"cases": len(k.checks), "expected": k.checks[0]["expect"] if k.checks else None,
                             **{f"{s} {w}": n for (s, w), n in sorted(counts.items())}}
            print(f"{name:14s} " + " ".join(f"{a}: {b}" for a, b in results[name].items()), file=sys.stderr)
    json.dump(results, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
