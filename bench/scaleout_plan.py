"""Per-page costs of the global topology, measured on generated ~5 KB pages, and what they come
to at a given scale (the README's plan for 100 workers and 10^9 pages uses its output).

    python bench/scaleout_plan.py [--pages 300] [--partitions 12 100 1000] [--stored 1e9] [--workers 100]

Prints JSON: keys per page, index partitions touched, bytes on the wire per page by topic, and
bytes of index state per page (each touched index partition keeps the page's signature record).
"""

from __future__ import annotations

import argparse
import json
import statistics
from dataclasses import replace

import orjson

from streamdedup.config import DetectorConfig
from streamdedup.fingerprinter import Fingerprinted, Fingerprinter
from streamdedup.record.readers import RawRecord
from streamdedup.runtime.scaleout.messages import Answer, IndexRequest, Match, PageHeader
from streamdedup.runtime.scaleout.routing import page_order
from streamdedup.runtime.topologies.scaleout import index_requests
from streamdedup.store.signature_store import method_tags
from streamdedup.testing import make_article


def measure(pages: int, partitions: list[int]) -> dict:
    detector = Fingerprinter(DetectorConfig())
    tags = method_tags([m.name for m in detector.methods])
    rows: dict[int, list[dict]] = {p: [] for p in partitions}
    for i in range(pages):
        text = "\n\n".join(make_article(i, paragraphs=6, sentences=6))
        raw = RawRecord("b", data=orjson.dumps({"url": f"https://s{i % 7}.example/{i}", "content": text,
                                                "content_type": "text/plain", "fetched_at": "2024-03-01T00:00:00Z"}))
        item = detector.prepare(raw)
        assert isinstance(item, Fingerprinted)
        order = page_order(0, 0, 0, i)
        sent, _ = index_requests(item, detector.methods, tags, 0, 1)
        stored = replace(sent, cluster_id=order.hex(), duplicate_of=f"{order.hex()} {item.page.id}")  # as filed
        for p in partitions:
            _, by_partition = index_requests(item, detector.methods, tags, 0, p)
            keys = sum(len(k) for per_tag in by_partition.values() for k in per_tag.values())
            requests = sum(len(IndexRequest(order, sent, k).encode()) for k in by_partition.values())
            answer = len(Answer(item.page.id, order, 0, (Match(item.page.id, order, "minhash", 0.9, order, item.page.id),)).encode())
            header = len(PageHeader(item.page.id, order, tuple(by_partition), item.record, "b").encode())
            rows[p].append({"page_bytes": len(raw.data or b""), "keys": keys, "touched": len(by_partition),
                            "index_request_bytes": requests, "answer_bytes": answer * len(by_partition),
                            "header_bytes": header, "doc_record_bytes": len(stored.encode()),
                            "index_state_bytes": len(by_partition) * (len(stored.encode()) + 40) + keys * 30})
    return {str(p): {k: statistics.median(r[k] for r in rs) for k in rs[0]} for p, rs in rows.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=300)
    parser.add_argument("--partitions", type=int, nargs="+", default=[12, 100, 1000])
    parser.add_argument("--stored", type=float, default=1e9)
    parser.add_argument("--workers", type=int, default=100)
    args = parser.parse_args()
    per_page = measure(args.pages, args.partitions)
    scale = {p: {"index_state_total_TB": round(v["index_state_bytes"] * args.stored / 1e12, 1),
                 "index_state_per_worker_GB": round(v["index_state_bytes"] * args.stored / args.workers / 1e9, 1),
                 "internal_bytes_per_page": v["index_request_bytes"] + v["answer_bytes"] + v["header_bytes"]}
             for p, v in per_page.items()}
    print(json.dumps({"pages_measured": args.pages, "median_per_page": per_page, "at_scale": scale,
                      "stored_pages": args.stored, "workers": args.workers}, indent=1))


if __name__ == "__main__":
    main()
