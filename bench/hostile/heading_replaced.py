"""An advance copy with the article's heading replaced: of how many seeds the article, crawled after, is hidden.

9-paragraph generated articles in a news template, a 6-word heading after the 3rd paragraph; the
copy (another site, crawled first) has a line of made-up words in its place. Layouts: `plain`,
`repeated` (a like line down the page), `test` (tests/verdict/test_short_lines_edited.py's).
`search LAYOUT SEEDS TRIES` prints `control_hidden` (of SEEDS, one random 6-word line each) and,
per seed, the first of TRIES random 4-8-word lines that hides it; `check` reads that JSON on stdin
and runs its lines again.

    PYTHONPATH=. python bench/hostile/heading_replaced.py search plain 3 1
"""

import argparse
import json
import pathlib
import random
import sys
import tempfile

from streamdedup.testing import make_article, run_records, wrap_in_template

WORDS = [f"{a}{b}{c}" for a in "bcdfgklmnprstv" for b in "aeiou" for c in "lmnrst"]
HEADING = "Where the new pumping stations go"
REPEATED = "Continue reading the main story"
LAYOUTS = ("plain", "repeated", "test")


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


def made_up(rng, words):
    """A line of `words` made-up words, capitalised (one generator for the line: each word drawn anew)."""
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize()


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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    modes = parser.add_subparsers(dest="mode", required=True)
    search = modes.add_parser("search", help="control_hidden of SEEDS, and lines of TRIES that hide each seed")
    search.add_argument("layout", choices=LAYOUTS)
    search.add_argument("seeds", type=int)
    search.add_argument("tries", type=int)
    modes.add_parser("check", help="run the lines of a search's JSON (stdin) again")
    args = parser.parse_args()
    if args.mode == "search":
        seeds = range(args.seeds)
        control = sum(hides(s, args.layout, made_up(random.Random(s), 6)) for s in seeds)
        found = {}
        for s in seeds:
            rng = random.Random(1000 + s)
            for t in range(args.tries):
                r = made_up(rng, rng.randint(4, 8))
                if hides(s, args.layout, r):
                    found[s] = (r, t + 1)
                    break
        print(json.dumps({"layout": args.layout, "control_hidden": control, "found": found}))
    else:
        data = json.loads(sys.stdin.read())
        print(data["layout"], {s: hides(int(s), data["layout"], r) for s, (r, _) in data["found"].items()})


if __name__ == "__main__":
    main()
