"""Which index names a page is filed under: its methods' keys named by tag, and its id's name.

A page's keys are recomputed from its signatures (`index_keys`: the reverse index), named 6 bytes
each by method tag (`index_names`, `layout.index_names`), or as 48-bit integers for a whole batch
of pages at once (`index_name_ints_of_records`). A stored page is filed under all of them but
those its record names as not filed (`filed_names`, `DocRecord.unfiled`), and under its id.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeAlias, cast

import numpy as np

from streamdedup.fingerprints.base import FingerprintMethod
from streamdedup.store import layout
from streamdedup.store.index_kernels import name_ints
from streamdedup.store.layout import DocRecord

Methods: TypeAlias = "Mapping[int, FingerprintMethod[Any]]"  # a store's methods by tag


def index_keys(methods: Methods, doc: DocRecord) -> dict[int, list[bytes]]:
    """The reverse index: every key the page is filed under, recomputed from its signatures."""
    keys = {}
    for tag, data in doc.signatures.items():
        method = methods[tag]
        keys[tag] = method.index_keys(method.decode(data))
    return keys


def index_names(keys: Mapping[int, list[bytes]]) -> dict[int, list[bytes]]:
    """Index keys as the index names them (tag + 5 bytes), by method tag."""
    return {tag: layout.index_names(tag, tag_keys) for tag, tag_keys in keys.items()}


def filed_names(methods: Methods, doc: DocRecord) -> list[bytes]:
    """The index names a stored page is filed under.

    Its id's, and its keys' but those its record names as not filed (`DocRecord.unfiled`: places in
    the sorted names)."""
    keys = sorted({n for tag_names in index_names(index_keys(methods, doc)).values() for n in tag_names})
    if doc.unfiled:
        skipped = set(doc.unfiled)
        keys = [name for i, name in enumerate(keys) if i not in skipped]
    keys.append(layout.page_id_key(doc.page_id))
    return keys


def seq_with_id(page_id: str, value: bytes | None, doc: Callable[[int], DocRecord | None]) -> int | None:
    """The page with this id among those with its id hash.

    `value`: the postings of its id's name; a hash collision is told apart by the DocRecord, which holds the
    id itself."""
    for seq in reversed(layout.seqs_from(value)):
        record = doc(seq)
        if record is not None and record.page_id == page_id:
            return seq
    return None


def index_name_ints_of_records(methods: Methods, pages: Sequence[Mapping[int, bytes]]) -> tuple[np.ndarray, list[int]]:
    """Each page's index names, as 48-bit integers back to back, and where each page's end.

    Each page's index names (`index_names` of its `index_keys`, every method's, by method in
    the order its signatures come) from its encoded signatures by tag, as 48-bit integers
    (`index_kernels.name_ints`): every page's names back to back in one array, and where each
    page's end (`StoreBatch.stage`). Each method's keys of all the pages are made in one call
    where it offers one (`index_key_rows`, as the rebuild after a crash makes them)."""
    rows_of: dict[int, Sequence[int]] = {}
    first = pages[0].keys() if pages else {}.keys()
    if all(signatures.keys() == first for signatures in pages):  # every page signed by the same methods
        rows_of = dict.fromkeys(first, range(len(pages)))
    else:
        for i, signatures in enumerate(pages):
            for tag in signatures:
                cast(list[int], rows_of.setdefault(tag, [])).append(i)
    if not rows_of:
        return np.zeros(0, dtype=np.uint64), [0] * len(pages)
    named: list[np.ndarray] = []
    owners: list[np.ndarray] = []
    for tag, rows in rows_of.items():
        names, counts = key_name_ints(tag, methods[tag], [pages[i][tag] for i in rows])
        named.append(names)
        owners.append(np.repeat(np.asarray(rows, dtype=np.int64), counts))
    owner = np.concatenate(owners)
    order = np.argsort(owner, kind="stable")  # by page, each page's methods in order
    ends = np.cumsum(np.bincount(owner, minlength=len(pages))).tolist()
    return np.concatenate(named)[order], ends


def key_name_ints(tag: int, method: FingerprintMethod[Any], encoded: Sequence[bytes]) -> tuple[np.ndarray, Any]:
    """The index names of one method's keys of these encoded signatures, as 48-bit integers.

    The index names of these encoded signatures' keys (one method's, tag `tag`), as 48-bit
    integers (`memory_index.name_ints`), each signature's in `index_keys` order, and how many each
    has: in one call where the method offers `index_key_rows`, else signature by signature."""
    key_rows = method.index_key_rows(encoded)
    if key_rows is not None:
        keys_of, counts = key_rows
        return layout.name_ints_of_keys(tag, keys_of), counts
    keys = [method.index_keys(method.decode(data)) for data in encoded]
    return name_ints(layout.index_names(tag, [k for page_keys in keys for k in page_keys])), [len(ks) for ks in keys]
