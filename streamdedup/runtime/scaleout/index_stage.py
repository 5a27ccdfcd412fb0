"""One partition of the global index: which pages share a key here, judged by the policy.

Every index key lives in exactly one index partition, so the pages that share a key always meet
in the same place, whichever input partition and worker they came from. The partition keeps a
SignatureStore of the pages with at least one key here (their whole signature record, so a
candidate is verified by every method, as the policy's "simhash+a12" rules need).

Arrival order in a partition is not the global order: two near-duplicates can be in flight at
once. A candidate that is *later* in the global order than the asking page was filed without
seeing it, so it is reported too (`later`), and the stage sends that later page a supplement
(`supplements_of`): its verdict is held until no earlier page can still arrive, or a counted late
match if it is already out. Every pair that shares a key is therefore found by exactly one of its
two pages' answers from that partition, whatever the timing.

In this store `DocRecord.cluster_id` holds the page's global order (hex) and
`DocRecord.duplicate_of` its root: "<order hex> <page id>" of the earliest page of its chain this
partition knows.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from operator import attrgetter
from pathlib import Path
from typing import Any, cast

from streamdedup.fingerprints.base import FingerprintMethod
from streamdedup.fingerprints.one_page_lines import decode_one_page
from streamdedup.fingerprints.registry import signature_config, signature_identity
from streamdedup.fingerprints.wordpairs import ShownLines, WordPairsMethod
from streamdedup.runtime.errors import WorkerStopped
from streamdedup.runtime.group_settings import GroupRecord, as_flags
from streamdedup.runtime.scaleout.messages import Answer, IndexRequest, Match, Supplement
from streamdedup.store.errors import StoreConfigMismatch
from streamdedup.store.layout import DocRecord
from streamdedup.store.retention import RetentionClock
from streamdedup.store.signature_store import SignatureStore, StoreBatch, count_lookup
from streamdedup.verdict.engine import Candidate, as_cut, joined_roots, named_duplicate
from streamdedup.verdict.page_fault import faulted
from streamdedup.verdict.policy import SitePolicy
from streamdedup.verdict.relations import DUPLICATE, Judged, judged

log = logging.getLogger(__name__)


class SignaturesNotComparable(StoreConfigMismatch):
    """An index request made with other signature parameters than the partition's (`check_made_by`)."""


class VerdictSettingsDiffer(WorkerStopped):
    """A live index request from a worker of the group that judges with other verdict settings.

    The verdict settings are the policies, retention and clock skew, compared with this worker's
    (`check_judged_with`)."""


@dataclass(frozen=True)
class Judging:
    """What this worker judges with, its id, its group, and the group's record of its settings.

    What this worker judges with (`DetectorConfig.verdict_settings`), its id, its group, and
    the group's record of its settings (`group_settings.GroupRecordCache.current`: read again when
    asked, at most every few seconds)."""

    settings: Mapping[str, str]
    identity: bytes
    group: str
    group_record: Callable[[], GroupRecord | None]


def supplements_of(answer: Answer) -> list[Supplement]:
    """Tell each later page filed here first that the asker is one of its earlier matches.

    For each page later than the asker that was filed here first: "the asker is one of your
    earlier matches", with the asker's root as this partition knows it (as if filed first)."""
    root_order, root_id = asker_root(answer.order, answer.page_id, answer.earlier)
    return [Supplement(m.page_id, m.order, m.seen_from_the_other(answer.page_id, answer.order, root_order, root_id))
            for m in answer.later]


def asker_root(order: bytes, page_id: str, earlier: Sequence[Match]) -> tuple[bytes, str]:
    """The asking page's root as this partition knows it.

    The earliest root among the earlier matches' clusters it joins (its duplicates' and what it
    supersedes', of several only those it bridges and the named duplicate's: `engine.joined_roots`), else itself."""
    joins = [Candidate(m.order, m.page_id, m.rule, m.similarity, m.root_order, m.root_id, m.relation, m.new_share,
                       m.their_new_share, m.new_paragraph, m.same_site) for m in earlier if m.joins]
    roots = joined_roots(joins, named_duplicate([c for c in sorted(joins, key=attrgetter("order"))
                                                 if c.relation == DUPLICATE]))
    return roots[0] if roots else (order, page_id)


