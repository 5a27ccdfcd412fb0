"""Candidate lookup + insert throughput of the RocksDB store at 1 M stored pages, and bytes per page.

    python bench/store.py                      # 1,000,000 pages stored, then 5 measured windows
    python bench/store.py --pages 10000000     # 10 M pages stored first
    python bench/store.py --smoke              # seconds: 20,000 pages, 3 small windows
    python bench/store.py --bulk-fill          # the same, filled ~10x faster (see below)
    python bench/store.py --lines 100          # each page with 100 lines of text: every site learns a template
    python bench/store.py --no-reopen          # the windows only, without the reopening times

Signatures are synthetic (random, so every page is unique and every lookup misses: the common
case in a crawl) for the four default methods, so the store is measured alone. The store is
filled through the same path it is measured on (larger batches, untimed), or with `--bulk-fill`
by writing the very records that path writes (page record, time entry; the id and one posting per
index key into the in-memory index, and the SimHash word the chance check reads) without the lookups, which every unique page would miss
anyway: ~10x faster, for 10 M pages; then each measured
window sends `--window` pages through Detector.decide_staged + commit in batches of `--batch`,
exactly as the worker does (the index keys of the whole batch looked up in one pass of the table, candidate
verification, one WriteBatch per batch). Signatures of a window are made before its clock starts.

With `--lines N` each page also has text, so that each site learns a template model (the store's
per-site record, read, decoded, changed and encoded again in every batch that touches the site):
its visible text is N lines, 3/4 of them drawn from its site's pool of recurring lines (200 to
3,000 lines, log-uniform over the 500 sites; a few lines on every page, the rest each on some) and
1/4 its own; its main text is its own lines only, so nothing is stripped from it and its random
signatures stand (the page is not fingerprinted again: the store is still measured alone). A full
site model then holds ~3,000-4,096 counted lines, as a real site's does. `--bulk-fill` learns the
templates of the pages it writes too (in order, per site, as the store path would).

Before the windows the bench waits until RocksDB has no compaction pending or running (the fill's
backlog; `--no-settle` skips the wait, as runs before 2026-11-26 did).

Each window also tells where its time went, by step of the stateful stage (`Detector.STEPS`, the
Detector's own clock: µs a page, `us_per_page_by_step`).

Before each window the index is probed for a batch of random names (`table_probe_ns`): the
nanoseconds a name that the host gives the table's random reads at that time, beside the window.

Prints JSON: pages/s (queries + inserts) per window and their median, wall clock, process CPU
(the machine is shared: CPU seconds are the steadier number; RocksDB's background threads
included) and the measuring thread's own CPU (the decide path without them), and bytes per page after a full
compaction: SST bytes of each column family, and the raw (uncompressed) bytes by record type;
memory: the process's resident set after the windows and its peak (RocksDB's block cache, 128 MB,
and memtables included) and the in-memory index's bytes; and the time to reopen the store after a
clean close (the index's snapshot loaded) and after a crash (no snapshot: the index rebuilt from
the page records, in seconds and per million pages; CPU seconds per million pages of the bulk
rebuild, which the store does, and of decoding every record, as it did before, and whether the
two tables are the same byte for byte).
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
from index_kernels import huge_page_bytes  # bench/index_kernels.py
from rocksdict import ReadOptions, WriteBatch

from streamdedup.clean.page_urls import document_key
from streamdedup.clean.template import SiteTemplate
from streamdedup.config import DetectorConfig
from streamdedup.detector import Detector, Fingerprinted
from streamdedup.fingerprints.a12 import A12Params, A12Signature
from streamdedup.fingerprints.minhash import MinHashMethod
from streamdedup.fingerprints.wordpairs import WordPairsParams, WordPairsSignature
from streamdedup.record.page import Page
from streamdedup.store import layout
from streamdedup.store.layout import DocRecord
from streamdedup.store.memory_index import MemoryIndex
from streamdedup.store.signature_store import _SNAPSHOT, _WORDS_SNAPSHOT, SignatureStore, StoreError

SITES = 500
A12_WORD_MASK = (1 << A12Params().word_bits) - 1
MINHASH = MinHashMethod()  # the default signatures: their values as many bits as the store keeps, their band checks


def site_pool(site: int) -> int:
    """How many recurring lines a site's pages draw their template from: 200 to 3,000, log-uniform."""
    return round(200 * 15 ** (((site * 7919) % SITES) / (SITES - 1)))


