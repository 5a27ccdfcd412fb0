import json
import pathlib
import random
import sys
import tempfile

from streamdedup.testing import make_article, run_records, wrap_in_template

WORDS = [f"{a}{b}{c}" for a in "bcdfgklmnprstv" for b in "aeiou" for c in "lmnrst"]
HEADING = "Where the new pumping stations go"
REPEATED = "Continue reading the main story"


def article(seed, layout, heading):
    s = make_article(seed, paragraphs=9)
    if layout == "test":
        return [*s[:3], heading, *s[3:6], REPEATED, *s[6:8], "Sign up for our newsletters", *s[8:]]
    if layout == "plain":
        return [*s[:3], heading, *s[3:]]
    return [*s[:3], heading, *s[3:6], REPEATED, *s[6:]]


def page(pid, paras, site, hour):
    return {
        "id": pid,
        "url": f"https://{site}/{pid}",
        "fetched_at": f"2026-01-01T{hour:02d}:00:00Z",
        "html": wrap_in_template(paras, site),
    }


def hides(seed, layout, repl):
    with tempfile.TemporaryDirectory() as d:
        got = {
            o.dedup["id"]: o.dedup
            for o in run_records(
                [
                    page("copy", article(seed, layout, repl), "b.example", 0),
                    page("article", article(seed, layout, HEADING), "a.example", 1),
                ],
                pathlib.Path(d),
            )
        }
    return got["article"]["status"] == "duplicate"


mode = sys.argv[1]
if mode == "search":
    layout, seeds, tries = sys.argv[2], range(int(sys.argv[3])), int(sys.argv[4])
    found = {}
    control = sum(
        hides(s, layout, " ".join(random.Random(s).choice(WORDS) for _ in range(6)).capitalize()) for s in seeds
    )
    for s in seeds:
        rng = random.Random(1000 + s)
        for t in range(tries):
            r = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 8))).capitalize()
            if hides(s, layout, r):
                found[s] = (r, t + 1)
                break
    print(json.dumps({"layout": layout, "control_hidden": control, "found": found}))
else:
    data = json.loads(sys.stdin.read())
    print(data["layout"], {s: hides(int(s), data["layout"], r) for s, (r, _) in data["found"].items()})
