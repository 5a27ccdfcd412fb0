"""Long fuzz run: at least N generated hostile messages through the detector (hypothesis).

    python bench/fuzz.py --messages 100000

Prints JSON: messages, outcomes by status and rejection reason, seconds. Fails loudly (non-zero
exit) on any crash, hang or message not accounted for."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamdedup.config import DetectorConfig
from streamdedup.detector import Detector
from streamdedup.fuzzing import message
from streamdedup.testing import raw_records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=100_000)
    args = parser.parse_args()
    counts: Counter[str] = Counter()
    total = 0
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp, Detector(DetectorConfig(), Path(tmp)) as detector:
        @settings(max_examples=args.messages // 50 + 100, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(st.lists(message, min_size=50, max_size=200))
        def run(messages: list[bytes]) -> None:
            nonlocal total
            if total >= args.messages:
                return
            outcomes = list(detector.run(raw_records(messages)))
            assert len(outcomes) == len(messages), "a message was lost"
            for outcome in outcomes:
                counts[outcome.status if outcome.status != "rejected" else f"rejected:{outcome.dedup['reason']}"] += 1
            total += len(messages)

        run()  # at least 50 messages an example: enough examples to pass N, then they return at once
    print(json.dumps({"messages": total, "seconds": round(time.monotonic() - started, 1),
                      "outcomes": dict(counts.most_common())}))
    if total < args.messages:
        sys.exit("hypothesis stopped early")


if __name__ == "__main__":
    main()
