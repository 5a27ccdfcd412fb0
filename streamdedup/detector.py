"""The detector: the pure stages, then the store and the decision engine, for a stream of records.

record -> clean -> tokens -> fingerprints (`Fingerprinter`) -> store lookup -> verdict (the
engine) -> store update. Everything here is glue; the algorithms live in the stage packages as pure
functions. File mode, the local topology, the Faust app and the tests drive this same class.
"""

from __future__ import annotations

import gc
import logging
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from streamdedup.clean.page_urls import document_key
from streamdedup.config import DetectorConfig
from streamdedup.fingerprinter import (
    EXTRACTION_COUNTS,
    Fingerprinted,
    Fingerprinter,
    Outcome,
    steered_record,
)
from streamdedup.own_text import own_text
from streamdedup.record.batches import batches
from streamdedup.record.page import TEXT_URL_SCHEME
from streamdedup.record.readers import RawRecord
from streamdedup.stats.lexicon import load_lexicon
from streamdedup.store.layout import DocRecord
from streamdedup.store.signature_store import SignatureStore, StoreBatch, count_lookup
from streamdedup.verdict.contract import Rejection, Verdict
from streamdedup.verdict.engine import Candidate, decide, digest_of_overlapping, started_digest
from streamdedup.verdict.found_by import FoundBy
from streamdedup.verdict.page_fault import faulted
from streamdedup.verdict.prefilter import CandidateFilter
from streamdedup.verdict.relations import RELATED, judged

log = logging.getLogger(__name__)