def texts(i: int, lines: int, rng: random.Random) -> tuple[str, str]:
    """Page i's main text (its own lines) and visible text (its site's recurring lines and its own):
    `lines` lines in all, 3/4 recurring (the first 10 of the pool on every page: a menu, a footer;
    the rest drawn from the pool), 1/4 its own."""
    site, own = i % SITES, [f"page {i} paragraph {k}" for k in range(max(1, lines // 4))]
    pool, shared = site_pool(site), lines - len(own)
    core = min(10, shared)
    drawn = rng.sample(range(core, pool), min(pool - core, shared - core))
    recurring = [f"site {site} line {k}" for k in (*range(core), *drawn)]
    return "\n".join(own), "\n".join(recurring + own)


def synthetic(i: int, rng: random.Random, np_rng: np.random.Generator, lines: int = 0) -> Fingerprinted:
    """A unique page: random signatures of the default methods, a URL-like id, ~500 sites; with
    `lines`, a main and a visible text (`texts`)."""
    page = Page(id=f"https://site{i % SITES}.example/articles/{i}", url=f"https://site{i % SITES}.example/articles/{i}",
                content="", content_type="text/plain", fetched_at=None, lang="en", record={})
    signatures = {
        "exact": rng.getrandbits(128).to_bytes(16, "little"),
        "minhash": MINHASH.signature_of_minima(np_rng.integers(0, 1 << 32, size=MINHASH.params.num_perm,
                                                              dtype=np.uint64).astype(np.uint32), rng.randint(200, 2000)),
        "simhash": rng.getrandbits(64),
        "a12": A12Signature(rng.randint(300, 900), rng.randint(10, 40), tuple(rng.getrandbits(64) for _ in range(3)),
                            # the word signatures as A12Method.signature keeps them (`word_bits`, 32)
                            tuple(rng.getrandbits(64) & A12_WORD_MASK for _ in range(5))),
        # with a paragraph sketch of 4-16 paragraphs (6 bytes each): 51-63 bytes a page on the dev sets
        "wordpairs": WordPairsSignature(np_rng.integers(0, 256, size=WordPairsParams().num_perm // 4, dtype=np.uint8),
                                        rng.randint(200, 2000),
                                        np_rng.integers(0, 1 << 47, size=rng.randint(4, 16), dtype=np.uint64)),
    }
    if not lines:
        return Fingerprinted(page, {}, f"bench:{i}", signatures)
    text, visible = texts(i, lines, rng)
    return Fingerprinted(page, {}, f"bench:{i}", signatures, text=text, visible=visible)


def pages(start: int, stop: int, rng: random.Random, np_rng: np.random.Generator, lines: int = 0) -> list[Fingerprinted]:
    return [synthetic(i, rng, np_rng, lines) for i in range(start, stop)]


def run_window(detector: Detector, items: list[Fingerprinted], batch: int) -> tuple[float, float, float]:
    """Wall, process CPU and calling-thread CPU seconds to decide and commit `items` in
    worker-sized batches. The process CPU includes RocksDB's background threads (flushes and
    compactions); the thread's is the decide path's own. The window's pages, made in advance, are
    frozen out of the cyclic collector's reach while it runs: a worker holds one batch of pages at a
    time, and a full collection walking 25,600 pages' objects (~0.18 s, once a window) was ~10 % of
    the window's time before 2026-11-26."""
    gc.collect()
    gc.freeze()
    try:
        wall, cpu, own = time.perf_counter(), time.process_time(), time.thread_time()
        for start in range(0, len(items), batch):
            outcomes, staged = detector.decide_staged(items[start: start + batch])
            staged.set_meta("offset.bench-0", str(start).encode())  # as the worker writes its Kafka offset
            detector.commit(staged)
        return time.perf_counter() - wall, time.process_time() - cpu, time.thread_time() - own
    finally:
        gc.unfreeze()


def table_probe_ns(store: SignatureStore, rng: np.random.Generator, names: int = 12_288, repeat: int = 5) -> float:
    """Nanoseconds a name to probe the in-memory index for random names (a batch's worth, median
    of `repeat`; counts only, nothing changes): what the host gives the table's random reads now.
    The same code measured 2x-4x apart from run to run at 10 M pages, so each window says it."""
    times = []
    for _ in range(repeat):
        # under tag 0xFE, which no method and no page id has: every probe runs to its free slot
        probe = rng.integers(0, 1 << 40, size=names, dtype=np.uint64) | np.uint64(0xFE << 40)
        started = time.perf_counter()
        store.memory.counts_ints(probe)
        times.append(time.perf_counter() - started)
    return round(statistics.median(times) / names * 1e9, 1)


def settle(store: SignatureStore, limit_s: float = 3600.0) -> float:
    """Seconds until RocksDB has no compaction running or pending: a bulk fill leaves gigabytes to
    compact, and measured windows would otherwise be charged for the fill's backlog."""
    started = time.perf_counter()
    props = ("rocksdb.compaction-pending", "rocksdb.num-running-compactions", "rocksdb.num-running-flushes")
    while time.perf_counter() - started < limit_s and any(
            cf.property_int_value(prop) for cf in (store.db, store.index) for prop in props):
        time.sleep(0.5)
    return time.perf_counter() - started


def raw_bytes_by_type(store: SignatureStore) -> dict[str, int]:
    """Uncompressed key + value bytes by record type (what the SSTs compress)."""
    names = {layout.DOC: "docs", layout.TIME: "time", layout.META: "meta", layout.JOURNAL: "journal",
             layout.TEMPLATE: "templates"}
    sizes: dict[str, int] = {}
    every_key = ReadOptions()
    every_key.set_total_order_seek(True)
    for cf in (store.db, store.index):  # the index column family is empty since schema 4
        for key, value in cf.items(read_opt=every_key):
            name = names.get(key[:1], "other") if cf is store.db else "index column family"
            sizes[name] = sizes.get(name, 0) + len(key) + len(value)
    return sizes


def dir_bytes(store: SignatureStore) -> int:
    return path_bytes(store.path)


def path_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.iterdir() if f.is_file())


def closed_sizes(state: Path, stored: int) -> dict[str, float]:
    """The store directory after a clean close: the records, and the index's snapshot the close
    wrote (deleted when the store opens again): what `du` shows of a stopped store."""
    snapshot = sum((state / name).stat().st_size for name in (_SNAPSHOT, _WORDS_SNAPSHOT) if (state / name).exists())
    return {"closed_dir_bytes_per_page": round(path_bytes(state) / stored, 1),
            "closed_snapshot_bytes_per_page": round(snapshot / stored, 1)}


def sizes(store: SignatureStore, stored: int) -> dict[str, Any]:
    store.db.compact_range(None, None)
    store.index.compact_range(None, None)
    default_sst = store.db.property_int_value("rocksdb.total-sst-files-size") or 0
    index_sst = store.index.property_int_value("rocksdb.total-sst-files-size") or 0
    return {
        "bytes_per_page": round((default_sst + index_sst) / stored, 1),
        "sst_bytes_per_page": {"default (docs, time, meta)": round(default_sst / stored, 1),
                               "index (postings, ids)": round(index_sst / stored, 1)},
        "raw_bytes_per_page": {k: round(v / stored, 1) for k, v in sorted(raw_bytes_by_type(store).items())},
        "dir_bytes_per_page": round(dir_bytes(store) / stored, 1),
        "index_memory_bytes_per_page": round(store.memory.size_bytes / stored, 1),
        "words_memory_bytes_per_page": round(store.words.size_bytes / stored, 1),  # the chance check's SimHash bits
        "index_postings": store.memory.postings,
    }


def bulk_fill(detector: Detector, items: list[Fingerprinted], first_seq: int,
              templates: dict[int, SiteTemplate] | None = None) -> None:
    """Write pages as the store files unique ones, without their lookups (every synthetic page is
    unique: each key gets its first posting; a key hash shared with an earlier page, 1 in ~3,400
    lookups at 10 M pages, may hold one posting more than the cap: nothing else). With `templates`
    (kept between calls), each page's lines are learned for its site, whose model is written too."""
    store = detector.store
    wb = WriteBatch(raw_mode=True)
    params = detector.config.template
    if templates is not None and params is not None:
        touched = set()
        for fp in items:
            site = templates.setdefault(fp.site_hash, SiteTemplate())
            site.learn(fp.page.url, fp.visible_hashes, params)  # the main text's lines are among them
            touched.add(fp.site_hash)
        for site_hash in touched:  # whole: a fill has no earlier model to add to
            wb.put(layout.template_key(site_hash), templates[site_hash].encode())
            templates[site_hash].learned = []
    filed: list[bytes] = []
    seqs: list[int] = []
    for seq, fp in enumerate(items, first_seq):
        mine = {m: sig for m in detector.methods if (sig := fp.signatures.get(m.name)) is not None}
        keys = {store.tags[m.name]: m.index_keys(sig) for m, sig in mine.items()}
        signatures = {store.tags[m.name]: m.encode(sig) for m, sig in mine.items()}
        doc = DocRecord(seq, fp.page.id, seq, fp.page.id, "", signatures, fp.site_hash, document=document_key(fp.page.url))
        wb.put(layout.doc_key(seq), doc.encode())
        wb.put(layout.time_key(doc.event_ms, seq), b"")
        names = sorted({n for tag_names in store.index_names(keys).values() for n in tag_names})
        names.append(layout.page_id_key(doc.page_id))
        filed += names
        seqs += [seq] * len(names)
    wb.put(layout.meta_key("next_seq"), str(first_seq + len(items)).encode())
    store.db.write(wb)
    store.memory.insert(filed, seqs)
    if store.word_tag is not None:  # the chance check's words, as a commit keeps them
        name = store._by_tag[store.word_tag].name
        store.file_words(list(range(first_seq, first_seq + len(items))),
                         [detector.methods_by_name[name][1].encode(fp.signatures[name]) for fp in items])


def transparent_hugepage() -> str | None:
    """The kernel's transparent-huge-page mode (always, madvise or never: numpy asks for huge pages
    for its large arrays, which `madvise` and `always` grant), or None where it does not tell."""
    try:
        text = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    except OSError:
        return None
    chosen = text[text.find("[") + 1: text.find("]")] if "[" in text else text.strip()
    return chosen or None


def memory() -> dict[str, float | None]:
    """Resident set now and at its peak, and how much of it is in transparent huge pages (MiB;
    None where the kernel does not tell): the index's random reads cost more in 4 KiB pages (a
    page-table walk each, two levels deep in a VM), so a slow run says whether it had them."""
    now = 0.0
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            now = int(line.split()[1]) / 1024
    huge = huge_page_bytes()
    return {"rss_mib": round(now, 1), "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "anon_huge_pages_mib": None if huge is None else round(huge / 2**20, 1)}


REOPEN_FIELDS = ("reopen_from_snapshot_s", "reopen_rebuilding_s", "reopen_rebuilding_s_per_million_pages",
                 "reopen_rebuilding_cpu_s_per_million_pages", "rebuild_each_record_decoded_cpu_s_per_million_pages",
                 "rebuild_same_table")


def reopen_times(state: Path, batch: int, stored: int) -> dict[str, Any]:
    """The store reopened after a clean close (its index's snapshot loaded) and as after a crash
    (no snapshot: the index rebuilt from the page records, as the store does it and, beside it,
    by decoding every record as before 2026-11-24: a second table, so it needs the memory twice)."""
    reopen = time.perf_counter()
    with Detector(DetectorConfig(batch_size=batch), state):  # loads the snapshot of the close
        snapshot_s = time.perf_counter() - reopen
    (state / _SNAPSHOT).unlink()  # as after a crash
    reopen, reopen_cpu = time.perf_counter(), time.process_time()
    with Detector(DetectorConfig(batch_size=batch), state) as detector:
        rebuild_s, rebuild_cpu = time.perf_counter() - reopen, time.process_time() - reopen_cpu
        print(json.dumps({"reopen_rebuilding_s": round(rebuild_s, 2), "cpu_s": round(rebuild_cpu, 2)}),
              file=sys.stderr, flush=True)
        bulk_table = detector.store.memory
        detector.store.memory = MemoryIndex()
        cpu = time.process_time()
        per_record_cpu: float | None = None
        same_table: bool | None = None
        try:  # as before 2026-11-24: every record decoded (a second table beside the first)
            detector.store._rebuild_index(bulk=False)
            per_record_cpu = time.process_time() - cpu
            same_table = all(np.array_equal(a, b) for a, b in zip(bulk_table.table(),
                                                                  detector.store.memory.table(), strict=True))
        except StoreError as err:  # two tables of 10 M pages do not fit beside each other: said, not fatal
            print(f"not compared with the per-record rebuild: {err}", file=sys.stderr, flush=True)
    return {"reopen_from_snapshot_s": round(snapshot_s, 2), "reopen_rebuilding_s": round(rebuild_s, 2),
            "reopen_rebuilding_s_per_million_pages": round(rebuild_s / stored * 1e6, 2),
            "reopen_rebuilding_cpu_s_per_million_pages": round(rebuild_cpu / stored * 1e6, 2),
            "rebuild_each_record_decoded_cpu_s_per_million_pages":
                None if per_record_cpu is None else round(per_record_cpu / stored * 1e6, 2),
            "rebuild_same_table": same_table}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=1_000_000, help="pages stored before the measured windows")
    parser.add_argument("--windows", type=int, default=5)
    parser.add_argument("--window", type=int, default=25_600, help="pages per measured window")
    parser.add_argument("--batch", type=int, default=256, help="pages per decide_staged + commit (the worker's)")
    parser.add_argument("--fill-batch", type=int, default=2048)
    parser.add_argument("--bulk-fill", action="store_true", help="fill by writing the records without lookups (10 M)")
    parser.add_argument("--lines", type=int, default=0,
                        help="lines of text per page, so that each site learns a template (see above); 0: no text")
    parser.add_argument("--no-settle", dest="settle", action="store_false",
                        help="start the windows at once, while RocksDB still compacts what the fill wrote")
    parser.add_argument("--smoke", action="store_true", help="20,000 pages, 3 windows of 2,560: runs in seconds")
    parser.add_argument("--no-reopen", dest="reopen", action="store_false",
                        help="skip the reopening times after the windows (they need the index's memory twice: "
                             "two runs at once, bench/store_pair.py, past 2 M pages on 24 GB)")
    parser.add_argument("--out", type=Path, default=Path("bench/store.json"))
    args = parser.parse_args()
    if args.smoke:
        args.pages, args.windows, args.window = 20_000, 3, 2_560
    rng, np_rng = random.Random(1), np.random.default_rng(1)
    probe_rng = np.random.default_rng(2)  # its own: the pages stay those of earlier runs
    work = Path(tempfile.mkdtemp(prefix="store-bench-"))
    try:
        with Detector(DetectorConfig(batch_size=args.batch), work / "state") as detector:
            fill_started = time.perf_counter()
            templates: dict[int, SiteTemplate] | None = {} if args.lines else None
            for start in range(0, args.pages, args.fill_batch * 8):
                chunk = pages(start, min(args.pages, start + args.fill_batch * 8), rng, np_rng, args.lines)
                if args.bulk_fill:
                    bulk_fill(detector, chunk, start, templates)
                else:
                    run_window(detector, chunk, args.fill_batch)
                done = start + len(chunk)
                if done % 1_000_000 < len(chunk):  # progress, for runs that may not finish
                    print(json.dumps({"filled": done, "seconds": round(time.perf_counter() - fill_started),
                                      "dir_bytes_per_page": round(dir_bytes(detector.store) / done, 1), **memory()}),
                          file=sys.stderr, flush=True)
            fill_s = time.perf_counter() - fill_started
            settle_s = settle(detector.store) if args.settle else None
            windows = []
            for w in range(args.windows):
                start = args.pages + w * args.window
                probe_ns = table_probe_ns(detector.store, probe_rng)
                before, steps_before = Counter(detector.work), Counter(detector.step_ns)
                wall, cpu, own = run_window(detector, pages(start, start + args.window, rng, np_rng, args.lines),
                                            args.batch)
                window_work = Counter(detector.work)
                window_work.subtract(before)
                window_steps = Counter(detector.step_ns)
                window_steps.subtract(steps_before)
                windows.append({"stored_at_start": start, "pages_per_s": round(args.window / wall),
                                "pages_per_cpu_s": round(args.window / cpu),
                                "pages_per_thread_cpu_s": round(args.window / own),
                                # random pages share no content: these are chance collisions of index keys
                                "candidates_found_per_page": round(window_work["candidates_found"] / args.window, 3),
                                "candidates_verified_per_page": round(window_work["candidates_verified"] / args.window, 3),
                                "anon_huge_pages_mib": memory()["anon_huge_pages_mib"],
                                "table_probe_ns_per_name_before": probe_ns,
                                # where the window's time went, by step of the stateful stage (`Detector.STEPS`)
                                "us_per_page_by_step": {step: round(window_steps[step] / 1000 / args.window, 2)
                                                        for step in detector.STEPS}})
                print(json.dumps(windows[-1]), file=sys.stderr, flush=True)  # kept if a later step fails
            stored = args.pages + args.windows * args.window
            rss = memory()
            space = sizes(detector.store, stored)
            print(json.dumps({**rss, **space}), file=sys.stderr, flush=True)
            config_meta = detector.store.get_meta("config")
        report = {
            "stored_before_windows": args.pages, "window_pages": args.window, "batch": args.batch,
            "lines_per_page": args.lines,
            "pages_per_s_median": statistics.median(w["pages_per_s"] for w in windows),
            "pages_per_cpu_s_median": statistics.median(w["pages_per_cpu_s"] for w in windows),
            "pages_per_thread_cpu_s_median": statistics.median(w["pages_per_thread_cpu_s"] for w in windows),
            "settled_before_windows_s": settle_s and round(settle_s, 1),
            "windows": windows, "fill_pages_per_s": round(args.pages / fill_s), "bulk_fill": args.bulk_fill,
            "stored_pages": stored, **rss, "transparent_hugepage": transparent_hugepage(), **space,
            **closed_sizes(work / "state", stored),
            **(reopen_times(work / "state", args.batch, stored) if args.reopen else dict.fromkeys(REOPEN_FIELDS)),
            "schema": config_meta and json.loads(config_meta)["schema"],
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report))


if __name__ == "__main__":
    main()
