"""The detector: the thin runtime that strings the stages together for a stream of records.

record -> clean -> tokens -> fingerprints -> store lookup -> verdict -> store update.
Everything here is glue; the algorithms live in the stage packages as pure functions. Kafka, file
mode and the tests all drive this same class.
"""

from __future__ import annotations

import base64
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

import orjson
import xxhash

from streamdedup.clean.pipeline import clean_page
from streamdedup.config import TOKENIZER_VERSION, DetectorConfig
from streamdedup.fingerprints.base import FingerprintMethod
from streamdedup.fingerprints.registry import create_method
from streamdedup.record.page import Page, page_from_record
from streamdedup.record.readers import RawRecord
from streamdedup.record.rejection import Reason, Rejected
from streamdedup.stats.lexicon import load_lexicon
from streamdedup.store.layout import DocRecord
from streamdedup.store.signature_store import SignatureStore, StoreBatch, method_tags
from streamdedup.tokens.document import Document
from streamdedup.verdict.engine import Candidate, decide, similarities
from streamdedup.verdict.policy import SitePolicy, Verdict

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Outcome:
    """One input record's result: the record (all its fields) and its `dedup` object."""

    record: dict[str, Any]
    dedup: dict[str, Any]
    origin: str

    @property
    def status(self) -> str:
        return self.dedup["status"]

    def output(self) -> dict[str, Any]:
        return {**self.record, "dedup": self.dedup}


@dataclass
class Fingerprinted:
    """A page after the pure stages, ready for the store: its signatures by method name."""

    page: Page
    record: dict[str, Any]
    origin: str
    signatures: dict[str, Any]  # method name -> signature (None: the method abstains)
    text: str = ""  # the cleaned main text (kept for evaluation's direct text similarity)
    arrival_ms: int | None = None  # when the record reached us (Kafka message time), if known

    @property
    def site_hash(self) -> int:
        return xxhash.xxh3_64_intdigest(self.page.site.encode("utf-8", "surrogatepass"))


