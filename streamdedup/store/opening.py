"""A store's directory and database: what may stand in it, how RocksDB is opened, the config check.

A new store is made only in an empty or new directory (`prepare_directory`); RocksDB files without
CURRENT are a damaged store. The store records the parameters it was built with and refuses to
mix in signatures made with others (`config_mismatch`), naming the flags that keep it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from rocksdict import BlockBasedOptions, DBCompressionType, Options, Rdict

from streamdedup.fingerprints.registry import parse_description, pinned_setting
from streamdedup.store import layout, process_memory
from streamdedup.store.errors import StoreConfigMismatch, StoreCorrupt, StoreError, damaged, store_error

# 2: postings as values in an index column family, hashed page ids, compact DocRecords; 3: 6-byte index keys;
# 4: the index in memory, rebuilt from the records (which name the keys a page was not filed under)
SCHEMA_VERSION = 4

# Files RocksDB writes in a store directory. Those that hold data (a MANIFEST, tables, a WAL, blobs)
# without a CURRENT file mean a damaged store, never an empty directory.
_ROCKSDB_DATA_FILE = re.compile(r"MANIFEST-\d+|\d+\.(sst|log|blob)")
_ROCKSDB_OTHER_FILE = re.compile(r"IDENTITY|LOCK|LOG(\.old\.\d+)?|OPTIONS-\d+(\.dbtmp)?|rocksdict-config\.json")
_LEXICON_COPY = re.compile(r"lexicon-.+\.json\.gz")  # detector.keep_lexicon_with_state, before the store opens
_SNAPSHOT = "index-snapshot"  # the in-memory index as the store was closed (`SignatureStore.close`)
_WORDS_SNAPSHOT = "words-snapshot"  # and the chance-check words beside it (`SignatureStore.words`)
_SNAPSHOT_FILES = (_SNAPSHOT, _SNAPSHOT + ".tmp", _WORDS_SNAPSHOT, _WORDS_SNAPSHOT + ".tmp")


def foreign_files(names: Iterable[str]) -> list[str]:
    """The names that are neither RocksDB's nor a lexicon copy: a directory holding any is not a store."""
    return [n for n in names if not (_ROCKSDB_DATA_FILE.fullmatch(n) or _ROCKSDB_OTHER_FILE.fullmatch(n)
                                     or n == "CURRENT" or n in _SNAPSHOT_FILES or _LEXICON_COPY.fullmatch(n))]


def params_to_keep(built: Mapping[str, str], wanted: Mapping[str, str]) -> list[str]:
    """The `method.name=value` of each method parameter whose stored value differs from this run's.

    `method.name=value` of each method parameter whose stored value differs from this run's,
    for methods both name (a store built before a default changed: the flags that keep it)."""
    out = []
    for key in sorted(set(built) & set(wanted)):
        if not key.startswith("method."):
            continue
        try:
            name, stored, _ = parse_description(built[key])
            other, asked, _ = parse_description(wanted[key])
        except ValueError:
            continue
        if name == other:
            out += [f"{name}.{k}={v}" for k, v in stored.items() if k != "lexicon" and asked.get(k) != v]
    return out


_EXTRACTOR = re.compile(r"\bextractor=([^,@)]+)")
_FAST_RULES = re.compile(r"\bextractor=(fast@[^,)]+)")


def extractor_to_keep(built: Mapping[str, str], wanted: Mapping[str, str]) -> list[str]:
    """`--extractor NAME` if the store was built with another extractor than this run's (none otherwise).

    Not for `fast` read by other rules (fast@4 against fast@5): no flag gives earlier rules back."""
    stored, asked = (_EXTRACTOR.search(config.get("cleaning", "")) for config in (built, wanted))
    if stored is None or asked is None or stored[1] == asked[1]:
        return []
    return [f"--extractor {stored[1]}"]


def fast_rules_differ(built: Mapping[str, str], wanted: Mapping[str, str]) -> tuple[str, str] | None:
    """The store's and this run's `fast` rules (`fast@9`, `fast@10`) where both read with `fast` by other rules.

    No flag gives earlier rules back (`extractor_to_keep`), so no flag keeps such a store."""
    stored, asked = (_FAST_RULES.search(config.get("cleaning", "")) for config in (built, wanted))
    if stored is None or asked is None or stored[1] == asked[1]:
        return None
    return stored[1], asked[1]


