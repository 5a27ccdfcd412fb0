"""A store is opened or refused, never replaced; a store in use or damaged ends in one line naming
the fix (on a real RocksDB store, through the command line)."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import make_article, page, wrap_in_template, write_jsonl

from streamdedup.cli import main


def _crawl(tmp_path: Path, n: int = 6) -> Path:
    return write_jsonl(tmp_path / "crawl.jsonl", [
        page(f"https://s{i % 3}.example/{i}", wrap_in_template(make_article(100 + i // 2), f"S{i % 3}"))
        for i in range(n)])


def _dedup(crawl: Path, out: Path, state: Path, *extra: str) -> int:
    return main(["dedup", str(crawl), "--out", str(out), "--state", str(state), "-q", *extra])


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


@pytest.fixture
def store(tmp_path) -> Path:
    state = tmp_path / "state"
    assert _dedup(_crawl(tmp_path), tmp_path / "first", state) == 0
    return state


def test_a_store_that_lost_current_and_its_wal_is_refused_not_replaced(tmp_path, store, capsys):
    (store / "CURRENT").unlink()
    for wal in store.glob("*.log"):
        wal.unlink()
    tables = sorted(p.name for p in store.glob("*.sst"))
    assert tables
    assert _dedup(_crawl(tmp_path), tmp_path / "second", store) == 2
    line = _one_line_error(capsys)
    assert "damaged" in line and "no CURRENT" in line and "backup" in line
    assert not (store / "CURRENT").exists() and sorted(p.name for p in store.glob("*.sst")) == tables
    assert main(["store", "info", "--state", str(store)]) == 2
    assert "damaged" in _one_line_error(capsys)


def test_a_new_store_is_made_only_in_an_empty_directory(tmp_path, capsys):
    state = tmp_path / "state"
    state.mkdir()
    (state / "notes.txt").write_text("not a store")
    assert _dedup(_crawl(tmp_path), tmp_path / "out", state) == 2
    assert "not a store and not empty" in _one_line_error(capsys)
    assert sorted(p.name for p in state.iterdir()) == ["notes.txt"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _dedup(_crawl(tmp_path), tmp_path / "out2", empty) == 0


HOLD = textwrap.dedent("""
    import sys, time
    from streamdedup.store.signature_store import SignatureStore
    store = SignatureStore.open_existing(sys.argv[1])
    print("open", flush=True)
    time.sleep(60)