class Detector:
    """The pure stages (a `Fingerprinter`) followed by the stateful one.

    Store lookups, the decision engine, the page filed for later pages, in one atomic write per
    batch."""

    # the additive counts of `work` (the rest is a maximum), as the worker exports them
    WORK_COUNTS = ("pages", "candidates_found", "candidates_by_chance", "candidates_verified", "tests_run",
                   "candidates_ruled_out", "pages_over_candidate_limit", "pages_expired")

    def __init__(self, config: DetectorConfig, state_dir: str | Path, *, candidate_filter: bool = True) -> None:
        """A Detector over the store in `state_dir`, made or opened with `config`'s methods.

        `candidate_filter`: run the candidate filter (`verdict.prefilter`) before the engine judges a page,
        as by default; False judges every candidate, for the benches and tests that measure the filter.
        Verdicts are the same either way."""
        self.config = config
        self.fingerprinter = Fingerprinter(config)
        self.methods = self.fingerprinter.methods
        self.prepare = self.fingerprinter.prepare
        self.prepare_many = self.fingerprinter.prepare_many
        self.policy = config.site_policies()
        self.store_config = self.fingerprinter.store_config
        if config.lexicon != "wordfreq":
            keep_lexicon_with_state(Path(config.lexicon), Path(state_dir))
        self.store = SignatureStore(state_dir, self.methods, self.store_config, config.template)
        self.methods_by_name = {m.name: (self.store.tags[m.name], m) for m in self.methods}
        self._encoders = [(self.store.tags[m.name], m.name, m.encode) for m in self.methods]  # `_encoded`'s
        # bounded work, observed: pages judged, candidates found and verified, pages whose candidates were cut
        self.work: Counter[str] = Counter()
        # the stateful stage's nanoseconds by step (`STEPS`), a clock read a step a batch
        self.step_ns: Counter[str] = Counter()
        self.clock = config.retention_clock(self.store.get_meta_int)
        # the batch's candidates that cannot link, told before the engine judges them (`verdict.prefilter`)
        self._filterable = candidate_filter and CandidateFilter.usable(self.methods_by_name)
        self._filter: CandidateFilter | None = None

    def work_per_page(self) -> dict[str, float]:
        """Candidates found and verified per judged page (summary.json; the limits: docs/design.md)."""
        pages = max(1, self.work["pages"])
        return {"pages": self.work["pages"], "candidates_found_mean": round(self.work["candidates_found"] / pages, 2),
                "candidates_verified_mean": round(self.work["candidates_verified"] / pages, 2),
                "tests_run_mean": round(self.work["tests_run"] / pages, 2),  # a candidate's test by one method
                # of those verified, those the engine's first tests tell cannot link, before it judges the rest
                "candidates_ruled_out_mean": round(self.work["candidates_ruled_out"] / pages, 2),
                "candidates_by_chance_mean": round(self.work["candidates_by_chance"] / pages, 2),
                "candidates_found_max": self.work["max_candidates_found"],
                "pages_over_candidate_limit": self.work["pages_over_candidate_limit"],
                "pages_expired": self.work["pages_expired"]}  # removed by retention after their batches

    # the steps of the stateful stage, in order: the site's template taken off, the signatures
    # encoded as records keep them, the index names made, the batch's lookups (`StoreBatch.stage`),
    # each page's candidates verified, judged and filed, the batch's atomic write (page records,
    # RocksDB, the in-memory index), and the pages retention removes after it
    STEPS = ("template", "signatures", "index_names", "lookups", "verdicts", "commit", "expire")

    def time_per_page(self) -> dict[str, float]:
        """Microseconds a judged page by step of the stateful stage (`STEPS`; summary.json's `store_us_per_page`).

        Where a store's time goes, told by the run itself."""
        pages = max(1, self.work["pages"])
        return {step: round(self.step_ns[step] / 1000 / pages, 2) for step in self.STEPS}

    def extraction(self) -> dict[str, int]:
        """How the pages were read (summary.json's `extraction`: `fingerprinter.EXTRACTION_COUNTS`)."""
        return {kind: self.fingerprinter.extraction[kind] for kind in EXTRACTION_COUNTS}

    def store_fingerprint(self) -> dict[str, str]:
        """What signatures depend on; the store refuses to mix values built with others."""
        return dict(self.fingerprinter.signature_config)

    def close(self) -> None:
        """Close the store (a clean close also writes the index snapshot)."""
        self.store.close()

    def __enter__(self) -> Detector:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the pipeline ----------------------------------------------------------------------
    def run(self, records: Iterable[RawRecord]) -> Iterator[Outcome]:
        """Process a stream in batches (`record.batches`); each batch is one atomic store write."""
        for batch in batches(records, self.config.batch_size, self.config.batch_bytes):
            yield from self.process_batch(batch)

    def process_batch(self, raws: list[RawRecord]) -> list[Outcome]:
        """Prepare, decide and record a batch of raw records: one outcome each, in order."""
        return self.decide_batch(self.prepare_many(raws))

    def decide_batch(self, items: list[Fingerprinted | Outcome]) -> list[Outcome]:
        """The stateful stage: look up, decide and record each page; one atomic store write."""
        outcomes, batch = self.decide_staged(items)
        self.commit(batch)
        return outcomes

    def decide_staged(self, items: list[Fingerprinted | Outcome]) -> tuple[list[Outcome], StoreBatch]:
        """Decide a batch, leaving its store changes staged.

        A runtime adds what else must be written atomically with them (e.g. input offsets) and calls
        `commit`."""
        with gc_paused():
            return self._decide_staged(items)

    def _decide_staged(self, items: list[Fingerprinted | Outcome]) -> tuple[list[Outcome], StoreBatch]:
        clock, steps = time.perf_counter_ns, self.step_ns
        started = clock()
        batch = self.store.batch()
        now_ms = int(time.time() * 1000)
        if self.config.template is not None:  # in order: each page sees the template its site's earlier pages left
            items = [own_text(item, batch.template(item.template_hash), self.fingerprinter, self.config.template)
                     if isinstance(item, Fingerprinted) and not item.page.url.startswith(TEXT_URL_SCHEME) else item
                     for item in items]
        pages = [item for item in items if isinstance(item, Fingerprinted)]
        steps["template"] += (done := clock()) - started
        encoded = [self._encoded(fp) for fp in pages]
        steps["signatures"] += (started := clock()) - done
        names, ends = self.store.index_name_ints_of_records(encoded)
        steps["index_names"] += (done := clock()) - started
        # the names that can find a page
        shared = batch.stage(names, ends, [fp.page.id for fp in pages], self.store.words_of(encoded))
        steps["lookups"] += (started := clock()) - done
        self._filter = (CandidateFilter(self.methods_by_name, self.policy, encoded, batch.records_read())
                        if self._filterable and any(shared) else None)
        staged = iter(enumerate(zip(encoded, shared, strict=True)))  # `pages` are the Fingerprinted `items`, in order
        outcomes = [item if isinstance(item, Outcome) else self._decide_one(batch, now_ms, item, *next(staged))
                    for item in items]
        self.clock.stage(batch.set_meta)
        steps["verdicts"] += clock() - started
        return outcomes, batch

    def commit(self, batch: StoreBatch) -> None:
        """Write a decided batch to the store in one atomic write, then expire pages past the retention."""
        clock, steps = time.perf_counter_ns, self.step_ns
        started = clock()
        batch.commit()
        steps["commit"] += (done := clock()) - started
        self.work["pages_expired"] += self.store.expire_after_commit(self.clock.expire_before())
        steps["expire"] += clock() - done

    def discard(self) -> None:
        """Forget staged decisions (their batch is dropped): reload what the store holds."""
        self.clock = self.config.retention_clock(self.store.get_meta_int)

    def _encoded(self, fp: Fingerprinted) -> dict[int, bytes]:
        """The page's signatures as its record stores them, by method tag.

        The batch's index names are made from these at once, as the store's rebuild makes them."""
        signatures = fp.signatures
        return {tag: encode(sig) for tag, name, encode in self._encoders if (sig := signatures.get(name)) is not None}

    def _decide_one(self, batch: StoreBatch, now_ms: int, fp: Fingerprinted, page: int,
                    staged: tuple[dict[int, bytes], list[bytes]]) -> Outcome:
        """A staged page's outcome.

        `page`: its number in the batch; `staged`: its encoded signatures and shared names
        (`StoreBatch.stage`)."""
        signatures, names = staged
        if batch.seq_for(fp.page.id) is not None:
            rejection = Rejection.repeated_id(fp.page.id, fp.origin)
            return Outcome(fp.record, rejection.as_dict(), fp.origin, line=fp.line)
        clock = self.clock
        marks = clock.page_ms, clock.arrival_ms
        stamp = clock.stamp(fp.page.event_time_ms, fp.arrival_ms, now_ms)
        verdict = self._decide_and_record(fp, batch, stamp.event_ms, signatures, page, names)
        if isinstance(verdict, Rejection):  # its judging failed: nothing of it kept, the clock as it was
            clock.page_ms, clock.arrival_ms = marks
            return Outcome(fp.record, verdict.as_dict(), fp.origin, line=fp.line)
        dedup = verdict.as_dict()
        if stamp.note:  # as the verdict's own `time_note` renders (the engine's verdicts have none)
            dedup["time_note"] = stamp.note
            verdict = verdict._replace(time_note=stamp.note)
        if not stamp.trusted and fp.place is not None:  # an undated page: where it came, which orders its story
            dedup["arrival"] = list(fp.place)
        return Outcome(fp.record, dedup, fp.origin, verdict, fp.line)

    def _decide_and_record(self, fp: Fingerprinted, batch: StoreBatch, event_ms: int, signatures: dict[int, bytes],
                           page: int, names: list[bytes]) -> Verdict | Rejection:
        """Verified candidates -> policy -> verdict (the engine).

        Then the page is filed for later pages (`page`: its number in the staged batch, `names`: its
        shared names, `StoreBatch.stage`). Nothing is written before the verdict: a page whose judging
        raises (a bug) is a `processing_error` rejection, filed nowhere (`verdict.page_fault`)."""
        document, steered = document_key(fp.page.url), steered_record(fp, self.methods)
        work = self.work
        work["pages"] += 1
        try:
            if names:
                candidates = self._candidates(fp, batch, event_ms, page, names, document, steered)
            else:  # no key shared with a stored page or another of the batch, or only by chance (`StoreBatch.stage`)
                candidates = []
                if by_chance := batch.chance_only(page):
                    count_lookup(work, by_chance, by_chance, 0)
            verdict = decide(fp.page.id, candidates, fp.text_cut)
        except Exception as err:  # noqa: BLE001 - one page's bug must not stop its batch (at every replay)
            if (rejection := faulted(err, fp.page.id, fp.origin)) is None:
                raise  # the store's or the machine's: the run stops, the batch is retried
            return rejection
        doc = DocRecord(batch.next_seq(), fp.page.id, event_ms, verdict.cluster_id, verdict.duplicate_of or "",
                        signatures, fp.site_hash, document=document, steered=steered,
                        overlapping=bool(candidates) and digest_of_overlapping(fp.page.id, candidates, verdict),
                        digest=bool(candidates) and (started_digest(fp.page.id, candidates, verdict) or any(
                            c.digest and c.root_id == verdict.cluster_id for c in candidates)))
        batch.add_staged(doc, page, names, displaces=not verdict.duplicate_of)
        if verdict.merged_clusters:  # later pages see these clusters as one story (`StoreBatch.story_of`)
            batch.merge(verdict.merged_clusters, verdict.cluster_id)
        if self._filter is not None:
            self._filter.filed(page, doc)
        return verdict

    def _candidates(self, fp: Fingerprinted, batch: StoreBatch, event_ms: int, page: int, names: list[bytes],
                    document: int, steered: bytes) -> list[Candidate]:
        """Every stored page sharing an index key with this one, in its retention window, judged by the engine.

        Every stored page sharing any index key with this one and inside its retention window,
        verified and judged by the engine (`relations.judged`). (`page`: its number in the staged batch.)"""
        work = self.work
        answered = batch.candidates(names)
        if not answered:  # the common case: no stored page shares a key
            return []
        tags = self.store.tags
        mine = {tags[m.name]: sig for m in self.methods if (sig := fp.signatures.get(m.name)) is not None}
        # found only by SimHash's short keys: chance collisions are dropped unjudged
        seqs = batch.without_chance(answered, mine, page) if batch.unvouched else answered
        count_lookup(work, batch.last_found, len(answered), len(seqs))
        if not seqs:
            return []
        found_by = FoundBy(batch.found_by(), self.store.unfiled_bounds)
        measured = None  # MinHash's test and the new shares, where the filter ran them (not run again)
        if self._filter is not None:  # those that cannot link are not judged (`verdict.prefilter`)
            verified = len(seqs)
            seqs, measured = self._filter.linkable(seqs, mine, found_by, work)
            work["candidates_ruled_out"] += verified - len(seqs)
            if not seqs:
                return []
        record = DocRecord(0, fp.page.id, event_ms, "", site=fp.site_hash, document=document, steered=steered)
        found: list[Candidate] = []
        for link in judged(seqs, batch.docs_of, self.policy, self.methods_by_name, record, mine, fp.template_known,
                           self.clock.oldest_kept(event_ms), found_by, work, measured):
            doc = link.doc
            # the cluster's first page orders the clusters; one expired or deleted is older than any stored
            root_seq = link.seq if doc.cluster_id == doc.page_id else batch.seq_for(doc.cluster_id)
            found.append(Candidate(link.seq, doc.page_id, link.rule, link.similarity,
                                   -1 if root_seq is None else root_seq, doc.cluster_id, link.relation,
                                   link.new_share, link.their_new_share, link.new_paragraph, doc.site == fp.site_hash,
                                   digest=doc.digest))
        return with_stories(found, batch)


