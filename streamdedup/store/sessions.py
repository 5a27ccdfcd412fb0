"""The store's count of the sessions that numbered their records: file-mode jobs and `Deduplicator`s.

A page without an id or a usable fetch time gets its id from its url and its place in its input
(`record.page.derive_page_id`): its session's number and its number in the session. Every job of
`streamdedup dedup` and every `Deduplicator` that writes into a store takes the store's next number,
so places, and so those ids, are unique across all the runs that share the store, whatever their
--out; a job keeps its number in its ledger, so a rerun after a crash gives each record the id it
had (outputs/job.py). A new store's first session is number 1.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from streamdedup.store.batch import StoreBatch
    from streamdedup.store.signature_store import SignatureStore

SESSIONS = "sessions"  # meta: the highest number a session of the store has taken (none: 0)


def last_session(store: SignatureStore) -> int:
    """The highest number a session of this store has taken (0: none yet, or a store of an earlier version)."""
    return store.get_meta_int(SESSIONS, 0)


def count_session(batch: StoreBatch, number: int) -> None:
    """Record, with the batch's commit, that a session took `number` (the highest so far)."""
    batch.set_meta(SESSIONS, str(number).encode())


def take_session(store: SignatureStore) -> int:
    """The next number, committed now: the session's for as long as it lives."""
    number = last_session(store) + 1
    batch = store.batch()
    count_session(batch, number)
    batch.commit()
    return number