""")


def test_a_store_in_use_by_another_process_is_one_clear_line(tmp_path, store, capsys):
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(store)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        assert _dedup(_crawl(tmp_path), tmp_path / "second", store) == 2
        line = _one_line_error(capsys)
        assert "in use by another process" in line and "stop the other" in line
        for command in (["info"], ["delete", "--state", str(store), "some-id"]):
            argv = ["store", *command] + ([] if "--state" in command else ["--state", str(store)])
            assert main(argv) == 2
            assert "in use by another process" in _one_line_error(capsys)
    finally:
        holder.kill()
        holder.wait()


def test_store_info_finds_a_flipped_bit_in_a_table(store, capsys):
    table = max(store.glob("*.sst"), key=lambda p: p.stat().st_size)
    data = bytearray(table.read_bytes())
    data[len(data) // 3] ^= 0x10
    table.write_bytes(bytes(data))
    assert main(["store", "info", "--state", str(store)]) == 2
    line = _one_line_error(capsys)
    assert "damaged" in line and "Corruption" in line and table.name in line


def test_store_delete_takes_its_ids_after_the_options_too(store, capsys):
    assert main(["store", "delete", "--state", str(store), "no-such-page", "nor-this-one"]) == 1
    assert "not found: ['no-such-page', 'nor-this-one']" in capsys.readouterr().out
    assert main(["store", "delete", "no-such-page", "--state", str(store)]) == 1


def _distinct_pages(count: int) -> list[bytes]:
    """Plain-text pages no two of which are alike (no HTML to extract: fast)."""
    import random

    import orjson

    from streamdedup.testing import make_words

    rng = random.Random(56)
    vocabulary = make_words(rng, 5000)
    return [orjson.dumps({"id": f"p{i}", "url": f"https://s{i % 7}.example/{i}", "content_type": "text/plain",
                          "content": " ".join(rng.choices(vocabulary, k=80)), "fetched_at": "2024-03-01T00:00:00Z"})
            for i in range(count)]


def _damage_snapshot_slots(snapshot: Path, every: int) -> int:
    """Flip a bit of the name in every `every`-th stored slot of an index snapshot (its headers and
    bitmaps left whole, so the file still parses): how many slots were changed."""
    from streamdedup.store.index_snapshot import _HEADER, _SEGMENT_HEADER, _bitmap_bytes
    from streamdedup.store.memory_index import SEGMENTS, SLOT_BYTES

    data = bytearray(snapshot.read_bytes())
    heads = list(_SEGMENT_HEADER.iter_unpack(data[_HEADER.size: _HEADER.size + SEGMENTS * _SEGMENT_HEADER.size]))
    assert all(slots <= 1 << 20 for slots, _, _ in heads)  # one run a segment: its bitmap, then its slots
    place, changed = _HEADER.size + SEGMENTS * _SEGMENT_HEADER.size, 0
    for slots, postings, tombstones in heads:
        place += _bitmap_bytes(slots)
        for slot in range(0, postings + tombstones, every):
            data[place + slot * SLOT_BYTES] ^= 0x01  # the lowest byte of the slot's 48-bit name
            changed += 1
        place += (postings + tombstones) * SLOT_BYTES
    snapshot.write_bytes(bytes(data))
    return changed


def test_a_damaged_index_snapshot_is_rebuilt_from_the_records_and_store_info_says_so(tmp_path, capsys):
    """Bytes of the index snapshot changed on disk (its headers intact) fail its checksum: the
    store warns and rebuilds its index from the page records, so every page sent again is still
    known by its id (duplicate_id), and `store info` reports the damage it found."""
    import orjson

    crawl = write_jsonl(tmp_path / "crawl.jsonl", _distinct_pages(300))
    state = tmp_path / "state"
    assert _dedup(crawl, tmp_path / "first", state) == 0
    snapshot = state / "index-snapshot"
    assert _damage_snapshot_slots(snapshot, every=7) > 100
    capsys.readouterr()
    assert _dedup(crawl, tmp_path / "again", state) == 0
    warnings = [orjson.loads(line) for line in capsys.readouterr().err.splitlines()]
    reasons = [orjson.loads(line)["dedup"].get("reason") for name in ("unique", "duplicates", "rejected")
               for line in (tmp_path / "again" / f"{name}.jsonl").read_bytes().splitlines()]
    assert len(reasons) == 300 and reasons.count("duplicate_id") == 300, reasons.count("duplicate_id")
    assert [w["level"] for w in warnings] == ["WARNING"]  # one line, naming what was found and done
    assert "index snapshot" in warnings[0]["message"] and "checksum" in warnings[0]["message"]
    assert "rebuilt" in warnings[0]["message"]
    _damage_snapshot_slots(snapshot, every=7)  # the snapshot the rerun's close wrote
    assert main(["store", "info", "--state", str(state)]) == 0
    info = orjson.loads(capsys.readouterr().out)
    assert info["index_snapshot"].startswith("damaged") and "rebuilt" in info["index_snapshot"]
    assert main(["store", "info", "--state", str(state)]) == 0  # the snapshot its close wrote is whole
    assert orjson.loads(capsys.readouterr().out)["index_snapshot"] == "loaded"


def test_a_store_that_cannot_be_written_names_the_fix():
    """An operator review: a read-only state directory ended in RocksDB's line alone. (As root no
    directory is read-only here, so the error is RocksDB's own text, as rocksdict raises it.)"""
    from streamdedup.store.errors import StoreError, store_error

    for cause in ("Read-only file system", "Permission denied"):
        err = store_error(Exception(f"IO error: While open a file for appending: /st/000008.log: {cause}"), "/st")
        assert isinstance(err, StoreError) and "/st cannot be written" in str(err) and "--state" in str(err)
    assert store_error(Exception("IO error: No such file or directory"), "/st") is None