# the asks of one cluster's story a page makes (`with_stories`), each reading at most `MAX_MERGE_HOPS`
# records from where the last stopped: a chain of merges up to 4 x 16 long is read whole at once
STORY_ASKS = 4


def with_stories(found: list[Candidate], batch: StoreBatch) -> list[Candidate]:
    """The candidates, those the page may join given their clusters' stories where they are of several clusters.

    Only then does the engine ask (`engine.joined_roots`: is a page holding pages of several clusters a
    digest of several stories?), so most pages read no record for it. A story is asked again from where
    the last ask stopped (`STORY_ASKS`): a first ask on a chain longer than `MAX_MERGE_HOPS` named a
    cluster in the chain, another story to the digest rule. With each, whether its cluster is a
    digest's (`StoreBatch.digest`), of overlapping stories (`StoreBatch.overlapping`): the record of its first page;
    a digest's where any candidate's own record says so (`Candidate.digest`: a digest that joined a page of its
    site, or a page after it in its cluster), as the global topology reads each match's mark."""
    roots = {c.root_id for c in found if c.relation != RELATED}
    own = {c.root_id for c in found if c.digest}  # each candidate's own mark, its cluster's
    if len(roots) <= 1:
        return [replace(c, digest=c.root_id in own) for c in found] if own else found
    stories = {root: batch.story_of(root) for root in sorted(roots)}
    for _ in range(STORY_ASKS - 1):  # an ask stops after MAX_MERGE_HOPS records, leaving the chain shorter
        again = {root: batch.story_of(story) for root, story in stories.items()}
        if again == stories:  # every chain read to its end (its end's record read again: cached in the batch)
            break
        stories = again
    digests = own | {root for root in roots if batch.digest(root)}  # digests' clusters (`started_digest`)
    marked = {root for root in digests if batch.overlapping(root)}  # ... of overlapping stories
    return [c if c.relation == RELATED else replace(c, story_id=stories[c.root_id], overlapping=c.root_id in marked,
                                                    digest=c.root_id in digests) for c in found]


@contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cyclic collector held off for the span of a batch (and left as it was found).

    A batch makes a few dozen objects a page that live until it ends; collections in the middle of
    it find them alive and move them to the oldest generation, whose growth starts full collections
    of every object the process holds (~0.2 s at a time in bench/store.py, two a window of 25,600
    pages). Held off, the collection after the batch finds them freed by their reference counts.
    Nothing is lost: the collector counts the allocations all the same and runs at the next one
    after."""
    if not gc.isenabled():  # someone else holds it off (another batch, a caller): theirs to restore
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def keep_lexicon_with_state(lexicon: Path, state_dir: Path) -> None:
    """A copy of the lexicon the signatures were built with lives beside them."""
    import shutil

    state_dir.mkdir(parents=True, exist_ok=True)
    target = state_dir / f"lexicon-{load_lexicon(str(lexicon)).version}.json.gz"
    if not target.exists():
        shutil.copyfile(lexicon, target)
