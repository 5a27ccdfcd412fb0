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
