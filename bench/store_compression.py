"""Bytes a page of the store's page records under other RocksDB table settings: what the 256-byte goal could get from compression alone.

    python bench/store_compression.py                  # 300,000 pages, five settings
    python bench/store_compression.py --pages 50000    # seconds

The page records and time entries `bench/store.py` writes (its synthetic pages: random signatures
of the four default methods, URL-like ids of ~500 sites), written in batches of 256 into a fresh
RocksDB under each setting, compacted, and the SST bytes divided by the pages. The settings: the
store's own (4 KiB blocks, lz4 above the bottom level, zstd at it), 16 KiB blocks, zstd with a
16 KiB dictionary trained on 100x that at the bottom level, both, and zstd level 9. What compresses
is the page ids and times (the signatures are random bits), and these ids are more alike than a
real crawl's URLs, so a saving here is an upper bound. Prints and writes JSON (`--out`).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import tempfile
from pathlib import Path

import numpy as np
from rocksdict import BlockBasedOptions, DBCompressionType, Options, Rdict, WriteBatch
from store import pages  # bench/store.py

from streamdedup.clean.page_urls import document_key
from streamdedup.config import DetectorConfig
from streamdedup.detector import Detector
from streamdedup.store import layout
from streamdedup.store.layout import DocRecord

SETTINGS = {"store (4 KiB blocks)": {}, "16 KiB blocks": {"block": 16384}, "zstd dictionary 16 KiB": {"dict_bytes": 16384},
            "16 KiB blocks + dictionary": {"block": 16384, "dict_bytes": 16384}, "zstd level 9": {"level": 9}}


def records(count: int) -> list[tuple[bytes, bytes, bytes]]:
    """(doc key, page record, time key) of `count` synthetic pages, as the store writes them."""
    rng, np_rng = random.Random(1), np.random.default_rng(1)
    out = []
    with Detector(DetectorConfig(), Path(tempfile.mkdtemp(prefix="compression-")) / "state") as detector:
        tags = detector.store.tags
        for start in range(0, count, 10_000):
            for seq, fp in enumerate(pages(start, min(count, start + 10_000), rng, np_rng), start):
                signatures = {tags[m.name]: m.encode(sig) for m in detector.methods
                              if (sig := fp.signatures.get(m.name)) is not None}
                doc = DocRecord(seq, fp.page.id, 1_700_000_000_000 + seq * 37, fp.page.id, "", signatures, fp.site_hash,
                                document=document_key(fp.page.url))
                out.append((layout.doc_key(seq), doc.encode(), layout.time_key(doc.event_ms, seq)))
    return out


def bytes_per_page(rows: list[tuple[bytes, bytes, bytes]], block: int = 4096, dict_bytes: int = 0,
                   level: int | None = None) -> float:
    path = Path(tempfile.mkdtemp(prefix="compression-"))
    try:
        options = Options(raw_mode=True)
        options.create_if_missing(True)
        table = BlockBasedOptions()
        table.set_bloom_filter(10, False)
        table.set_format_version(5)
        table.set_block_size(block)
        options.set_block_based_table_factory(table)
        options.set_compression_type(DBCompressionType.lz4())
        options.set_bottommost_compression_type(DBCompressionType.zstd())
        options.set_level_compaction_dynamic_level_bytes(True)
        options.set_write_buffer_size(16 << 20)
        if dict_bytes or level is not None:
            options.set_bottommost_compression_options(-14, 32767 if level is None else level, 0, dict_bytes, True)
            if dict_bytes:
                options.set_bottommost_zstd_max_train_bytes(dict_bytes * 100, True)
        db = Rdict(str(path), options)
        for start in range(0, len(rows), 256):
            wb = WriteBatch(raw_mode=True)
            for key, value, time_key in rows[start: start + 256]:
                wb.put(key, value)
                wb.put(time_key, b"")
            db.write(wb)
        db.compact_range(None, None)
        size = db.property_int_value("rocksdb.total-sst-files-size") or 0
        db.close()
        return round(size / len(rows), 1)
    finally:
        shutil.rmtree(path, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=300_000)
    parser.add_argument("--out", type=Path, default=Path("bench/store_compression.json"))
    args = parser.parse_args()
    rows = records(args.pages)
    report = {"pages": args.pages, "raw_bytes_per_page": round(sum(len(k) + len(v) + len(t) for k, v, t in rows) / len(rows), 1),
              "bytes_per_page": {name: bytes_per_page(rows, **setting) for name, setting in SETTINGS.items()}}
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report))


if __name__ == "__main__":
    main()
