"""A page whose judging raised: its `processing_error` dead letter, or the error that must stop the run.

The engine is pure up to the point where a page is filed (`Detector._decide_and_record`, the global
topology's `IndexPartition.answer`): what a page's candidates are to it and its verdict are computed
before anything of it is written to the batch, the index or the clusters. So a bug that raises there for
one page (an IndexError in `line_places.counted_new` on two one-line texts) costs that page alone: it
goes to the dead letters with the error named, nothing of it filed, and the others of its batch are judged
as usual. A replay meets the same page in the same state and fails the same way, so file mode's resume, a
worker's restart and an exactly-once retry give the same outputs; without this the page stopped its batch
at every replay (a stuck partition, a lost `add_many`, a `dedup` with no outputs).

Not a page's fault, and raised again to stop the run as before: an error the process cannot go on after
(KeyboardInterrupt, SystemExit: not `Exception`s, never caught; MemoryError), and the store's: its
`StoreError`s, an OSError, and RocksDB's own errors, which rocksdict raises as plain `Exception`s ("IO
error: ...", "Corruption: ..."). Those are the machine's, not the page's: a worker must stop and retry the
batch (the store and the offsets uncommitted), and a page dead-lettered for a full disk would be lost."""

from __future__ import annotations

import logging

from streamdedup.record.rejection import Reason
from streamdedup.store.errors import StoreError, store_error
from streamdedup.verdict.contract import Rejection

log = logging.getLogger(__name__)

# errors raised while a page is judged that are the machine's or the store's, not the page's (module doc)
STOPS_THE_RUN: tuple[type[BaseException], ...] = (MemoryError, OSError, StoreError)


def page_fault(err: Exception) -> bool:
    """Whether an error raised while a page was judged is the page's (a bug its data met), not the run's."""
    return not (isinstance(err, STOPS_THE_RUN) or type(err) is Exception or store_error(err) is not None)


def fault_detail(err: Exception) -> str:
    """The dead letter's detail: the error's type and message."""
    return f"judging it raised {type(err).__name__}: {err}"


def faulted(err: Exception, page_id: str, origin: str) -> Rejection | None:
    """The `processing_error` rejection of a page whose judging raised `err`, logged once with its traceback.

    None if `err` is not the page's fault (`page_fault`): the caller raises it again."""
    if not page_fault(err):
        return None
    log.error("judging page %s (%s) failed: it goes to the rejected output as %s", page_id, origin,
              Reason.PROCESSING_ERROR.value, exc_info=err)
    return Rejection(Reason.PROCESSING_ERROR.value, fault_detail(err), origin, page_id)