def prepare_directory(path: Path, create: bool = True) -> bool:
    """Whether `path` holds a store.

    A new one is made only in an empty or new directory: RocksDB files without CURRENT are a damaged
    store (a new one over them would forget every page), other files are not ours."""
    if path.exists() and not path.is_dir():
        raise StoreError(f"{path} is a file, not a store directory: give --state a directory")
    if (path / "CURRENT").exists():
        return True
    names = sorted(os.listdir(path)) if path.exists() else []
    data = [n for n in names if _ROCKSDB_DATA_FILE.fullmatch(n)]
    if data:
        raise StoreCorrupt(damaged(f"the store at {path}", f"it has {', '.join(data[:3])} but no CURRENT file"))
    foreign = foreign_files(names)
    if foreign:
        raise StoreError(f"{path} is not a store and not empty (it holds {foreign[0]!r}): a new store is only "
                         "made in an empty or new directory; give --state a store or an empty directory")
    if create:
        path.mkdir(parents=True, exist_ok=True)
    return False



def open_db(path: Path, create: bool) -> Rdict:
    """The store's RocksDB database at `path` (with its index column family), or a StoreError."""
    options = _options()
    options.create_if_missing(create)
    try:
        return Rdict(str(path), options=options, column_families={layout.INDEX_CF: _index_options()})
    except Exception as err:  # noqa: BLE001 - rocksdict raises plain Exceptions
        raise store_error(err, path) or StoreError(f"cannot open the store at {path}: {err}") from None



def _table() -> BlockBasedOptions:
    """Whole-key bloom filters (most lookups miss) and the block cache of every store of the process."""
    table = process_memory.table()
    table.set_bloom_filter(10, False)
    table.set_format_version(5)
    return table


def _options() -> Options:
    """The database and its default column family: lz4 above, zstd at the bottom level (where most bytes live)."""
    options = Options(raw_mode=True)
    options.create_if_missing(True)
    options.create_missing_column_families(True)
    options.set_max_background_jobs(2)
    options.set_block_based_table_factory(_table())
    options.set_compression_type(DBCompressionType.lz4())
    options.set_bottommost_compression_type(DBCompressionType.zstd())
    options.set_level_compaction_dynamic_level_bytes(True)
    process_memory.memtable_options(options)
    return options



def _index_options() -> Options:
    """The index column family.

    6-byte random keys, point lookups that mostly miss, so a whole-key bloom filter in the memtable
    too. (A hashed memtable inserts 3x faster but answers lookups 1.7x slower: lookups are the
    larger half, so the skip list stays.)"""
    options = _options()
    options.set_memtable_whole_key_filtering(True)
    options.set_memtable_prefix_bloom_ratio(0.1)
    options.set_write_buffer_size(32 << 20)
    options.set_max_write_buffer_number(3)
    return options


def config_mismatch(path: Path, built: Mapping[str, str], wanted: Mapping[str, str]) -> StoreConfigMismatch | None:
    """What refuses a store built with the config `built` to a run asking for `wanted`, or None.

    What refuses a store at `path` built with the config `built` to a run asking for `wanted`
    (another schema, or other parameters: the flags that keep it named), None if they agree."""
    if built.get("schema") != wanted.get("schema"):
        return StoreConfigMismatch(
            f"the store at {path} has schema {built.get('schema')!r}; this version of streamdedup reads "
            f"schema {wanted.get('schema')!r} (since 4 the index lives in memory, rebuilt from the page records, "
            "which must name the keys each page was filed under). Build a new store: file mode, rerun the "
            "inputs with a new --state (or --fresh); a worker, move the directory away and it rebuilds its "
            "store from Kafka")
    diffs = [f"  {k}: store has {built.get(k)!r}, this run asks for {wanted.get(k)!r}"
             for k in sorted(set(built) | set(wanted))
             if pinned_setting(k, built.get(k)) != pinned_setting(k, wanted.get(k))]
    if not diffs:
        return None
    head = (f"the store at {path} was built with other parameters:\n" + "\n".join(diffs)
            + "\nSignatures made with different parameters cannot be compared. ")
    rules = fast_rules_differ(built, wanted)
    if rules:  # flags for the other differences would only lead to this refusal again
        return StoreConfigMismatch(head + f"No flag keeps this store: its pages were read by {rules[0]}, this "
                                   f"version reads {rules[1]}; use a new --state directory.")
    keep = extractor_to_keep(built, wanted) + [f"--param {p}" for p in params_to_keep(built, wanted)]
    return StoreConfigMismatch(
        head + "Use a new --state directory, or run with the parameters the store was built with"
        + (f" ({' '.join(keep)}, or the same in --config)." if keep else "."))

