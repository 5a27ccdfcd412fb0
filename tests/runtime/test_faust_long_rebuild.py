"""The Faust app keeps its partitions through a store rebuild longer than its poll interval (real broker)."""

from __future__ import annotations

import os
import re
import shutil

import orjson

from runtime.test_faust_app import app_running, article_pages, committed_offset, outcomes
from runtime.test_worker import send
from streamdedup.testing import run_records

POLL_INTERVAL_S = 2  # the app's max poll interval in the run that rebuilds (STREAMDEDUP_MAX_POLL_INTERVAL_S)
BUFFER = 8  # records waiting for the agent (STREAMDEDUP_BATCH_SIZE): fewer than the records after the rebuild


def test_a_rebuild_longer_than_the_poll_interval_keeps_the_partitions_and_judges_every_page_once(settings, tmp_path):
    """The app judges 1,600 pages; its state folder is lost; 40 pages follow (10 copies), more than the agent's
    buffer holds. Restarted with a 2 s poll interval, the app rebuilds the 1,600 for longer than that, keeps
    its partition (no revocation, no LeaveGroup), and every one of the 40 gets one verdict, file mode's. Before:
    aiokafka left the group 2 s into the rebuild (Faust fetched nothing while the agent's buffer was full), and
    the app hung there (faust-streaming#138): none of the 40 came out."""
    # 1,600: a rebuild well past the interval on a quiet machine too (900 took 2.4 s once: too short to tell)
    originals = article_pages("orig", list(range(5000, 6600)))
    later = article_pages("copy", list(range(5000, 5010))) + article_pages("new", list(range(7000, 7030)))
    send(settings, originals)
    with app_running(settings, tmp_path, "faust-1.log", "--verbose") as log:
        assert len(outcomes(settings, len(originals), timeout_s=300)) == len(originals), log.read_text()[-3000:]
        assert committed_offset(settings, len(originals)) == len(originals), log.read_text()[-3000:]
    shutil.rmtree(tmp_path / "fs")
    send(settings, later)
    small = {"STREAMDEDUP_MAX_POLL_INTERVAL_S": str(POLL_INTERVAL_S), "STREAMDEDUP_BATCH_SIZE": str(BUFFER)}
    with app_running(settings, tmp_path, "faust-2.log", "--verbose", env=small) as log:
        got = outcomes(settings, len(originals) + len(later), timeout_s=180)
    text = log.read_text()
    assert len(got) == len(originals) + len(later), text[-3000:]  # and none twice (`outcomes`)
    rebuilt = re.search(r"partition 0: store rebuilt from offsets 0\.\.1599 \(1600 records\) in ([0-9.]+) s", text)
    assert rebuilt is not None, text[-3000:]
    # aiokafka's heartbeat task wakes when the interval runs out: before, revoked 2.9 s into the rebuild
    assert float(rebuilt.group(1)) > POLL_INTERVAL_S + 1, rebuilt.group(0)
    after = text[text.index("rebuilding it from offsets 0..1599"):]
    assert not re.search(r"LeaveGroup|Revoking|revoked", after, re.IGNORECASE), after[-3000:]
    verdicts = {url.decode(): orjson.loads(m.value())["dedup"] for url, (_, m) in got.items()}
    expected = {o.record["url"]: o.dedup for o in run_records(originals + later, tmp_path / "file-mode")}
    assert {r["url"]: (verdicts[r["url"]]["status"], verdicts[r["url"]].get("duplicate_of")) for r in later} == {
        r["url"]: (expected[r["url"]]["status"], expected[r["url"]].get("duplicate_of")) for r in later}
    assert sum(verdicts[r["url"]]["status"] == "duplicate" for r in later) == 10
    assert os.path.isdir(tmp_path / "fs")
