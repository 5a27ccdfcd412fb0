"""File mode's job ledger.

After a crash, rerunning the same `streamdedup dedup` command finishes the job with every input
record exactly once across unique/duplicates/rejected.jsonl.

Per batch, the outputs are appended and synced (`FileSink.sync`), then the store batch is
committed with this ledger (records consumed, each output file's committed length, the summary's
counts) in the same RocksDB WriteBatch. The store therefore never holds a page whose verdict is
not on disk, and bytes beyond the recorded lengths are outputs of a batch the store never saw.
A rerun cuts them off, skips the records already consumed (checked: their hash must match) and
goes on. The ledger of an --out lives in the store it was deduplicated against, under a key the
--out folder names in its `.streamdedup-job` file (written before the job's first commit): either
folder may move, alone or with the other (off a full disk), and the rerun still finds its job.
Outputs of a version before that file was written are found under the path of --out relative to
--state, or else by the one ledger of the store whose committed lengths their files hold.

What a run does, by the ledger of its --out:
- none: a new job. --out must not hold outputs already (they would be of a run this store never
  saw): use another --out, or --fresh.
- last job unfinished: the same inputs (paths and policy; the consumed records must hash the same)
  resume it; anything else is refused, outputs untouched: finish it, or --fresh.
- last job finished, same input files: its records are skipped (they must hash the same) and
  records beyond them (a file that grew) join it; an unchanged rerun writes nothing new.
- last job finished, other inputs (other files, changed files, a policy, or stdin): a new job
  appended after the earlier outputs; summary.json counts both. Pages the store already holds
  come out as duplicate_id rejections; nothing earlier is overwritten.
stdin ('-') cannot be re-read: an unfinished stdin job resumes only when the same stream is piped
again (its consumed part is checked by hash); after a finished one, stdin is a new job.
"""

from __future__ import annotations

import dataclasses
import errno
import fcntl
import os
import shutil
import uuid
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import xxhash

from streamdedup.outputs.files import FILES, Tally, check_lengths, existing_outputs, sync_directory
from streamdedup.record.readers import WARC_RECORDS, RawRecord
from streamdedup.store.sessions import count_session, last_session
from streamdedup.store.signature_store import SignatureStore, StoreBatch, foreign_files

# 2: a job keeps which WARC records it reads (`Job.warc_records`); 3: its number in the store (`Job.number`)
LEDGER_VERSION = 3
STDIN = "-"
JOB_FILE = ".streamdedup-job"  # in --out: the store's meta key of its ledger
_JOB_KEY = "file_job:"
Records = Generator[RawRecord, None, None]


class JobRefused(ValueError):
    """This run cannot proceed without losing or mixing outputs; the message names the way out."""


@dataclass
class Job:
    """One command's run over its inputs, possibly spread over several processes (crashes)."""

    inputs: list[str]  # absolute paths, or '-'
    policy: list[str]
    consumed: int = 0
    digest: str = ""  # chained hash of the consumed records
    done: bool = False
    # which WARC records its reader reads (`readers.WARC_RECORDS`), kept so that a rerun reads its
    # inputs' records as the job did: a job of a version that read responses only has none (1)
    warc_records: int = 1
    # its number among the jobs and sessions of its store (`store.sessions`), in its undated pages'
    # ids; None: a job of a ledger before version 3, numbered by its place in its ledger as it was
    number: int | None = None
    # the verdict settings it was judged with (`DetectorConfig.verdict_settings`); {}: a job of a
    # version that kept none. Not part of its identity: a rerun under others continues it and says so
    settings: dict[str, str] = field(default_factory=dict)

    def settings_changed(self, settings: dict[str, str]) -> tuple[tuple[str, str, str], ...]:
        """The verdict settings `settings` gives otherwise than this job was judged with: (name, its, given)."""
        return tuple((name, self.settings[name], value) for name, value in settings.items()
                     if name in self.settings and self.settings[name] != value)

    def same_command(self, other: Job) -> bool:
        """Whether the other job ran on the same inputs under the same policy (so this one continues it)."""
        return self.inputs == other.inputs and self.policy == other.policy


