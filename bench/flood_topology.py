"""`bench/flood.py` with the story's copies judged by the global topology's index step, in-process.

    python bench/flood_topology.py --index-partitions 4        # the full flood, 300 copies
    python bench/flood_topology.py --smoke --index-partitions 4

The same pages as `bench/flood.py` (same arguments, same seed), but the store that judges them is
`--index-partitions` index partitions (`runtime/scaleout/index_stage.IndexPartition`), each page's
keys routed to the partition they live in, in the global order (one request after another, a
commit every 256 pages), and each verdict gathered from its partitions' answers
(`gather_verdicts.verdict_of`). No broker: the index step's cap policy on its own (a page that matched
no earlier page in a partition takes that partition's full keys, `displaces=not earlier`).
Prints the flood's figures that do not come from the Detector: found, unique, in attacker clusters.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from streamdedup.detector import Detector
from streamdedup.fingerprinter import Fingerprinted
from streamdedup.runtime.scaleout.gather_verdicts import verdict_of
from streamdedup.runtime.scaleout.index_stage import IndexPartition
from streamdedup.runtime.scaleout.messages import IndexRequest, PageHeader
from streamdedup.runtime.scaleout.routing import page_order
from streamdedup.runtime.topologies.scaleout import index_requests
from streamdedup.store.signature_store import method_tags

_spec = importlib.util.spec_from_file_location("flood", Path(__file__).with_name("flood.py"))
assert _spec is not None and _spec.loader is not None
flood = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(flood)


def index_step_detector(partitions: int) -> type[Detector]:
    """A Detector whose `run`, for the store `flood.run` judges in (its folder `store`), goes
    through `partitions` index partitions instead (the crafting oracle stays a Detector)."""

    class IndexStep(Detector):
        def __init__(self, config: Any, path: str | Path) -> None:
            super().__init__(config, path)
            self.parts = ([IndexPartition(Path(path).parent / f"index-{p}", self.methods, self.policy,
                                          self.store_config, partition=p) for p in range(partitions)]
                          if Path(path).name == "store" else [])
            self.arrived = 0

        def run(self, records: Any) -> Any:
            if not self.parts:
                return super().run(records)
            tags = method_tags([m.name for m in self.methods])
            requests = []
            for raw in records:
                item = self.prepare(raw)
                assert isinstance(item, Fingerprinted)
                doc, keys = index_requests(item, self.methods, tags, 0, partitions)
                self.arrived += 1
                order = page_order(self.arrived * 1000, self.arrived, 0, self.arrived)
                requests.append([(p, IndexRequest(order, doc, k)) for p, k in keys.items()])
            out = []
            for first in range(0, len(requests), 256):
                for routed in requests[first: first + 256]:
                    answers = [self.parts[p].answer(request) for p, request in routed]
                    request = routed[0][1]
                    header = PageHeader(request.doc.page_id, request.order, tuple(p for p, _ in routed), {"url": ""}, "")
                    out.append(SimpleNamespace(dedup=verdict_of(header, answers)))
                for part in self.parts:
                    part.commit()
            self.work["pages"] += len(out)
            return iter(out)

        def close(self) -> None:
            for part in self.parts:
                part.close()
            super().close()

    return IndexStep


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index-partitions", type=int, default=4)
    parser.add_argument("--fill", type=int, default=32)
    parser.add_argument("--copies", type=int, default=300)
    parser.add_argument("--budget", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--smoke", action="store_true", help="--cap 8 --fill 8 --copies 40 --budget 3000")
    args = parser.parse_args(argv)
    cap = None
    if args.smoke:
        cap, args.fill, args.copies, args.budget = 8, 8, 40, 3000
    flood.Detector = index_step_detector(args.index_partitions)
    result = flood.run(args.fill, args.copies, args.budget, args.seed, cap)
    print(json.dumps({"index_partitions": args.index_partitions,
                      **{k: result[k] for k in ("fill", "cap", "copies", "attacker_pages", "story_keys", "story_status",
                                                "copies_found", "copies_unique", "copies_in_attacker_clusters")}},
                     indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