class Detector:
    def __init__(self, config: DetectorConfig, state_dir: str | Path | None) -> None:
        """`state_dir=None`: only the pure stages (`prepare`), no store (a stateless
        fingerprinting step, as in the scale-out topology)."""
        self.config = config
        self.methods: list[FingerprintMethod[Any]] = [
            create_method(name, **config.params_for(name)) for name in config.methods]
        self.policy = SitePolicy.parse(config.policy, config.site_policy)
        tags = method_tags([m.name for m in self.methods])
        self.methods_by_tag = {tags[m.name]: m for m in self.methods}
        self.store_config = {"cleaning": str(config.cleaning), "tokenizer": TOKENIZER_VERSION}
        warm_up(self.methods)
        if state_dir is None:
            self.store = None  # type: ignore[assignment]
            return
        if config.lexicon != "wordfreq":
            keep_lexicon_with_state(Path(config.lexicon), Path(state_dir))
        self.store = SignatureStore(state_dir, self.methods, self.store_config)
        self.clock = config.retention_clock(self.store.get_meta_int)

    def store_fingerprint(self) -> dict[str, str]:
        """What signatures depend on; the store refuses to mix values built with others."""
        fp = {"cleaning": str(self.config.cleaning), "tokenizer": TOKENIZER_VERSION}
        fp.update({f"method.{m.name}": m.describe() for m in self.methods})
        return fp

    def close(self) -> None:
        if self.store is not None:
            self.store.close()

    def __enter__(self) -> "Detector":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the pipeline ----------------------------------------------------------------------
    def run(self, records: Iterable[RawRecord]) -> Iterator[Outcome]:
        """Process a stream in batches; each batch is one atomic store write."""
        pending: list[RawRecord] = []
        for raw in records:
            pending.append(raw)
            if len(pending) >= self.config.batch_size:
                yield from self.process_batch(pending)
                pending = []
        if pending:
            yield from self.process_batch(pending)

    def process_batch(self, raws: list[RawRecord]) -> list[Outcome]:
        return self.decide_batch([self.prepare(raw) for raw in raws])

    def prepare(self, raw: RawRecord) -> Fingerprinted | Outcome:
        """The pure stages (parse, clean, tokenise, fingerprint): no store access, parallelisable."""
        record: dict[str, Any] = {}
        try:
            value, record = self._decode(raw)
            page = page_from_record(value, max_content_bytes=self.config.cleaning.max_content_bytes)
            text, signatures = self.signatures(page)
            return Fingerprinted(page, record, raw.origin, signatures, text, raw.arrival_ms)
        except Rejected as rejected:
            return self._rejected(raw, record, rejected.reason.value, rejected.detail)
        except Exception as err:  # noqa: BLE001 - one bad page must not stop the stream
            log.exception("processing failed for %s", raw.origin)
            return self._rejected(raw, record, Reason.PROCESSING_ERROR.value, f"{type(err).__name__}: {err}")

    def decide_batch(self, items: list[Fingerprinted | Outcome]) -> list[Outcome]:
        """The stateful stage: look up, decide and record each page; one atomic store write."""
        outcomes, batch = self.decide_staged(items)
        self.commit(batch)
        return outcomes

    def decide_staged(self, items: list[Fingerprinted | Outcome]) -> tuple[list[Outcome], StoreBatch]:
        """Decide a batch, leaving its store changes staged: a runtime adds what else must be
        written atomically with them (e.g. input offsets) and calls `commit`."""
        batch = self.store.batch()
        now_ms = int(time.time() * 1000)
        pages = [item for item in items if isinstance(item, Fingerprinted)]
        keyed = {id(fp): self._index_keys(fp) for fp in pages}
        batch.prefetch((n for _, names in keyed.values() for tag_names in names.values() for n in tag_names),
                       [fp.page.id for fp in pages])
        outcomes = [item if isinstance(item, Outcome) else self._decide_one(item, batch, now_ms, *keyed[id(item)])
                    for item in items]
        self.clock.stage(batch.set_meta)
        return outcomes, batch

    def commit(self, batch: StoreBatch) -> None:
        batch.commit()
        expire_before = self.clock.expire_before()
        if expire_before is not None:
            self.store.expire(expire_before)

    def discard(self) -> None:
        """Forget staged decisions (their batch is dropped): reload what the store holds."""
        self.clock = self.config.retention_clock(self.store.get_meta_int)

    def _index_keys(self, fp: Fingerprinted) -> tuple[dict[int, list[bytes]], dict[int, list[bytes]]]:
        """The page's index keys by method tag, and their names in the store, computed once for
        the batch's prefetch, the page's lookups and its filing."""
        tags = self.store.tags
        keys = {tags[m.name]: m.index_keys(sig) for m in self.methods if (sig := fp.signatures[m.name]) is not None}
        return keys, self.store.index_names(keys)

    def _decide_one(self, fp: Fingerprinted, batch: StoreBatch, now_ms: int, keys: dict[int, list[bytes]],
                    names: dict[int, list[bytes]]) -> Outcome:
        if batch.seq_for(fp.page.id) is not None:
            return Outcome(fp.record, {"status": "rejected", "reason": Reason.DUPLICATE_ID.value,
                                       "detail": f"page id {fp.page.id!r} was already processed",
                                       "origin": fp.origin}, fp.origin)
        stamp = self.clock.stamp(fp.page.event_time_ms, fp.arrival_ms, now_ms)
        dedup = self._decide_and_record(fp, batch, stamp.event_ms, keys, names).as_dict()
        if stamp.note:
            dedup["time_note"] = stamp.note
        return Outcome(fp.record, dedup, fp.origin)

    @staticmethod
    def _decode(raw: RawRecord) -> tuple[Any, dict[str, Any]]:
        """The record's JSON value and its pass-through fields (JSON-safe)."""
        if raw.rejection is not None:  # a part of the input its reader could not read
            raise Rejected(*raw.rejection)
        if raw.fields is not None:
            return raw.fields, _raw_payload(raw)
        try:
            value = orjson.loads(raw.data or b"")
        except orjson.JSONDecodeError as err:
            raise Rejected(Reason.INVALID_JSON, f"not JSON: {err}") from None
        return value, value if isinstance(value, dict) else {}

    def signatures(self, page: Page) -> tuple[str, dict[str, Any]]:
        """Clean, tokenise and compute every enabled method's signature."""
        text = clean_page(page, self.config.cleaning)
        return text, fingerprint_text(text, page.lang, self.methods, self.config.cleaning.min_words)

    def _decide_and_record(self, fp: Fingerprinted, batch: StoreBatch, event_ms: int, keys: dict[int, list[bytes]],
                           names: dict[int, list[bytes]]) -> Verdict:
        """Verified candidates -> policy -> verdict (the engine); then the page is filed for later pages."""
        verdict = decide(fp.page.id, self._candidates(fp, batch, event_ms, names))
        tags = self.store.tags
        signatures = {tags[name]: method.encode(sig) for method in self.methods
                      if (sig := fp.signatures[(name := method.name)]) is not None}
        batch.add(DocRecord(batch.next_seq(), fp.page.id, event_ms, verdict.cluster_id,
                            verdict.duplicate_of or "", signatures, fp.site_hash), keys, names)
        return verdict

    def _candidates(self, fp: Fingerprinted, batch: StoreBatch, event_ms: int,
                    names: dict[int, list[bytes]]) -> list[Candidate]:
        """Every stored page sharing any index key with this one and inside its retention window,
        verified by every method (`engine.similarities`) and judged by the policy."""
        oldest_ms = self.clock.oldest_kept(event_ms)
        tags = self.store.tags
        mine = {tags[m.name]: sig for m in self.methods if (sig := fp.signatures[m.name]) is not None}
        found: list[Candidate] = []
        for seq in batch.candidates([name for tag_names in names.values() for name in tag_names]):
            doc = batch.doc(seq)
            if doc is None or (oldest_ms is not None and doc.event_ms < oldest_ms):
                continue
            by_method = similarities(self.methods_by_tag, mine, doc.signatures)
            judged = self.policy.judge(by_method, doc.site == fp.site_hash)
            if judged is None:
                continue
            # the cluster's first page orders the clusters; one expired or deleted is older than any stored
            root_seq = seq if doc.cluster_id == doc.page_id else batch.seq_for(doc.cluster_id)
            found.append(Candidate(seq, doc.page_id, judged[0], judged[1], -1 if root_seq is None else root_seq,
                                   doc.cluster_id))
        return found

    # -- rejected records -------------------------------------------------------------------
    @staticmethod
    def _rejected(raw: RawRecord, record: dict[str, Any], reason: str, detail: str) -> Outcome:
        if not record:
            record = _raw_payload(raw)
        return Outcome(record, {"status": "rejected", "reason": reason, "detail": detail,
                                "origin": raw.origin}, raw.origin)


