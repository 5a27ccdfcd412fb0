"""The in-memory index: a multimap of 6-byte names to seqs that agrees with a plain dict of lists
through inserts, removals, growth and reuse of removed slots."""

import random

import pytest

from streamdedup.store.memory_index import MAX_SEQ, MemoryIndex, ints_names


def test_the_table_answers_as_a_dict_of_lists_through_growth_and_removals():
    rng = random.Random(4)
    names = [bytes([rng.choice([1, 2, 0xFF])]) + rng.randbytes(5) for _ in range(3000)]
    names += [b"\x01" + bytes(5), b"\xff" * 6]  # the smallest and largest names
    index, model = MemoryIndex(), {}
    seq = 0
    for _ in range(6):
        batch_names, batch_seqs = [], []
        for _ in range(5000):
            name = rng.choice(names)
            batch_names.append(name)
            batch_seqs.append(seq if rng.random() < 0.9 else seq + 2**40)  # seqs past 32 bits too
            seq += 1
        index.insert(batch_names, batch_seqs)
        for name, s in zip(batch_names, batch_seqs, strict=True):
            model.setdefault(name, []).append(s)
        gone = rng.sample([(n, s) for n, seqs in model.items() for s in seqs], 2000)
        index.remove([n for n, _ in gone] + [b"\x03" + bytes(5)], [s for _, s in gone] + [1])  # and one never there
        for n, s in gone:
            model[n].remove(s)
        assert index.seqs(names) == [sorted(model.get(n, [])) for n in names]
        assert index.postings == sum(len(v) for v in model.values())
    assert index.slots > 4096  # it grew
    index.insert([names[0], names[0]], [7, 7])  # a posting is held once
    index.insert([names[0]], [7])
    assert index.seqs([names[0]])[0].count(7) == 1
    counts = index.counts()
    assert counts["postings"] + sum(len(v) for n, v in model.items() if n[0] == 0xFF) == index.postings
    assert counts["ids"] == sum(1 for n, v in model.items() if n[0] == 0xFF and v)
    with pytest.raises(ValueError, match="2\\^47"):
        index.insert([names[0]], [MAX_SEQ])


def test_growing_rehashes_in_place_as_reinserting_the_live_postings_did():
    """`_grow` moves a segment's postings straight from its old table to the new one; the table it
    makes is byte for byte the one re-inserting the live postings (in slot order) made before, and
    the other segments are untouched."""
    import numpy as np

    from streamdedup.store.index_kernels import _insert
    from streamdedup.store.memory_index import _Segment, slots_for

    rng = random.Random(9)
    index = MemoryIndex()
    seq = 0
    for _ in range(4):
        names = [rng.randbytes(6) for _ in range(2000)]
        index.insert(names, list(range(seq, seq + len(names))))
        seq += len(names)
        index.remove(names[::3], list(range(seq - len(names), seq, 3)))  # tombstones to drop
    segment = index.segments[3]
    assert segment.tombstones
    live = segment.words >> np.uint64(63) == 0
    words, low = segment.words[live], segment.low[live]
    expected = _Segment.empty(slots_for(segment.postings + 10, 3))
    mask = np.uint64((1 << 48) - 1)
    _insert(expected.words, expected.low, words & mask, ((words >> np.uint64(48)) << np.uint64(32)) | low.astype(np.uint64))
    postings, others = index.postings, [(s.words.copy(), s.low.copy()) for s in index.segments]
    index._grow(3, 10)
    assert index.postings == postings and index.segments[3].tombstones == 0
    grown = index.segments[3]
    assert np.array_equal(grown.words, expected.words) and np.array_equal(grown.low, expected.low)
    for number, (words_before, low_before) in enumerate(others):
        if number != 3:
            assert np.array_equal(index.segments[number].words, words_before)
            assert np.array_equal(index.segments[number].low, low_before)


def test_postings_placed_from_their_first_free_slots_make_the_same_table_slot_for_slot():
    """A batch files its names that have no postings at the free slots its lookups met
    (`counts_free_ints`): the table is the one inserting them from their homes makes, with
    tombstones, other postings added first, wrapping probes, and slots freed in between (the
    epoch changes: the slots are not used)."""
    import numpy as np

    from streamdedup.store.memory_index import ints_names

    rng = np.random.default_rng(7)
    for case in range(40):
        fast, plain = MemoryIndex(), MemoryIndex()
        fast._allocate(256)  # slots a segment: crowded
        plain._allocate(256)
        names = rng.integers(0, 1 << 12, size=3000, dtype=np.uint64) * np.uint64(1 << 36)  # crowded homes
        seqs = np.arange(3000, dtype=np.uint64)
        for index in (fast, plain):
            index.insert_ints(names[:2000], seqs[:2000])
            index.remove(ints_names(names[:600:3]), seqs[:600:3].tolist())  # tombstones
        batch = np.unique(rng.integers(0, 1 << 48, size=300, dtype=np.uint64))
        counts, free, epoch = fast.counts_free_ints(batch)
        assert counts.tolist() == plain.counts_ints(batch).tolist()
        absent = batch[counts == 0]
        if case % 4 == 3:  # a slot freed since: the free slots are stale
            for index in (fast, plain):
                index.remove(ints_names(names[1:400:5]), seqs[1:400:5].tolist())
        filed = names[2000:2200]  # postings added before the batch's own, in the same call
        all_names = np.concatenate([filed, absent])
        all_seqs = np.arange(5000, 5000 + len(all_names), dtype=np.uint64)
        slots = np.concatenate([np.full(len(filed), -1), free[counts == 0]])
        fast.insert_ints(all_names, all_seqs, slots, epoch)
        plain.insert_ints(all_names, all_seqs)
        assert all(np.array_equal(a, b) for a, b in zip(fast.table(), plain.table(), strict=True))
        assert (fast.postings, fast.tombstones) == (plain.postings, plain.tombstones)



def test_a_batch_of_every_segment_in_one_pass_makes_the_table_one_segment_at_a_time_makes():
    """The store files and probes a batch's names of every segment in one compiled pass
    (`_count_free_all`, `_insert_all`); the table is the one `_insert` makes a segment at a time,
    each segment's postings in their order, slot for slot: with crowded homes, tombstones,
    postings already there, and names filed twice in one batch. Counts agree with a dict."""
    import numpy as np

    from streamdedup.store.index_kernels import _group, _insert, ints_names

    rng = np.random.default_rng(11)
    batched, plain = MemoryIndex(), MemoryIndex()
    batched._allocate(4096)  # no growth: the order of placement alone decides the table
    plain._allocate(4096)
    model: dict[int, set[int]] = {}
    seq = 0
    for round_ in range(12):
        names = rng.integers(0, 1 << 10, size=1500, dtype=np.uint64) * np.uint64(1 << 38)  # crowded homes
        names[::7] = names[1::7][: len(names[::7])]  # the same name twice in a batch
        seqs = np.arange(seq, seq + len(names), dtype=np.uint64)
        seq += len(names)
        counts, free, epoch = batched.counts_free_ints(names)
        assert counts.tolist() == [len(model.get(int(n), ())) for n in names]
        # a free slot is told for new postings only (as a batch's are); the second call files
        # postings there already, and new ones, each probed from its home
        again = np.concatenate([names[:200], names[1400:]]), np.concatenate([seqs[:200], seqs[1400:] + np.uint64(7)])
        batched.insert_ints(names, seqs, np.where(counts == 0, free, -1), epoch)
        batched.insert_ints(*again)
        for batch_names, batch_seqs in ((names, seqs), again):
            order, bounds = _group(batch_names)
            for s in range(len(bounds) - 1):
                at = order[bounds[s]: bounds[s + 1]]
                segment = plain.segments[s]
                placed = _insert(segment.words, segment.low, batch_names[at], batch_seqs[at])
                segment.postings += int(np.count_nonzero(placed))
                segment.tombstones -= int(np.count_nonzero(placed == 2))
        names, seqs = np.concatenate([names, again[0]]), np.concatenate([seqs, again[1]])
        for name, posting in zip(names.tolist(), seqs.tolist(), strict=True):
            model.setdefault(name, set()).add(posting)
        if round_ % 3 == 1:  # tombstones, in both
            gone_names, gone_seqs = names[:300:4], seqs[:300:4]
            for index in (batched, plain):
                index.remove(ints_names(gone_names), gone_seqs.tolist())
            for name, posting in zip(gone_names.tolist(), gone_seqs.tolist(), strict=True):
                model[name].discard(posting)
        assert all(np.array_equal(a, b) for a, b in zip(batched.table(), plain.table(), strict=True))
        assert (batched.postings, batched.tombstones) == (plain.postings, plain.tombstones)
    assert batched.postings == sum(len(s) for s in model.values())

def test_a_snapshot_round_trips_and_one_of_an_earlier_format_is_not_read(tmp_path, monkeypatch):
    """`save` writes each segment's used slots after a bitmap of them, not the free ones, and a
    checksum of it all last (format 5); `load` gives the same table back, byte for byte, does not
    read a snapshot of an earlier format (4: no checksum; 3: every slot; 2: a segment as two
    arrays), whose bytes it would misread or could not check, and raises SnapshotDamaged for one
    cut short or with a changed byte: the store then rebuilds the table from its records."""
    import struct

    import numpy as np

    from streamdedup.store import index_snapshot
    from streamdedup.store.index_snapshot import _CHECKSUM, _HEADER, _SEGMENT_HEADER, SnapshotDamaged
    from streamdedup.store.memory_index import SEGMENTS, SLOT_BYTES

    monkeypatch.setattr(index_snapshot, "_SNAPSHOT_RUN", 1000)  # several runs a segment, the last one short
    rng = random.Random(3)
    index = MemoryIndex()
    names = [rng.randbytes(6) for _ in range(20000)]
    index.insert(names, [s + 2**40 * (s % 2) for s in range(len(names))])  # seqs past 32 bits too
    index.remove(names[:50], list(range(50)))  # tombstones: used slots too
    assert index.tombstones and all(len(segment.words) % 1000 for segment in index.segments)
    path = tmp_path / "snapshot"
    index.save(path, version=7)
    bitmaps = sum((min(1000, len(s.words) - start) + 7) // 8 for s in index.segments
                  for start in range(0, len(s.words), 1000))
    assert path.stat().st_size == (_HEADER.size + SEGMENTS * _SEGMENT_HEADER.size + bitmaps
                                   + (index.postings + index.tombstones) * SLOT_BYTES + _CHECKSUM.size)
    assert path.stat().st_size < 0.7 * index.size_bytes  # a table is at most 0.8 used, ~0.5 after it grows
    assert MemoryIndex.snapshot_table_bytes(path, version=7) == index.size_bytes
    loaded = MemoryIndex.load(path, version=7)
    assert loaded is not None and MemoryIndex.load(path, version=8) is None
    assert MemoryIndex.snapshot_table_bytes(path, version=8) is None
    assert all(np.array_equal(a, b) for a, b in zip(loaded.table(), index.table(), strict=True))
    assert loaded.seqs(names) == index.seqs(names) and loaded.postings == index.postings
    assert loaded.tombstones == index.tombstones
    whole = path.read_bytes()
    for damaged, reason in ((whole[:-SLOT_BYTES], "bytes where"), (whole + b"\0", "bytes where"),  # cut short, longer
                            (whole[:-1] + bytes([whole[-1] ^ 1]), "checksum"),  # its checksum changed
                            (whole[:-100] + bytes([whole[-100] ^ 1]) + whole[-99:], "checksum")):  # a slot's byte
        path.write_bytes(damaged)
        with pytest.raises(SnapshotDamaged, match=reason):
            MemoryIndex.load(path, version=7)
    damaged = bytearray(whole)  # a header that claims a huge segment: not believed, nothing sized from it
    _SEGMENT_HEADER.pack_into(damaged, _HEADER.size, 1 << 50, 0, 0)
    path.write_bytes(bytes(damaged))
    assert MemoryIndex.snapshot_table_bytes(path, version=7) is None
    with pytest.raises(SnapshotDamaged):
        MemoryIndex.load(path, version=7)
    path.write_bytes(whole[: -_CHECKSUM.size].replace(b"sdidx\x00\x05", b"sdidx\x00\x04", 1))  # format 4: no checksum
    assert MemoryIndex.load(path, version=7) is None and MemoryIndex.snapshot_table_bytes(path, version=7) is None
    with open(path, "wb") as old:  # what format 3 wrote: every slot of a segment after its header
        old.write(struct.pack("<8sQQ", b"sdidx\x00\x03\x00", 7, SEGMENTS))
        for segment in index.segments:
            old.write(_SEGMENT_HEADER.pack(len(segment.words), segment.postings, segment.tombstones))
            old.write(segment.cells.tobytes())
    assert MemoryIndex.load(path, version=7) is None and MemoryIndex.snapshot_table_bytes(path, version=7) is None
    with open(path, "wb") as old:  # what the two-array format wrote
        old.write(struct.pack("<8sQQ", b"sdidx\x00\x02\x00", 7, SEGMENTS))
        for segment in index.segments:
            old.write(_SEGMENT_HEADER.pack(len(segment.words), segment.postings, segment.tombstones))
            old.write(np.ascontiguousarray(segment.words).tobytes() + np.ascontiguousarray(segment.low).tobytes())
    assert MemoryIndex.load(path, version=7) is None
    # a table of another number of segments (16 before 2026-12-02): its names would be looked for
    # in the wrong segments, so it is not read, and the store rebuilds its table
    fewer = MemoryIndex()
    fewer._adopt(index.segments[: SEGMENTS // 4])  # a whole file, as one of 16 segments is
    fewer.save(path, version=7)
    assert MemoryIndex.load(path, version=7) is None and MemoryIndex.snapshot_table_bytes(path, version=7) is None


def test_growth_bytes_are_what_an_insert_allocates_for_the_segments_it_grows():
    """`growth_bytes` tells, before an insert, the bytes of the new tables it will make (the store
    checks them against the memory left before it writes a batch): the same figure, 0 when no
    segment grows."""
    import numpy as np

    from streamdedup.store.memory_index import name_ints

    rng = random.Random(11)
    index = MemoryIndex()
    seq, grew = 0, 0
    for _ in range(40):
        names = name_ints([rng.randbytes(6) for _ in range(300)])
        predicted = index.growth_bytes(names)
        before = [segment.words for segment in index.segments]
        index.insert_ints(names, np.arange(seq, seq + len(names), dtype=np.uint64))
        seq += len(names)
        grown = sum(segment.cells.nbytes for segment, old in zip(index.segments, before, strict=True)
                    if segment.words is not old)
        assert predicted == grown
        grew += grown > 0
    assert 0 < grew < 40  # some inserts grew segments, others none
    assert index.growth_bytes(np.zeros(0, dtype=np.uint64)) == 0


def test_segments_filled_at_the_same_pace_grow_at_store_sizes_apart_not_one_batch_after_another():
    """A growth stops the commit that meets it; segments filled at the same pace (names hash to
    them uniformly) would all meet their limit within a few dozen batches. Each grows to its own
    load (`grown_load`), so a reopened store's segments first grow at sizes ~1.45x to ~1.78x its
    own, a few in any run of batches, while the table holds as many slots a posting on average."""
    import numpy as np

    from streamdedup.store.memory_index import SEGMENTS, grown_load

    assert np.mean([grown_load(s) for s in range(SEGMENTS)]) == pytest.approx(grown_load())
    rng = np.random.default_rng(3)
    reserved = SEGMENTS * 2000
    index = MemoryIndex(reserved)  # as a store reopened after a crash sizes its table
    first_growth: dict[int, int] = {}
    grown_by_batch: list[int] = []
    postings = 0
    while len(first_growth) < SEGMENTS:
        before = [segment.words for segment in index.segments]
        index.insert_ints(rng.integers(1, 1 << 47, size=256, dtype=np.uint64),
                          np.arange(postings, postings + 256, dtype=np.uint64))
        postings += 256
        grew = [s for s, (segment, old) in enumerate(zip(index.segments, before, strict=True))
                if segment.words is not old]
        grown_by_batch.append(len(grew))
        first_growth.update((s, postings) for s in grew if s not in first_growth)
    sizes = sorted(first_growth.values())
    # before: all at ~1.55x, the last 1.06x the first; 33 growths in 16 consecutive batches
    assert sizes[0] > 1.35 * reserved and sizes[-1] > 1.2 * sizes[0]
    assert max(sum(grown_by_batch[i: i + 16]) for i in range(len(grown_by_batch))) <= 16


@pytest.mark.parametrize("version", [2, 1])
def test_the_room_under_a_containers_limit_counts_its_page_cache_as_room(tmp_path, version):
    """A container's cgroup is charged for the page cache of the files its processes read (the
    store's, GBs of them), which the kernel reclaims before it kills anything: the room left is
    the limit less what the cgroup holds, that cache aside. Before, the cache counted as used, and a
    worker restarted in its container was refused its store for want of memory it had."""
    from streamdedup.store.memory_index import available_bytes, cgroup_room

    mib = 1 << 20
    if version == 2:
        files = {"memory.max": f"{1000 * mib}\n", "memory.current": f"{900 * mib}\n",
                 "memory.stat": f"anon {350 * mib}\nfile {550 * mib}\nactive_file {300 * mib}\n"
                                f"inactive_file {200 * mib}\nshmem {50 * mib}\n"}
    else:
        (tmp_path / "memory").mkdir()
        files = {"memory/memory.limit_in_bytes": f"{1000 * mib}\n", "memory/memory.usage_in_bytes": f"{900 * mib}\n",
                 "memory/memory.stat": f"cache {550 * mib}\nactive_file {1 * mib}\ntotal_active_file {300 * mib}\n"
                                       f"total_inactive_file {200 * mib}\n"}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    assert cgroup_room(tmp_path) == 600 * mib  # 100 MiB free under the limit + 500 MiB of page cache
    (tmp_path / "meminfo").write_text("MemTotal: 9000000 kB\nMemAvailable: 512000 kB\n")
    assert available_bytes(tmp_path, tmp_path) == 500 * mib  # the host's is smaller here: the smaller one
    (tmp_path / "meminfo").write_text("MemAvailable: 8000000 kB\n")
    assert available_bytes(tmp_path, tmp_path) == 600 * mib
    limit = "memory.max" if version == 2 else "memory/memory.limit_in_bytes"
    (tmp_path / limit).write_text("max\n" if version == 2 else "9223372036854771712\n")  # no limit
    assert cgroup_room(tmp_path) is None
    assert available_bytes(tmp_path, tmp_path) == 8000000 * 1024
    assert cgroup_room(tmp_path / "none") is None and available_bytes(tmp_path / "none", tmp_path / "none") is None


@pytest.mark.parametrize("width", [3, 8, 9, 16, 20])
def test_names_made_as_integers_are_the_integers_of_the_names_bytes(width):
    """`layout.name_ints_of_keys` (a batch's and the rebuild's names) skips the bytes that
    `layout.index_names` makes; a name it got wrong would be filed where no lookup finds it."""
    import numpy as np

    from streamdedup.store import layout
    from streamdedup.store.memory_index import name_ints

    keys = np.random.default_rng(width).integers(0, 256, size=(500, width), dtype=np.uint8)
    for tag in (1, 4, 0xC0):
        as_bytes = layout.index_names(tag, [bytes(row) for row in keys])
        assert np.array_equal(layout.name_ints_of_keys(tag, keys), name_ints(as_bytes))
    assert len(layout.name_ints_of_keys(1, keys[:0])) == 0


def test_a_large_segment_grows_beside_the_batches_and_answers_as_a_dict_of_lists_meanwhile(monkeypatch):
    """A segment of `BESIDE_GROWTH_SLOTS` or more grows in a thread (`_Growth`): the filing that
    starts it does not wait for it; meanwhile lookups read the old table and a side table, new
    postings go to the side table and removals are kept for the new one; the next filing after the
    thread is done puts the new table in place. Here every segment is large enough, and the
    growths' threads are held until the 33rd batch (the first start at ~26), so lookups, filings
    and removals meet them running: the answers are a dict of lists' throughout, and the postings
    the same at the end. No more than `MAX_BESIDE_GROWTHS` grow beside the batches at once: the
    segments that must grow meanwhile grow in place (before the bound, 53 grew at once here)."""
    import threading

    import numpy as np

    from streamdedup.store import memory_index

    monkeypatch.setattr(memory_index, "BESIDE_GROWTH_SLOTS", 0)
    release = threading.Event()
    started: list[object] = []
    run = memory_index._Growth._run

    def held(growth: memory_index._Growth) -> None:
        started.append(growth)
        release.wait(60)
        run(growth)

    monkeypatch.setattr(memory_index._Growth, "_run", held)
    in_place: list[int] = []  # growths in place (`_Segment.rehashed`) while the threads are held
    rehashed = memory_index._Segment.rehashed

    def counted(segment: memory_index._Segment, slots: int) -> memory_index._Segment:
        if not release.is_set():
            in_place.append(slots)
        return rehashed(segment, slots)

    monkeypatch.setattr(memory_index._Segment, "rehashed", counted)
    rng = np.random.default_rng(5)
    index = MemoryIndex()
    model: dict[int, list[int]] = {}
    pool = rng.integers(1, 1 << 47, size=4000, dtype=np.uint64)
    seq, grew_while_held = 0, 0
    for batch in range(70):
        names = rng.choice(pool, size=500)
        seqs = np.arange(seq, seq + 500, dtype=np.uint64)
        seq += 500
        index.insert_ints(names, seqs)
        for name, added in zip(names.tolist(), seqs.tolist(), strict=True):
            model.setdefault(name, []).append(added)
        filed = [(name, s) for name, ss in model.items() for s in ss]
        gone = [filed[i] for i in rng.choice(len(filed), size=60, replace=False)]
        index.remove_ints(np.array([n for n, _ in gone], dtype=np.uint64), np.array([s for _, s in gone], dtype=np.uint64))
        for name, removed in gone:
            model[name].remove(removed)
        if not release.is_set():
            grew_while_held = max(grew_while_held, len(index._growing))
        if batch == 32:
            release.set()
        probe = np.concatenate([pool, rng.integers(1, 1 << 47, size=50, dtype=np.uint64)])
        counts, starts, out = index.found_ints(probe)
        for i, name in enumerate(probe.tolist()):
            assert sorted(out[starts[i]: starts[i] + counts[i]].tolist()) == sorted(model.get(name, []))
    # growths ran beside several batches, never more than the bound at once; the others in place
    assert started and grew_while_held == memory_index.MAX_BESIDE_GROWTHS > 1
    assert len(in_place) > 10
    index.finish_growths()
    assert not index._growing and index.postings == sum(len(seqs) for seqs in model.values())
    assert index.seqs(ints_names(pool)) == [sorted(model.get(name, [])) for name in pool.tolist()]


def test_segment_sizes_and_snapshot_runs_in_numpy_are_the_per_name_and_per_slot_loops():
    """`_segment_sizes` and `_pack_run` (numpy, not compiled) agree with a loop over names and slots."""
    import numpy as np

    from streamdedup.store.index_kernels import EMPTY, SEGMENTS, TOMBSTONE, _segment_of, _segment_sizes
    from streamdedup.store.index_snapshot import _pack_run

    rng = np.random.default_rng(5)
    names = np.concatenate((rng.integers(0, 2**48, 5000, dtype=np.uint64), np.array([0, 2**48 - 1], dtype=np.uint64)))
    expected = np.zeros(SEGMENTS, dtype=np.int64)
    for name in names.tolist():
        expected[int(_segment_of(np.uint64(name)))] += 1
    sizes = _segment_sizes(names)
    assert sizes.dtype == np.int64 and sizes.tolist() == expected.tolist()
    assert _segment_sizes(names[:0]).tolist() == [0] * SEGMENTS
    for slots in (0, 1, 8, 13, 1001):  # a last byte part filled, or none
        words = rng.integers(0, 2**48, slots, dtype=np.uint64)
        state = rng.random(slots)
        words[state < 0.4], words[(state >= 0.4) & (state < 0.5)] = EMPTY, TOMBSTONE  # a tombstone is a slot in use
        low = rng.integers(0, 2**32, slots, dtype=np.uint32)
        bitmap = np.full((slots + 7) // 8, 0xA5, dtype=np.uint8)
        kept_words, kept_low = np.zeros(slots, dtype=np.uint64), np.zeros(slots, dtype=np.uint32)
        count = _pack_run(words, low, bitmap, kept_words, kept_low)
        used = [i for i in range(slots) if words[i] != EMPTY]
        bits = [1 if i < slots and words[i] != EMPTY else 0 for i in range(len(bitmap) * 8)]
        assert count == len(used)
        assert bitmap.tolist() == [int("".join(map(str, bits[b * 8: b * 8 + 8])), 2) for b in range(len(bitmap))]
        assert kept_words[:count].tolist() == words[used].tolist() and kept_low[:count].tolist() == low[used].tolist()
