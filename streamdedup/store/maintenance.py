"""The `streamdedup store` command: a store's counts, and pages forgotten by id or by time.

`streamdedup store`: a store's counts, pages forgotten by id or by time, on one store or on a
worker's state folder (one store a partition: `pages-0`, `dedup.index-3`, ...).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from streamdedup.store.errors import StoreError


def partition_stores(state: Path) -> list[Path]:
    """The stores a worker keeps in its state folder (its subfolders holding a RocksDB database), by name.

    None if `state` is itself a store or holds none."""
    if not state.is_dir() or (state / "CURRENT").exists():
        return []
    return sorted(child for child in state.iterdir() if child.is_dir() and (child / "CURRENT").exists())


def store_info(state: Path) -> dict[str, Any]:
    """A store's counts and configuration, or those of each store of a worker's state folder.

    A store's counts and configuration (`SignatureStore.stats`, after a scan that verifies every
    block), or for a worker's state folder the same of each partition's store by its name; a
    partition whose store holds no pages (a fingerprint stage's site templates, a gather stage's
    held pages) or cannot be opened (its worker is running) says so."""
    from streamdedup.store.signature_store import SignatureStore

    partitions = partition_stores(state)
    if not partitions:
        with SignatureStore.open_existing(state) as store:
            return store.stats()
    found: dict[str, Any] = {}
    for path in partitions:
        try:
            with SignatureStore.open_existing(path) as store:
                found[path.name] = store.stats()
        except StoreError as err:
            found[path.name] = {"not_read": str(err)}
    return {"worker_state": str(state), "partitions": found}


def refuse_worker_state(state: Path, action: str) -> None:
    """Raise StoreError naming the partition stores when `state` is a worker's state folder.

    A change is made to one store, with its worker stopped."""
    partitions = partition_stores(state)
    if partitions:
        names = ", ".join(path.name for path in partitions[:4]) + (" ..." if len(partitions) > 4 else "")
        raise StoreError(f"{state} is a worker's state folder (a store a partition: {names}): stop its worker and "
                         f"give `store {action}` --state one of them, e.g. --state {partitions[0]}")


def delete_pages(state: Path, page_ids: list[str]) -> list[str]:
    """Forget these pages; returns the ids the store does not hold."""
    from streamdedup.store.signature_store import SignatureStore

    refuse_worker_state(state, "delete")
    with SignatureStore.open_existing(state) as store:
        return [page_id for page_id in page_ids if not store.delete_page(page_id)]


def expire_pages(state: Path, before: datetime) -> int:
    """Forget pages fetched before `before`; returns how many."""
    from streamdedup.store.signature_store import SignatureStore

    refuse_worker_state(state, "expire")
    with SignatureStore.open_existing(state) as store:
        return store.expire(int(before.timestamp() * 1000))