_WARM_UP_TEXTS = ("Compiled kernels load once. Tables too.",  # ASCII text is scanned as bytes
                  "東京 und Wörter; བོད་ཀྱི།")  # other text as 32-bit code points


def warm_up(methods: list[FingerprintMethod[Any]]) -> None:
    """Load the compiled kernels and tables (numba's disk cache, the character table) before the
    store opens, so the first batch of a fresh process is not seconds slower than the rest."""
    for text in _WARM_UP_TEXTS:
        fingerprint_text(text, None, methods, 0)


def fingerprint_text(text: str, lang: str | None, methods: list[FingerprintMethod[Any]],
                     min_words: int) -> dict[str, Any]:
    """Cleaned text -> each method's signature (None: it abstains); one Document shared by all."""
    doc = Document.from_text(text, lang)
    if doc.num_tokens < min_words:
        raise Rejected(Reason.NO_TEXT, f"the main text has {doc.num_tokens} words (fewer than "
                       f"{min_words}): the page is only boilerplate or markup")
    return {m.name: m.signature(doc) for m in methods}


def keep_lexicon_with_state(lexicon: Path, state_dir: Path) -> None:
    """A copy of the lexicon the signatures were built with lives beside them."""
    import shutil

    state_dir.mkdir(parents=True, exist_ok=True)
    target = state_dir / f"lexicon-{load_lexicon(str(lexicon)).version}.json.gz"
    if not target.exists():
        shutil.copyfile(lexicon, target)


def _raw_payload(raw: RawRecord) -> dict[str, Any]:
    """The original bytes, kept so a rejected record can be inspected and replayed."""
    if raw.fields is not None:
        fields = dict(raw.fields)
        content = fields.get("content")
        if isinstance(content, bytes):
            fields["content_base64"] = base64.b64encode(content).decode("ascii")
            del fields["content"]
        return fields
    data = raw.data or b""
    try:
        return {"raw": data.decode("utf-8")}
    except UnicodeDecodeError:
        return {"raw_base64": base64.b64encode(data).decode("ascii")}
