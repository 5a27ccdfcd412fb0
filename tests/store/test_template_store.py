"""The template store's reads (`store/template_store.py`): a damaged block is an error naming the
fix, never a model read without part of its records."""

import random

import pytest

from streamdedup.clean.template import TemplateParams
from streamdedup.store.errors import StoreCorrupt
from streamdedup.store.template_store import TemplateStore, read_template


def test_a_damaged_block_under_a_sites_template_is_one_error_naming_the_fix(tmp_path):
    """A RocksDB iterator stops at a damaged block and says so only in its status: read without
    it, a site's model lost its later deltas (or all of it) silently."""
    params = TemplateParams()
    rng = random.Random(3)
    store = TemplateStore(tmp_path / "t", params)
    pool = [rng.getrandbits(64) for _ in range(2000)]
    for batch in range(12):  # a whole record, then deltas
        for i in range(2):
            store.template(7).learn(f"https://a.example/{batch}/{i}", rng.sample(pool, 30), params)
        store.commit()
    whole = read_template(store.db, 7, params)
    assert whole.pages == 24 and whole.deltas > 0
    store.db.flush()
    store.db.close()
    table = max((tmp_path / "t").glob("*.sst"), key=lambda p: p.stat().st_size)
    data = bytearray(table.read_bytes())
    data[len(data) // 2] ^= 0x10
    table.write_bytes(bytes(data))
    store = TemplateStore(tmp_path / "t", params)
    with pytest.raises(StoreCorrupt, match="damaged.*Corruption.*backup"):
        read_template(store.db, 7, params)