@dataclass
class Ledger:
    """What has been written to one --out: the files' committed lengths, the counts, the jobs."""

    lengths: dict[str, int] = field(default_factory=lambda: dict.fromkeys(FILES, 0))
    tally: Tally = field(default_factory=Tally)
    jobs: list[Job] = field(default_factory=list)

    def encode(self) -> bytes:
        """The ledger as the JSON bytes stored with the --out's store."""
        return orjson.dumps({"version": LEDGER_VERSION, "lengths": self.lengths, "tally": self.tally.to_json(),
                             "jobs": [dataclasses.asdict(job) for job in self.jobs]})

    @classmethod
    def decode(cls, raw: bytes) -> Ledger:
        """The ledger `encode` wrote; one of a later version is refused with the fix."""
        data = orjson.loads(raw)
        version = int(data.get("version", 1))
        if version > LEDGER_VERSION or any(job.get("warc_records", 1) > WARC_RECORDS for job in data["jobs"]):
            raise JobRefused(f"this --out was written by a later streamdedup (its job ledger is version {version}; "
                             f"this one reads up to {LEDGER_VERSION}): run that version on it, or use --fresh")
        known = {f.name for f in dataclasses.fields(Job)}
        jobs = [Job(**{k: v for k, v in job.items() if k in known}) for job in data["jobs"]]
        return cls(dict(data["lengths"]), Tally.from_json(data["tally"]), jobs)


def record_digest(previous: str, raw: RawRecord) -> str:
    """Chain one record into the digest of the records before it (its content, not its origin)."""
    hasher = xxhash.xxh3_128(bytes.fromhex(previous))
    for item in dataclasses.fields(raw):
        if item.name not in ("origin", "arrival_ms", "position", "place"):
            _feed(hasher, getattr(raw, item.name))
    return hasher.hexdigest()


def _feed(hasher: xxhash.xxh3_128, value: Any) -> None:
    if isinstance(value, dict):
        hasher.update(b"{")
        for key in sorted(value):
            _feed(hasher, key)
            _feed(hasher, value[key])
        hasher.update(b"}")
        return
    data = value if isinstance(value, bytes) else repr(value).encode("utf-8", "surrogatepass")
    hasher.update(len(data).to_bytes(8, "little"))
    hasher.update(data)


class FileJob:
    """The ledger of one --out in one store: where this run starts, and its progress per batch."""

    def __init__(self, store: SignatureStore, out: Path, state: Path, inputs: list[str],
                 policy: list[str], settings: dict[str, str] | None = None) -> None:
        self.store = store
        self.out = out
        self.key, raw = self._find_ledger(store, out, state)
        self.ledger = Ledger.decode(raw) if raw is not None else Ledger()
        for path in inputs:
            if path != STDIN and not Path(path).is_file():
                raise FileNotFoundError(f"input {path} is not a file")
        self.job = Job([p if p == STDIN else str(Path(p).resolve()) for p in inputs], policy,
                       warc_records=WARC_RECORDS, settings=dict(settings or {}))
        self.resumed: str | None = None  # "unfinished" or "finished": the job this run continues
        if raw is None and (found := existing_outputs(out)):
            raise JobRefused(f"{out} already holds {', '.join(found)}, from a run that the store at {state} has "
                             "no record of: give --state the store that run used (wherever it moved), or --fresh "
                             "to clear them and the store (another --out would get the pages this store holds "
                             "as duplicate_id)")
        check_lengths(out, self.ledger.lengths)

    @staticmethod
    def _find_ledger(store: SignatureStore, out: Path, state: Path) -> tuple[str, bytes | None]:
        """The meta key of --out's ledger and the ledger, if the store holds it.

        The key its JOB_FILE names; without one (a new --out, or outputs of an earlier version), the
        path of --out relative to --state, else the one ledger whose lengths the files hold, else a
        new key."""
        named = out / JOB_FILE
        if named.exists():
            key = named.read_text(encoding="utf-8").strip()
            if not key.startswith(_JOB_KEY):
                raise JobRefused(f"{named} is not a streamdedup job file: remove it, or use --fresh")
            return key, store.get_meta(key)
        key = _JOB_KEY + os.path.relpath(out.resolve(), state.resolve())
        raw = store.get_meta(key)
        if raw is not None or not existing_outputs(out):
            return (key, raw) if raw is not None else (_JOB_KEY + "id:" + uuid.uuid4().hex, None)
        found = [(name, value) for name, value in store.metas(_JOB_KEY) if _holds(out, Ledger.decode(value).lengths)]
        return found[0] if len(found) == 1 else (key, None)

    @property
    def lengths(self) -> dict[str, int]:
        """Each output file's committed length in bytes (a copy of the ledger's)."""
        return dict(self.ledger.lengths)

    def records(self, read: Callable[[list[str], int], Records]) -> Records:
        """The records this run must process (`read` opens the inputs, reading the WARC records it is told).

        Decides whether it continues the last job or starts a new one, or refuses. A job continued
        reads its inputs as it did (`Job.warc_records`). Nothing is written here."""
        last = self.ledger.jobs[-1] if self.ledger.jobs else None
        new = self.job
        if last is None:
            return self._new_job(read)
        if not last.same_command(new):
            if not last.done:
                raise JobRefused(f"{self.out} holds an unfinished run over {_names(last.inputs)} (policy "
                                 f"{last.policy[0]!r}): rerun that command to finish it, or use --fresh to start over")
            return self._new_job(read)
        if last.done and STDIN in last.inputs:
            return self._new_job(read)
        records = read(last.inputs, last.warc_records)
        if self._consumed_again(records, last):
            self.job, self.resumed = last, ("finished" if last.done else "unfinished")
            return records
        records.close()  # closes the files it opened
        if not last.done:
            source = "stdin" if STDIN in last.inputs else "its inputs"
            raise JobRefused(f"{self.out} holds an unfinished run whose first {last.consumed} records differ from "
                             f"{source} now: give it the same input to finish it, or use --fresh to start over")
        return self._new_job(read)  # the same files, changed: a new job from their start

    def _new_job(self, read: Callable[[list[str], int], Records]) -> Records:
        """Append this run's job to the ledger, numbered after every job the store has seen, and read its inputs.

        After every session the store counted (`store.sessions`), and after the jobs of ledgers of
        an earlier version, which count none: each numbered by its place in its ledger, so at most
        that ledger's count of jobs. The number is committed at `begin`."""
        placed = max((len(orjson.loads(value)["jobs"]) for _, value in self.store.metas(_JOB_KEY)), default=0)
        new = self.job
        new.number = max(last_session(self.store), placed) + 1
        self.ledger.jobs.append(new)
        return read(new.inputs, new.warc_records)

    def positioned(self, records: Records) -> Records:
        """The records with their place in this job (`RawRecord.position`).

        The job's number in the store (`Job.number`; of an earlier version's job, its place in its
        ledger) and the record's number in the job, counted on from the records it consumed before
        (a rerun after a crash gives each record the place, so the page id, it had; any other job,
        into this --out or another one, new places: an undated page is judged again)."""
        number = self.job.number
        if number is None:
            number = next(i for i, job in enumerate(self.ledger.jobs, start=1) if job is self.job)
        for count, raw in enumerate(records, start=self.job.consumed + 1):
            raw.position, raw.place = f"job {number}:#{count}", (number, count)
            yield raw

    @staticmethod
    def _consumed_again(records: Records, job: Job) -> bool:
        """Read the records `job` consumed; true if they are the same (by their chained digest)."""
        digest = ""
        for _ in range(job.consumed):
            raw = next(records, None)
            if raw is None:
                return False
            digest = record_digest(digest, raw)
        return digest == job.digest

    def begin(self) -> None:
        """Commit the job before its first output byte.

        A crash from here on leaves a ledger that says what to cut off (else the next run would find
        outputs no store knows). The --out folder names the ledger's key first (JOB_FILE), synced."""
        named = self.out / JOB_FILE
        if not named.exists() or named.read_text(encoding="utf-8").strip() != self.key:
            written = named.with_suffix(".tmp")
            with open(written, "w", encoding="utf-8") as handle:
                handle.write(self.key + "\n")
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(written, named)
            sync_directory(self.out)
        self.job.done = False
        batch = self.store.batch()
        if self.job.number is not None and self.job.number > last_session(self.store):  # a new job's number
            count_session(batch, self.job.number)
        batch.set_meta(self.key, self.ledger.encode())
        batch.commit()

    def stage(self, batch: StoreBatch, records: list[RawRecord], lengths: dict[str, int], tally: Tally) -> None:
        """Record a batch's progress in its store batch: committed with its pages, atomically."""
        job = self.job
        for raw in records:
            job.digest = record_digest(job.digest, raw)
        job.consumed += len(records)
        self.ledger.lengths = dict(lengths)
        self.ledger.tally = tally
        batch.set_meta(self.key, self.ledger.encode())

    def finish(self) -> None:
        """Every input record is out: mark the job done (a later run with other inputs appends)."""
        self.job.done = True
        self._commit()

    def runs(self) -> list[dict[str, Any]]:
        """The jobs whose outputs --out holds, for summary.json."""
        return [{"inputs": job.inputs, "records": job.consumed, "done": job.done} for job in self.ledger.jobs]

    def _commit(self) -> None:
        batch = self.store.batch()
        batch.set_meta(self.key, self.ledger.encode())
        batch.commit()


def _holds(out: Path, lengths: dict[str, int]) -> bool:
    """Whether --out's files hold a ledger's committed bytes (each at least as long, a line's end at each length).

    The outputs it was written for, found after their store moved."""
    if not any(lengths.values()):
        return False
    for status, length in lengths.items():
        path = out / FILES[status]
        if not length:
            continue
        if not path.exists() or path.stat().st_size < length:
            return False
        with open(path, "rb") as handle:
            handle.seek(length - 1)
            if handle.read(1) != b"\n":
                return False
    return True


def _names(inputs: list[str]) -> str:
    shown = ", ".join("stdin" if p == STDIN else p for p in inputs[:3])
    return shown + (f" and {len(inputs) - 3} more" if len(inputs) > 3 else "")


# -- the out folder and --fresh ----------------------------------------------------------------
def lock_out(out: Path) -> int:
    """Hold --out for this process (two runs appending to one folder would interleave)."""
    if out.exists() and not out.is_dir():
        raise JobRefused(f"--out {out} is a file: give --out a folder (it is created if missing)")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:  # a read-only place, a parent that is a file, /proc: one line with the fix
        raise JobRefused(f"--out {out} cannot be made ({err.strerror or err}): give --out a folder in a place "
                         "you can write") from None
    fd = os.open(out, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as err:
        os.close(fd)
        if err.errno in (errno.EWOULDBLOCK, errno.EACCES):
            raise JobRefused(f"another streamdedup dedup is writing to {out}: wait for it to end") from None
        raise
    return fd


def remove_store(state: Path) -> None:
    """--fresh: delete `state` only if it is a streamdedup store (or empty) that no process holds."""
    if not state.exists():
        return
    if not state.is_dir():
        raise JobRefused(f"--fresh: {state} is not a streamdedup store (not a directory); not deleting it")
    foreign = sorted(foreign_files(os.listdir(state)))
    if foreign:
        raise JobRefused(f"--fresh: {state} is not a streamdedup store (it holds {foreign[0]!r}"
                         f"{f' and {len(foreign) - 1} more' if len(foreign) > 1 else ''}); not deleting it: "
                         "give --state a store or an empty or new directory")
    if (state / "CURRENT").exists() and not _is_streamdedup_store(state):
        raise JobRefused(f"--fresh: {state} is a RocksDB database but not a streamdedup store; not deleting it")
    if (state / "LOCK").exists() and _locked(state / "LOCK"):
        raise JobRefused(f"--fresh: the store at {state} is in use by another process; stop it first")
    shutil.rmtree(state)


def _is_streamdedup_store(state: Path) -> bool:
    """Read-only look for the configuration every streamdedup store records.

    An unreadable, damaged store of RocksDB files only counts as one: --fresh is the way out of it."""
    from rocksdict import AccessType, Options, Rdict

    from streamdedup.store import layout

    try:
        db = Rdict(str(state), options=Options(raw_mode=True), access_type=AccessType.read_only())
    except Exception:  # noqa: BLE001 - damaged: judged by its file names alone
        return True
    try:
        return db.get(layout.meta_key("config")) is not None
    finally:
        db.close()


def _locked(lock_file: Path) -> bool:
    """RocksDB holds its LOCK file with a POSIX record lock while the store is open."""
    fd = os.open(lock_file, os.O_RDWR)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    else:
        fcntl.lockf(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)
