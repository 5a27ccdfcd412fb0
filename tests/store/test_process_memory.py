"""What the stores of one process keep in memory is one amount, split among the stores open."""

import gc

import pytest
from test_signature_store import _add, _open

from streamdedup.clean.template import SiteTemplate
from streamdedup.store import process_memory
from streamdedup.store.process_memory import SharedAmount
from streamdedup.store.signature_store import StoreError
from streamdedup.store.template_store import TemplateStore


class Owner:
    """A holder of a part (a store, a template cache)."""


def test_an_amount_is_split_evenly_between_its_least_and_most():
    amount = SharedAmount(total=12, most=8, least=2)
    owners = [Owner() for _ in range(10)]  # (its part is given back once it is collected)
    first = amount.join(owners[0])
    assert first.limit() == 8  # alone: at most `most`
    second = amount.join(owners[1])
    assert first.limit() == second.limit() == 6
    others = [amount.join(owner) for owner in owners[2:]]
    assert first.limit() == 2  # 12 // 10 = 1, at least `least`
    for share in others:
        share.leave()
    second.leave()
    second.leave()  # a second leave gives back nothing more
    assert amount.holders == 1 and first.limit() == 8
    first.leave()
    assert first.limit() == 8 and amount.holders == 0  # what it last could


def test_a_store_never_closed_gives_its_part_back_once_collected(tmp_path, small_amounts):
    store = _open(tmp_path / "a")
    assert process_memory.DECODED_RECORDS.holders == 1
    del store
    gc.collect()
    assert process_memory.DECODED_RECORDS.holders == 0


def _fill(store, prefix, pages):
    batch = store.batch()
    for i in range(pages):
        _add(store, batch, f"{prefix}{i}", f"{prefix} words of page {i} " + " ".join(f"w{i}x{j}" for j in range(12)), i)
    batch.commit()


@pytest.fixture
def small_amounts(monkeypatch):
    """Records: 8 for the process, 8 a store at most, 2 at least (the real ones: 65,536, 32,768, 256).

    Stores an earlier test left unclosed in a cycle are collected first: collected during the test, each
    would give its part back to the amount counted from 0 here (holders -1 once in CI's order)."""
    gc.collect()
    for name, value in (("total", 8), ("most", 8), ("least", 2), ("holders", 0)):  # (others' stores uncounted)
        monkeypatch.setattr(process_memory.DECODED_RECORDS, name, value)


def test_the_stores_of_a_process_share_one_budget_of_decoded_records(tmp_path, small_amounts):
    """A worker opens a store per partition: the records they keep decoded stay within the process's
    amount however many are open, and a store alone keeps its most again."""
    first = _open(tmp_path / "a")
    _fill(first, "a", 8)
    assert len(first._doc_cache) == 8
    others = [_open(tmp_path / f"p{k}") for k in range(3)]
    for k, store in enumerate(others):
        _fill(store, f"p{k}", 8)
    _fill(first, "b", 4)  # its next write trims it to its part
    assert all(len(s._doc_cache) == 2 for s in [first, *others])  # 8 // 4
    for store in others:
        store.close()
    _fill(first, "c", 8)
    assert len(first._doc_cache) == 8
    first.close()
    assert process_memory.DECODED_RECORDS.holders == 0


def test_a_store_that_fails_to_open_takes_no_part(tmp_path):
    """A RocksDB directory that is not a store is refused, and holds no part of the process's memory."""
    holders = process_memory.DECODED_RECORDS.holders, process_memory.TEMPLATE_BYTES.holders
    foreign = tmp_path / "foreign"
    store = TemplateStore(foreign)  # a plain RocksDB with a key of its own
    store.db[b"other"] = b"data"
    store.close()
    with pytest.raises(StoreError):
        _open(foreign)
    assert (process_memory.DECODED_RECORDS.holders, process_memory.TEMPLATE_BYTES.holders) == holders


def test_every_store_writes_under_the_one_memtable_budget(tmp_path):
    """Both kinds of store write their memtables under the process's write buffer manager."""
    manager = process_memory.write_buffer_manager()
    before = manager.get_usage()
    with _open(tmp_path / "store") as store:
        _fill(store, "m", 200)
        grown = manager.get_usage()
        assert grown > before
        templates = TemplateStore(tmp_path / "templates")
        templates.db[b"k" * 8] = b"v" * 200_000
        assert manager.get_usage() > grown
        templates.close()
    assert manager.get_buffer_size() == process_memory.MEMTABLE_BYTES


def test_a_template_cache_takes_its_part_at_its_first_template(tmp_path):
    """The global topology's index stores keep no templates: they take no part of the budget."""
    before = process_memory.TEMPLATE_BYTES.holders
    with _open(tmp_path / "index") as store:
        _fill(store, "i", 4)  # text pages: no site template written
        assert process_memory.TEMPLATE_BYTES.holders == before
        store.templates.put(1, SiteTemplate())
        assert process_memory.TEMPLATE_BYTES.holders == before + 1
    assert process_memory.TEMPLATE_BYTES.holders == before
