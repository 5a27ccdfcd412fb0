"""The Faust app compiles or loads its kernels when it is created, before it joins its group (`faust_warm_up`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# in a fresh process: every kernel signature numba has compiled or loaded there, before and after the app's pages
PROBE = """
import gc, json, random, sys, tempfile
from pathlib import Path
import orjson
from numba.core.dispatcher import Dispatcher
from streamdedup.config import DetectorConfig
from streamdedup.detector import Detector
from streamdedup.runtime.faust_app import create_app
from streamdedup.runtime.faust_journal import JournalKeeper
from streamdedup.runtime.settings import WorkerSettings
from streamdedup.testing import headlined_brief, make_article, wrap_in_template

def loaded():
    return {f"{d.py_func.__module__}.{d.py_func.__qualname__}{s}" for d in gc.get_objects()
            if isinstance(d, Dispatcher) and d.py_func.__module__.startswith("streamdedup") for s in d.signatures}

config = DetectorConfig()
create_app(WorkerSettings(bootstrap_servers="127.0.0.1:9", state_dir=Path(sys.argv[1])), config)
before = loaded()
rng = random.Random(11)
pages = []
for i in range(60):  # stories on 1-4 of 6 sites, copied, then corrected; and briefs
    story = make_article(900 + i, paragraphs=3 + i % 3)
    for j, site in enumerate(rng.sample(["North", "South", "East", "West", "Up", "Down"], 1 + i % 4)):
        text = story if j < 2 else story[:-1] + [story[-1] + " A later correction."]
        pages.append({"url": f"https://{site.lower()}.example/{i}", "content": wrap_in_template(text, site)})
    if i % 7 == 0:
        pages.append({"url": f"https://brief.example/{i}", "content": headlined_brief(i)})
keeper = JournalKeeper(Detector(config, tempfile.mkdtemp()), "pages", 0)
for offset, page in enumerate(pages):
    keeper.outputs(offset, None, orjson.dumps(page), 1_700_000_000_000 + offset * 60_000)
print(json.dumps(sorted(loaded() - before)))
"""


def test_app_judges_its_first_pages_without_compiling_or_loading_a_kernel(tmp_path: Path) -> None:
    """An app's first pages hold Faust's event loop no longer than later ones: their kernels are ready.

    Without the warm-up a cold app's first page compiled ~10 kernels on the loop (8 s; 18 s on busy cores), past
    the 10 s rebalance timeout. numba's cache here is the suite's (a kernel loaded from it counts as one compiled)."""
    done = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path / "state")], cwd=ROOT, capture_output=True,
                          text=True, timeout=600, check=True)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []
