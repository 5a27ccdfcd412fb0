"""File mode as a function: deduplicate input files into an output folder, crash-safe.

`dedup_files` is what `streamdedup dedup` runs. The store is opened and checked, and this run's
place in the job decided, before the output folder is touched; each batch's outputs are synced
before the store commits them with the job's progress, so calling it again after a crash
finishes the job with every input record in exactly one output (outputs/job.py).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Generator, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from streamdedup.config import DetectorConfig
from streamdedup.record.readers import RawRecord, check_inputs

if TYPE_CHECKING:
    from streamdedup.outputs.job import Job

STDIN = "-"


@dataclass(frozen=True)
class FileRun:
    """What one `dedup_files` call did.

    `summary` is summary.json's content (None when an unchanged rerun of a finished job had
    nothing to do); `stopped` names the signal (SIGTERM, SIGINT) that ended the run after the batch
    in hand, if one did; `consumed` counts the job's input records read so far; `resumed` says
    which earlier run of the same inputs this one continued ("unfinished" or "finished")."""

    out: Path
    state: Path
    summary: dict[str, Any] | None
    consumed: int
    resumed: str | None = None
    stopped: str | None = None
    # the verdict settings given otherwise than the continued run's records were judged with:
    # (name, the run's, this call's), e.g. ("max_new_share", "0.1", "0.5")
    settings_changed: tuple[tuple[str, str, str], ...] = ()


def dedup_files(inputs: Sequence[str | os.PathLike[str]] | str | os.PathLike[str], out: str | os.PathLike[str],
                config: DetectorConfig | None = None, *, state: str | os.PathLike[str] | None = None,
                fresh: bool = False, append: bool = False, batch_wait: float = 1.0, progress: bool = False,
                notify: Callable[[str], None] | None = None) -> FileRun:
    """Deduplicate JSON Lines / WARC files (or "-" for stdin) into `out`, crash-safe.

    `out` receives unique.jsonl, duplicates.jsonl, rejected.jsonl and summary.json; the store
    lives in `state` (default `out/state`: give the same one to later calls so that they find
    duplicates of these pages). Calling it again with the same arguments after a crash finishes
    the job; after it finished, it does nothing. Other inputs into a finished `out` are refused
    (`JobRefused`) unless `append`; `fresh` deletes the store and the outputs first. `notify`
    receives the lines a person would want to see (a resumed job); `progress` shows a bar on a
    terminal. Errors a caller can cause raise ValueError or OSError with one line naming the fix.
    A single path (or "-") is taken as a list of one."""
    from streamdedup.detector import Detector, gc_paused
    from streamdedup.outputs.files import FileSink, remove_outputs, write_summary
    from streamdedup.outputs.job import FileJob, JobRefused, lock_out, remove_store
    from streamdedup.record.batches import batches
    from streamdedup.record.readers import read_inputs
    from streamdedup.record.stream import StopSignals, timed_batches

    config = config or DetectorConfig()
    # a single name iterated would be its letters ("input s does not exist" for "s12.jsonl")
    paths = [os.fspath(inputs)] if isinstance(inputs, (str, os.PathLike)) else [os.fspath(path) for path in inputs]
    check_inputs(paths)  # before anything is made: a wrong path leaves no empty store or --out behind
    out_dir, state_dir = Path(out), Path(state) if state is not None else Path(out) / "state"
    say = notify or (lambda line: None)
    stopped: str | None = None  # the signal that stopped the run after its batch in hand (record/stream.py)
    held = lock_out(out_dir)
    try:
        if fresh:
            remove_store(state_dir)
            remove_outputs(out_dir)
        with Detector(config, state_dir) as detector:
            settings = config.verdict_settings()
            job = FileJob(detector.store, out_dir, state_dir, paths, [config.policy, config.site_policy], settings)
            earlier = list(job.ledger.jobs)
            records = job.records(lambda names, warc: read_inputs(names, config.cleaning.max_content_bytes, warc))
            if earlier and job.job is not earlier[-1] and not append:  # other inputs after a finished job
                records.close()
                raise JobRefused(f"{out_dir} already holds the finished run over {_shown(earlier[-1].inputs)}"
                                 f"{_other(earlier[-1], job.job)}: give them a new --out, or use --fresh to start "
                                 "over (--append adds them to it)")
            changed = job.job.settings_changed(settings) if job.resumed else ()
            if job.resumed == "finished":
                first = next(records, None)
                if first is None:  # an unchanged rerun: its outputs stand as they are
                    return FileRun(out_dir, state_dir, None, job.job.consumed, job.resumed, settings_changed=changed)
                records = chain_records(first, records)
            if job.resumed:
                judged = f" (they were judged with {_judged(changed)})" if changed else ""
                say(f"{out_dir} holds the {job.resumed} run of these inputs: its {job.job.consumed} records are "
                    f"skipped, the rest is processed{judged}")
            records = job.positioned(records)
            job.begin()
            sink = FileSink(out_dir, job.lengths, job.ledger.tally)
            try:
                pages = iter(_progress(records, job.job.consumed) if progress else records)  # one for every batch
                # a file's next batch is read and prepared while this one's outputs sync (the disk's wait,
                # a few ms a file a batch, spent on work that needs no store); stdin's is not read before
                # its turn: a stop would leave it read and not out
                ahead = STDIN not in paths
                with StopSignals() as signals, ThreadPoolExecutor(1, thread_name_prefix="outputs-sync") as syncer:
                    chunks = iter(timed_batches(pages, config.batch_size, config.batch_bytes, batch_wait, signals.stop)
                                  if STDIN in paths else batches(pages, config.batch_size, config.batch_bytes))

                    def prepared() -> tuple[list[RawRecord] | None, list[Any]]:
                        """The next batch and its pages prepared (None, []: none left)."""
                        chunk = next(chunks, None)
                        return chunk, detector.prepare_many(chunk) if chunk is not None else []

                    def decided(this: list[RawRecord], items: list[Any]) -> tuple[list[RawRecord] | None, list[Any]]:
                        """A batch decided, written and committed; the next one prepared (None, []: none, a stop)."""
                        outcomes, batch = detector.decide_staged(items)
                        for outcome in outcomes:
                            sink.write(outcome)
                        following: tuple[list[RawRecord] | None, list[Any]] = (None, [])
                        synced = syncer.submit(sink.sync) if ahead else None
                        try:
                            if ahead and not signals.stop.is_set():
                                following = prepared()
                        finally:  # this batch is committed as before the next one was read (its sync's error stops it)
                            job.stage(batch, this, synced.result() if synced is not None else sink.sync(), sink.tally)
                            detector.commit(batch)
                        if signals.stop.is_set():
                            return None, []
                        return following if ahead else prepared()

                    chunk, items = prepared()
                    while chunk is not None:
                        # the collector held off for a whole batch and the next one's preparation: what the batch
                        # made is freed by reference counts when `decided` returns, not moved to an older generation
                        # by a collection that finds it alive (`gc_paused`)
                        with gc_paused():
                            chunk, items = decided(chunk, items)
                    stopped = signals.received
                if not stopped or STDIN in paths:  # a stream stopped is a stream ended
                    job.finish()
            finally:
                sink.close()
            summary = sink.summary(state=str(state_dir), config=detector.store_fingerprint(), policy=config.policy,
                                   runs=job.runs(), work_per_page=detector.work_per_page(),
                                   store_us_per_page=detector.time_per_page(), extraction=detector.extraction(),
                                   extraction_read_again=detector.fingerprinter.extraction_redone, stopped_by=stopped)
            sink.write_clusters()
            write_summary(out_dir, summary)
    finally:
        os.close(held)
    return FileRun(out_dir, state_dir, summary, job.job.consumed, job.resumed, stopped)


def _progress(records: Iterator[Any], done: int) -> Iterator[Any]:
    """A progress bar on stderr where it is a terminal.

    Not made when quiet: tqdm's import and the multiprocessing lock even a disabled bar makes were
    ~85 ms of the command's start-up."""
    from tqdm import tqdm

    return iter(tqdm(records, unit="page", desc="dedup", disable=None, file=sys.stderr, initial=done))


def chain_records(first: RawRecord, rest: Generator[RawRecord, None, None]) -> Generator[RawRecord, None, None]:
    """`first` then the rest of the generator it came from (closing it closes that one)."""
    yield first
    yield from rest


def _judged(changed: tuple[tuple[str, str, str], ...]) -> str:
    """The settings changed as a resumed run says them: "max_new_share 0.1; the rest with 0.5"."""
    return "; ".join(f"{name} {old}; the rest with {new}" for name, old, new in changed)


def _other(last: Job, this: Job) -> str:
    """What makes this run another job than the finished `last`, as a refusal says it."""
    if last.inputs != this.inputs:
        return "; these are other inputs"
    if last.policy != this.policy:
        return f" with policy {last.policy[0]!r}; this run's is {this.policy[0]!r}"
    if STDIN in this.inputs:
        return "; stdin piped again is another run"
    return "; the inputs changed since (records it read differ now)"


def _shown(inputs: list[str]) -> str:
    """At most three input names, as a message shows them."""
    shown = ", ".join("stdin" if path == STDIN else path for path in inputs[:3])
    return shown + (f" and {len(inputs) - 3} more" if len(inputs) > 3 else "")