class IndexPartition:
    """One index partition: judges each requested page against the pages filed under its keys here, then files it."""

    def __init__(self, path: Path, methods: Sequence[FingerprintMethod[Any]], policy: SitePolicy,
                 store_config: Mapping[str, str], partition: int, retention_ms: int | None = None,
                 judging: Judging | None = None) -> None:
        self.store = SignatureStore(path, methods, {**store_config, "role": "index"})
        self.judging = judging  # None: requests' verdict settings are not checked
        self.judged_anyway: set[bytes] = set()  # other verdict ids of requests judged here with the group's
        self.signature_config = signature_config(store_config, methods)
        self.identity = signature_identity(self.signature_config)
        self.by_tag = {self.store.tags[m.name]: m for m in methods}
        self.by_name = {m.name: (self.store.tags[m.name], m) for m in methods}
        self.policy = policy
        self.partition = partition
        self.retention_ms = retention_ms
        self.clock = self._load_clock()
        self.batch: StoreBatch | None = None
        # this partition's share of the decide step's work (`Detector.WORK_COUNTS`: a page is judged
        # in every index partition its keys live in)
        self.work: Counter[str] = Counter()
        # its nanoseconds by step, as the Detector's (`Detector.STEPS`): lookups (a batch's keys
        # read at once), verdicts (each request judged and filed), commit and expire
        self.step_ns: Counter[str] = Counter()

    def check_made_by(self, request: IndexRequest, source: str) -> None:
        """Refuse a request whose signatures were made with other parameters than this partition's.

        The request's parameters are its `IndexRequest.made_by`. Filed, its keys would never meet this partition's
        pages and its signatures could not be compared, so every match with it would be lost without a word. This
        happens where a worker of the fleet runs other parameters, or this store was rebuilt from a topic that workers
        with other parameters filed."""
        if request.made_by == self.identity:
            return
        if request.made_by:
            maker = f"a worker whose signatures were made with other parameters (signature id {request.made_by.hex()}; "
            fix = "the workers that filed it (each logs its signature id and parameters at start)"
        else:  # written by a version that named no maker: refused where a signature's layout is not this one's
            odd = sorted(self.by_tag[tag].name if tag in self.by_tag else f"method tag {tag}"
                         for tag, data in request.doc.signatures.items()
                         if tag not in self.by_tag or not self.by_tag[tag].laid_out_as_mine(data))
            if not odd:
                return
            maker = (f"an earlier version of streamdedup under other parameters (its {', '.join(odd)} signature is "
                     "not laid out as this worker's; ")
            fix = ("that version (requests from before 2026-12-02 under its defaults: --param a12.word_bits=64 "
                   "--param minhash.value_bits=16 --param minhash.band_check_bits=0)")
        methods = ", ".join(value for key, value in sorted(self.signature_config.items()) if key.startswith("method."))
        self.store.forget_config_if_empty()  # a store being rebuilt: the filers' parameters may open it next
        raise SignaturesNotComparable(
            f"{source} was filed by {maker}this worker's is {self.identity.hex()}: {methods}), which this index "
            f"partition cannot compare. Run every worker with the parameters of {fix}, or start these parameters "
            "on new internal topics (STREAMDEDUP_TOPIC_INDEX, STREAMDEDUP_TOPIC_PARTS), a new STREAMDEDUP_GROUP_ID "
            "and new store directories (docs/scaleout.md, Settings)")

    def check_judged_with(self, request: IndexRequest, source: str) -> None:
        """Stop this worker on a live request made under other verdict settings if its own are outdated.

        The request's settings are its `IndexRequest.judged_with`; this worker's are outdated when they are no longer
        its group's. Answered here under this worker's, the page's verdict would mix two policies (its other index
        partitions judge it under its maker's), without a word. Its transaction is not committed, so nothing judged
        in it goes out. Which worker is outdated is the group's record's to say (a worker whose
        settings are not the group's refuses to start, `group_settings.agree_on_settings`): after
        `--adopt-settings`, the workers still running the old settings stop here at the first
        request from a new one, and the new ones judge the old ones' requests (made before the
        change, or by a worker that has not stopped yet) with the group's settings and one WARNING
        per verdict id. Requests replayed into a store are not checked (the caller's business)."""
        judging = self.judging
        if judging is None or not request.judged_with or request.judged_with == judging.identity:
            return
        theirs, mine = request.judged_with.hex(), judging.identity.hex()
        group = judging.group_record()
        if group is not None and group.identity == judging.identity:
            if request.judged_with not in self.judged_anyway:
                self.judged_anyway.add(request.judged_with)
                log.warning("index partition %d: requests made under other verdict settings (verdict id %s) than "
                            "group %r's (verdict id %s, generation %d) are judged with the group's: a worker with "
                            "the old settings still runs, or its requests were waiting", self.partition, theirs,
                            judging.group, mine, group.generation)
            return
        settings = ", ".join(f"{key}={value}" for key, value in sorted(judging.settings.items()))
        if group is None:
            now, fix = "the group has no record of its settings", "the same settings"
        else:
            now = (f"the group's settings are now verdict id {group.identity.hex()} (generation {group.generation}, "
                   f"written by {group.written_by!r}: {group.described()})")
            fix = f"the group's settings ({as_flags(group.settings)})"
        raise VerdictSettingsDiffer(
            f"{source} comes from a worker of group {judging.group!r} that judges with other verdict settings "
            f"(verdict id {theirs}) than this worker (verdict id {mine}: {settings}), and {now}: this worker "
            f"stops. Restart it with {fix}, or restart every worker of the group with the new settings and "
            "--adopt-settings on one of them")

    def answer_all(self, requests: Sequence[IndexRequest]) -> list[Answer]:
        """The `answer` for a batch of requests, their keys read with one multi_get.

        `answer` for a batch of requests, their keys read with one multi_get (as the
        Detector reads a batch of pages)."""
        clock, steps = time.perf_counter_ns, self.step_ns
        started = clock()
        names = [self.store.index_names(request.keys) for request in requests]
        self._batch().prefetch(n for request_names in names for tag_names in request_names.values()
                               for n in tag_names)
        steps["lookups"] += (done := clock()) - started
        answers = [self.answer(request, request_names) for request, request_names in zip(requests, names, strict=True)]
        steps["verdicts"] += clock() - done
        return answers

    def answer(self, request: IndexRequest, names: Mapping[int, list[bytes]] | None = None) -> Answer:
        """Judge the page against every page filed under its keys here, then file it.

        `names` are its keys as `SignatureStore.index_names` names them, if the caller has them."""
        batch = self._batch()
        doc = request.doc
        names = self.store.index_names(request.keys) if names is None else names
        # stamped (and bounded) by the fingerprint step; the clock moves to this one's now at most
        marks = self.clock.page_ms, self.clock.arrival_ms
        self.clock.observe(doc.event_ms, request.trusted_time, int(time.time() * 1000))
        oldest = self.clock.oldest_kept(doc.event_ms)
        earlier: list[Match] = []
        later: list[Match] = []
        work = self.work
        work["pages"] += 1
        try:
            mine = {tag: self.by_tag[tag].decode(data) for tag, data in doc.signatures.items()}
            self._with_shown(mine, request.shown, request.one_page)  # not in its signatures: beside them
            found = batch.candidates([n for tag_names in names.values() for n in tag_names])
            seqs = batch.without_chance(found, mine)
            count_lookup(work, batch.last_found, len(found), len(seqs))
            self._judge(request, seqs, mine, oldest, earlier, later)
        except Exception as err:  # noqa: BLE001 - one page's bug must not stop the partition (at every replay)
            if (rejection := faulted(err, doc.page_id, f"index[{self.partition}]")) is None:
                raise  # the store's or the machine's: the worker stops, the batch is retried
            self.clock.page_ms, self.clock.arrival_ms = marks  # nothing of it kept here: not filed, the clock as it was
            return Answer(doc.page_id, request.order, self.partition, fault=rejection.detail or "")
        root = asker_root(request.order, doc.page_id, earlier)
        batch.add(DocRecord(batch.next_seq(), doc.page_id, doc.event_ms, request.order.hex(),
                            f"{root[0].hex()} {root[1]}", doc.signatures, doc.site, document=doc.document,
                            steered=doc.steered, shown=request.shown),
                  request.keys, names, displaces=not earlier)
        return Answer(doc.page_id, request.order, self.partition, tuple(earlier), tuple(later))

    def _judge(self, request: IndexRequest, seqs: Sequence[int], mine: Mapping[int, Any], oldest: int | None,
               earlier: list[Match], later: list[Match]) -> None:
        """The page's matches filed here (`judged`): those before it in the global order and those after (in place).

        Pure: a page whose judging raises leaves nothing behind (`answer`)."""
        doc, batch = request.doc, self._batch()
        for link in judged(seqs, batch.docs_of, self.policy, self.by_name, doc, mine, request.template_known, oldest,
                           tests=self.work):
            other = link.doc
            order = bytes.fromhex(other.cluster_id)
            root_hex, _, root_id = other.duplicate_of.partition(" ")
            if order < request.order:  # (a page whose text was cut duplicates a whole copy only: `as_cut`)
                earlier.append(Match(other.page_id, order, link.rule, link.similarity, bytes.fromhex(root_hex),
                                     root_id, link.new_share, link.their_new_share,
                                     as_cut(link.relation, link.rule) if request.text_cut else link.relation,
                                     link.their_relation, link.new_paragraph, link.their_new_paragraph,
                                     other.site == doc.site))
                continue
            # a later page filed here first: its side of the pair is judged as it would have been had it come
            # last (file mode's order), with it as the page and the asker as its candidate
            theirs = self._judged_as_the_later(other, doc)
            if theirs is not None:
                later.append(Match(other.page_id, order, theirs.rule, theirs.similarity, bytes.fromhex(root_hex),
                                   root_id, link.new_share, theirs.new_share, link.relation, theirs.relation,
                                   link.new_paragraph, theirs.new_paragraph, other.site == doc.site))

    def _with_shown(self, signatures: dict[int, Any], shown: bytes, one_page: bytes = b"") -> None:
        """Give a page's decoded word-pair signature the encoded lines its site showed before (in place; b"": none).

        `one_page`: those one earlier page showed, by that page (`IndexRequest.one_page`)."""
        pairs = self.by_name.get(WordPairsMethod.name)
        if shown and pairs is not None and pairs[0] in signatures:
            signatures[pairs[0]] = replace(signatures[pairs[0]], shown=ShownLines(pairs=pairs[1].decode(shown)))
        if one_page and pairs is not None and pairs[0] in signatures:
            method = cast(WordPairsMethod, pairs[1])
            signatures[pairs[0]] = replace(signatures[pairs[0]], one_page=decode_one_page(one_page, method))

    def _judged_as_the_later(self, later: DocRecord, asker: DocRecord) -> Judged | None:
        """The later page's link to the asker, judged with it as the page (None: no rule matched, not related).

        The engine's two sides of a pair are not mirror images (the edges of a copy, paragraphs in
        their place, the lines a site showed), so a page filed before an earlier one arrived gets the
        verdict it gets when it arrives last, as in file mode (an operator review: 17 of 295 verdicts
        on 6 partitions differed)."""
        theirs = {tag: self.by_tag[tag].decode(data) for tag, data in later.signatures.items() if tag in self.by_tag}
        self._with_shown(theirs, later.shown)
        # whether its template was known is not kept: not known, the stricter (the default site policy is the
        # main one, so the same either way)
        links = list(judged([-1], lambda _: [asker], self.policy, self.by_name, later, theirs, False, None,
                            tests=self.work))
        return links[0] if links else None

    # -- the runtime's side: staged changes, offsets ------------------------------------------
    def _batch(self) -> StoreBatch:
        if self.batch is None:
            self.batch = self.store.batch()
        return self.batch

    def stage_meta(self, name: str, value: bytes) -> None:
        """Stage a meta entry (an input partition's watermark, the offset the batch reaches) with the batch."""
        self._batch().set_meta(name, value)

    def get_meta(self, name: str) -> bytes | None:
        """A committed meta entry of the partition's store (None: not set)."""
        return self.store.get_meta(name)

    def commit(self) -> None:
        """Write the batch's store changes and retention clock, then expire the pages retention no longer keeps."""
        clock, steps = time.perf_counter_ns, self.step_ns
        started = clock()
        batch = self._batch()
        self.clock.stage(batch.set_meta)
        batch.commit()
        self.batch = None
        steps["commit"] += (done := clock()) - started
        self.work["pages_expired"] += self.store.expire_after_commit(self.clock.expire_before())
        steps["expire"] += clock() - done

    def discard(self) -> None:
        """Drop the batch's store changes and read the retention clock back as committed."""
        self.batch = None
        self.clock = self._load_clock()

    def _load_clock(self) -> RetentionClock:
        # the allowed skew is the fingerprint step's business: requests arrive stamped
        return RetentionClock.load(self.retention_ms, 0, self.store.get_meta_int)

    def property_total(self, name: str) -> int:
        """A RocksDB integer property summed over the partition's store, for metrics."""
        return self.store.property_total(name)

    def close(self) -> None:
        """Drop the batch's staged changes and close the partition's store."""
        self.batch = None
        self.store.close()
