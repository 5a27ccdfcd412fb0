"""Bounded work per page: a full key keeps its first pages, a page verifies a limited number of
candidates (those sharing the most keys, the earliest on a tie), and re-crawls are still found."""

from __future__ import annotations

from datetime import UTC

import numpy as np
from conftest import make_article, page, wrap_in_template

from streamdedup.config import DetectorConfig
from streamdedup.detector import Detector
from streamdedup.fingerprints.minhash import MinHashMethod
from streamdedup.store import candidates, chance, removal, signature_store
from streamdedup.testing import raw_records

MINHASH = MinHashMethod()  # the default's signatures: values of whole random minima, their band checks


def test_a_full_key_keeps_its_first_pages_and_recrawls_still_find_the_original(tmp_path, monkeypatch):
    monkeypatch.setattr(candidates, "MAX_POSTINGS_PER_KEY", 5)
    story = make_article(61)
    recrawls = [page(f"https://planet.example/story?crawl={i}", wrap_in_template(story, "Planet"),
                     f"2024-03-01T{i:02d}:00:00Z") for i in range(20)]
    with Detector(DetectorConfig(), tmp_path) as detector:
        outcomes = list(detector.run(raw_records(recrawls)))
        first = outcomes[0].dedup["id"]
        assert [o.dedup.get("duplicate_of") for o in outcomes[1:]] == [first] * 19
        assert detector.work_per_page()["candidates_found_max"] <= 5  # no key returned more than its cap


def test_candidates_past_the_limit_are_those_sharing_the_most_keys_then_the_earliest(tmp_path):
    with Detector(DetectorConfig(), tmp_path) as detector:
        batch = detector.store.batch()
        names = [bytes([1]) + i.to_bytes(5, "big") for i in range(3)]
        from streamdedup.store.layout import DocRecord

        for seq in range(6):  # pages 0-5 under key 0; pages 4 and 5 also under keys 1 and 2
            keys = names if seq >= 4 else names[:1]
            batch.add(DocRecord(seq, f"p{seq}", 0, f"p{seq}"), {}, {1: keys})
        assert batch.candidates(names, limit=3) == [0, 4, 5]
        assert batch.last_found == 6
        assert batch.candidates(names, limit=10) == [0, 1, 2, 3, 4, 5]


def test_homogeneous_pages_cost_a_bounded_and_flat_number_of_verifications(tmp_path):
    """Pages of one vocabulary (a forum, a listing) share keys with much of the store: their
    SimHash tables fill and become stop keys, so a page's candidates do not grow with the store."""
    import random

    from streamdedup.testing import make_words

    rng = random.Random(3)
    vocabulary = make_words(rng, 2000)
    zipf = [1 / rank ** 1.1 for rank in range(1, len(vocabulary) + 1)]  # every page draws from one distribution
    pages = [page(f"https://forum.example/t/{i}", " ".join(rng.choices(vocabulary, zipf, k=600)), "2024-03-01T00:00:00Z",
                  content_type="text/plain") for i in range(600)]
    with Detector(DetectorConfig(), tmp_path) as detector:
        list(detector.run(raw_records(pages[:300])))
        first = dict(detector.work)
        list(detector.run(raw_records(pages[300:])))
        work = detector.work
    found_first = first["candidates_found"] / first["pages"]
    found_second = (work["candidates_found"] - first["candidates_found"]) / (work["pages"] - first["pages"])
    assert found_second <= 1.25 * found_first, (found_first, found_second)  # flat as the store grows


def test_the_answers_stage_keeps_are_those_their_values_decode_to(tmp_path, monkeypatch):
    """`stage` keeps each stored name's answer (a full key's first pages, and the count) as it
    writes the name's value, for `candidates`: the same as decoding the value (`answer_of`)."""


    monkeypatch.setattr(candidates, "MAX_POSTINGS_PER_KEY", 8)
    kept: list[tuple[bytes, tuple[list[int], int]]] = []
    stage = signature_store.StoreBatch.stage

    def staged(self, *args, **kwargs):
        shared = stage(self, *args, **kwargs)
        kept.extend(self._answers.items())
        return shared

    monkeypatch.setattr(signature_store.StoreBatch, "stage", staged)
    pages = _forum_pages(seed=4)
    with Detector(DetectorConfig(), tmp_path) as detector:
        for start in range(0, len(pages), 30):  # batches after the first find stored pages
            list(detector.run(raw_records(pages[start: start + 30])))
    assert any(count >= 8 for _, (_, count) in kept) and any(count < 8 for _, (_, count) in kept)
    assert all(answer == signature_store.answer_of(value) for value, answer in kept)


def test_the_answers_of_grown_values_are_those_their_values_decode_to(tmp_path, monkeypatch):
    """A value a page of the batch appended its seq to is answered from the answer it grew from
    (`StoreBatch._appended`), keys filling up to full on the way: the same as decoding it (`answer_of`)."""

    from streamdedup.store import batch as store_batch

    monkeypatch.setattr(candidates, "MAX_POSTINGS_PER_KEY", 8)
    checked: list[bool] = []
    answer = store_batch.StoreBatch._answer

    def answered(self, value):
        grown = value in self._appended
        out = answer(self, value)
        assert out == signature_store.answer_of(value)
        checked.append(grown)
        return out

    monkeypatch.setattr(store_batch.StoreBatch, "_answer", answered)
    pages = _forum_pages(seed=5)
    with Detector(DetectorConfig(), tmp_path) as detector:
        for start in range(0, len(pages), 60):
            list(detector.run(raw_records(pages[start: start + 60])))
    assert sum(checked) >= 10  # answers made from the value they grew from, each as decoded


def test_an_answer_grown_by_a_seq_is_the_decoded_answer_of_the_grown_value(monkeypatch):
    """`_answer_with` equals `answer_of` of the value with the seq appended, up to the key's filling."""
    import random

    from streamdedup.store import batch as store_batch
    from streamdedup.store import layout

    monkeypatch.setattr(candidates, "MAX_POSTINGS_PER_KEY", 6)
    rng = random.Random(7)
    for _ in range(300):
        seqs = sorted(rng.sample(range(1 << 22), rng.randint(1, 5)))
        value, seq = layout.seqs_value(seqs), seqs[-1] + rng.randint(1, 1 << 20)
        grown = store_batch._answer_with(candidates.answer_of(value), seq)
        assert grown == candidates.answer_of(value + layout.varint(seq))


def test_the_records_a_batch_keeps_decoded_are_those_it_wrote(tmp_path, monkeypatch):
    """`SignatureStore.keep_decoded` keeps each record a commit wrote as it was staged: equal to its
    record read back and decoded, full keys' unfiled places and displaced pages' included."""
    import random

    from streamdedup.store import layout
    from streamdedup.testing import make_words

    monkeypatch.setattr(candidates, "MAX_POSTINGS_PER_KEY", 6)
    kept: list[int] = []
    keep = signature_store.SignatureStore.keep_decoded

    def keep_decoded(self, docs):
        docs = list(docs)
        for doc in docs:
            assert doc == layout.DocRecord.decode(doc.seq, self.db.get(layout.doc_key(doc.seq)))
        kept.extend(doc.seq for doc in docs if doc.unfiled)
        keep(self, docs)

    monkeypatch.setattr(signature_store.SignatureStore, "keep_decoded", keep_decoded)
    rng = random.Random(6)
    vocabulary = make_words(rng, 600)
    zipf = [1 / rank ** 1.1 for rank in range(1, len(vocabulary) + 1)]
    pages = [page(f"https://forum.example/t/{i}", " ".join(rng.choices(vocabulary, zipf, k=300)), "2024-03-01T00:00:00Z",
                  content_type="text/plain") for i in range(90)]
    with Detector(DetectorConfig(), tmp_path) as detector:
        for start in range(0, len(pages), 30):
            list(detector.run(raw_records(pages[start: start + 30])))
    assert kept  # records with unfiled places among them


def test_a_full_key_is_a_stop_key_answering_only_its_first_and_latest_pages(tmp_path, monkeypatch):
    """Everything collides under a full key: it answers its first page (the earliest-page rule's)
    and its latest only, so its lookups cost a few candidates, not the cap's worth."""
    monkeypatch.setattr(candidates, "MAX_POSTINGS_PER_KEY", 20)
    monkeypatch.setattr(candidates, "STOP_KEY_ANSWERS", 3)
    from streamdedup.store.layout import DocRecord

    with Detector(DetectorConfig(), tmp_path) as detector:
        hot, cold = bytes([1]) + bytes(5), bytes([1]) + bytes(4) + b"\x01"
        batch = detector.store.batch()
        for seq in range(30):  # 20 pages fill the hot key; pages 25-29 also go under a cold one
            batch.add(DocRecord(seq, f"p{seq}", 0, f"p{seq}"), {}, {1: [hot, cold] if seq >= 25 else [hot]})
        batch.commit()
        batch = detector.store.batch()
        batch.prefetch([hot, cold])
        assert batch.candidates([hot]) == [0, 18, 19]
        assert batch.candidates([hot, cold]) == [0, 18, 19, 25, 26, 27, 28, 29]
        assert batch.last_found == 8


def test_a_unique_page_takes_a_full_keys_slot_and_a_duplicate_does_not(tmp_path, monkeypatch):
    """A page judged unique whose keys are mostly full is filed under a full key in place of its
    second-oldest page (whose record then names the key as not filed: expiry and a rebuild from
    the records agree with the table), and is among the pages the key answers; a duplicate is not
    filed there, nor a unique page with most of its keys open (found through those)."""
    monkeypatch.setattr(candidates, "MAX_POSTINGS_PER_KEY", 5)
    from streamdedup.store.layout import DocRecord

    hot, other = bytes([1]) + bytes(5), bytes([1]) + bytes(4) + b"\x07"
    open_a, open_b = bytes([1]) + bytes(4) + b"\x08", bytes([1]) + bytes(4) + b"\x09"
    with Detector(DetectorConfig(), tmp_path) as detector:
        batch = detector.store.batch()
        for seq in range(5):  # fill the key; page 1 is also under another key
            batch.add(DocRecord(seq, f"p{seq}", 0, f"p{seq}"), {}, {1: [hot, other] if seq == 1 else [hot]})
        batch.commit()
        batch = detector.store.batch()
        batch.add(DocRecord(5, "p5", 0, "p5"), {}, {1: [hot]}, displaces=True)  # unique: in, page 1 out
        batch.add(DocRecord(6, "p6", 0, "p0", "p0"), {}, {1: [hot]})  # a duplicate: not filed
        batch.add(DocRecord(7, "p7", 0, "p7"), {}, {1: [hot]}, displaces=True)  # unique: in, page 2 out
        # unique, but 1 key full of 3: found through the 2 open ones, it leaves the stop key as it is
        batch.add(DocRecord(8, "p8", 0, "p8"), {}, {1: [hot, open_a, open_b]}, displaces=True)
        batch.commit()
        assert detector.store.memory.seqs([hot, other, open_a]) == [[0, 3, 4, 5, 7], [1], [8]]
        assert detector.store.batch().candidates([hot]) == [0, 4, 5, 7]
        assert [detector.store.doc(s).unfiled for s in (1, 2, 6, 8)] == [(0,), (0,), (0,), (0,)]


def _synthetic(i: int, simhash: int, rng):
    """A page with random signatures of the default methods but the SimHash fingerprint given."""
    from streamdedup.fingerprinter import Fingerprinted
    from streamdedup.fingerprints.a12 import A12Signature
    from streamdedup.record.page import Page

    url = f"https://site{i}.example/a/{i}"
    signatures = {
        "exact": rng.getrandbits(128).to_bytes(16, "little"),
        "minhash": MINHASH.signature_of_minima(np.array([rng.getrandbits(32) for _ in range(128)], dtype=np.uint32), 500),
        "simhash": simhash,
        "a12": A12Signature(500, 20, tuple(rng.getrandbits(64) for _ in range(3)),
                            tuple(rng.getrandbits(64) for _ in range(5))),
    }
    page_ = Page(id=url, url=url, content="", content_type="text/plain", fetched_at=None, lang="en", record={})
    return Fingerprinted(page_, {}, f"test:{i}", signatures)


def _chance_collision(word: int, table: int, rng, stored: tuple[int, ...] = ()) -> int:
    """A SimHash fingerprint under SimHash table `table`'s key with `word` and with each of
    `stored`, under no other key of theirs, and more than the tables' distance from each over the
    bits the chance check reads (`WORD_MASK`): a chance collision by construction. Twelve read
    bits outside the key are flipped, and some unread ones, drawn until it is so."""
    from streamdedup.fingerprints.simhash import SimHashMethod, SimHashParams
    from streamdedup.store.signature_store import WORD_MASK

    params = SimHashParams()
    masks = SimHashMethod(params)._table_masks
    others = [m for t, m in enumerate(masks) if t != table]
    read = [b for b in range(64) if not masks[table] >> b & 1 and WORD_MASK >> b & 1]
    unread = [b for b in range(64) if not masks[table] >> b & 1 and not WORD_MASK >> b & 1]
    while True:
        page = word ^ sum(1 << b for b in rng.sample(read, 12)) ^ sum(1 << b for b in unread if rng.random() < 0.5)
        if all(all((page ^ other) & m for m in others) and ((page ^ other) & WORD_MASK).bit_count() > params.max_distance
               for other in (word, *stored)):
            return page


def test_a_page_only_simhash_keys_found_by_chance_is_dropped_before_it_is_judged(tmp_path):
    """SimHash's table keys are ~26 bits: among millions of stored pages some share one with any
    page by chance (~2 a page at 10 M). Such a page, beyond the Hamming distance the tables are
    built for (told from the bits the store keeps in memory), is no method's candidate and is not
    judged; one within it is judged as before."""
    import random

    from streamdedup.fingerprints.simhash import SimHashMethod, SimHashParams
    from streamdedup.store.signature_store import WORD_MASK

    rng = random.Random(5)
    masks = SimHashMethod(SimHashParams())._table_masks
    first = rng.getrandbits(64)
    read = [b for b in range(64) if not masks[0] >> b & 1 and WORD_MASK >> b & 1]  # outside table 0's key
    near = first ^ (1 << read[0]) ^ (1 << read[5])  # 2 bits away: what the tables are built to find
    stored = (near,)

    def far() -> int:
        """A chance collision under table 0's key with the first page and every page stored since."""
        nonlocal stored
        page = _chance_collision(first, 0, rng, stored)
        stored = (*stored, page)
        return page

    by_chance = far()  # shares a key, 12 read bits away
    with Detector(DetectorConfig(), tmp_path) as detector:
        detector.decide_batch([_synthetic(0, first, rng)])
        detector.store._doc_cache.clear()  # (its commit kept its record decoded: what follows reads none)
        detector.decide_batch([_synthetic(1, by_chance, rng)])
        assert detector.work["candidates_found"] == 1 and detector.work["candidates_by_chance"] == 1
        assert detector.work["candidates_verified"] == 0
        assert 0 not in detector.store._doc_cache  # told from the bits kept in memory: its record not read
        found, verified, by_chance = 1, 0, 1

        def judged_of(page: object) -> tuple[int, int, int]:
            """The page's candidates found, verified and dropped by chance."""
            nonlocal found, verified, by_chance
            outcomes = detector.decide_batch([page])
            assert outcomes[0].dedup["status"] == "unique"  # (their other signatures are random)
            work = detector.work
            step = (work["candidates_found"] - found, work["candidates_verified"] - verified,
                    work["candidates_by_chance"] - by_chance)
            found, verified, by_chance = work["candidates_found"], work["candidates_verified"], work["candidates_by_chance"]
            return step

        # the first page and the chance one, two pages under that key: each is asked; the first,
        # 2 bits away, is judged, the chance one (10-14 bits away) dropped
        assert judged_of(_synthetic(2, near, rng)) == (2, 1, 1)
        # up to CHANCE_POSTINGS (4) pages under the key, each is asked: all far from another
        # chance page
        assert judged_of(_synthetic(3, far(), rng)) == (3, 0, 3)
        assert judged_of(_synthetic(4, far(), rng)) == (4, 0, 4)
        # a key of 5 pages is one many pages share: none of its pages is asked, all are judged
        assert judged_of(_synthetic(5, far(), rng)) == (5, 5, 0)
    assert detector.work_per_page()["candidates_by_chance_mean"] == round(9 / 6, 2)


def test_the_words_the_chance_check_reads_follow_the_pages_through_reopen_crash_and_deletion(tmp_path):
    """`SignatureStore.words` holds each stored page's SimHash bits as the records do: saved with
    the index at a clean close, rebuilt from the records after a crash (or beside an index
    snapshot of a version without them), and forgotten with a deleted page."""
    import random

    from streamdedup.store.signature_store import WORD_MASK

    rng = random.Random(9)
    simhashes = [rng.getrandbits(64) for _ in range(5)]
    with Detector(DetectorConfig(), tmp_path) as detector:
        detector.decide_batch([_synthetic(i, h, rng) for i, h in enumerate(simhashes)])
        expected = {seq: h & WORD_MASK for seq, h in enumerate(simhashes)}
        assert detector.store.stored_words(list(range(5))) == expected
    assert (tmp_path / "words-snapshot").exists()
    with Detector(DetectorConfig(), tmp_path) as detector:  # loaded from the snapshot
        assert detector.store.stored_words(list(range(5))) == expected
        assert detector.store.delete_page("https://site2.example/a/2")
        del expected[2]
        assert detector.store.stored_words(list(range(5))) == expected
    (tmp_path / "words-snapshot").unlink()  # an index snapshot alone: both rebuilt from the records
    with Detector(DetectorConfig(), tmp_path) as detector:
        assert detector.store.stored_words(list(range(5))) == expected
        assert not (tmp_path / "index-snapshot").exists()
    (tmp_path / "index-snapshot").unlink()
    (tmp_path / "words-snapshot").unlink()  # as after a crash
    with Detector(DetectorConfig(), tmp_path) as detector:
        assert detector.store.stored_words(list(range(5))) == expected


def test_a_pages_word_is_the_first_8_bytes_of_its_simhash_little_endian_and_0_without_one():
    """The chance check compares the word a batch's page brings (`words_of`) with the bits kept for
    stored pages (`chance.word_postings`): both read it the same way, from one function."""
    word = (0x0123456789ABCDEF).to_bytes(8, "little")
    words = signature_store.page_words([word, None, b"\x01\x02", word + b"\xff"])
    assert words.dtype == np.uint64 and words.tolist() == [0x0123456789ABCDEF, 0, 0, 0x0123456789ABCDEF]
    seqs, bits = chance.word_postings([5, 6, 7], [word, None, b"\x01"])
    assert seqs.tolist() == [5] and bits.tolist() == [0x0123456789ABCDEF & signature_store.WORD_MASK]


def test_pages_told_chance_only_for_the_whole_batch_get_the_verdicts_and_counts_one_at_a_time_gave(
        tmp_path, monkeypatch):
    """`StoreBatch.stage` tells, for the whole batch at once, the pages whose every candidate is a
    chance collision (`chance_only`), and the detector then skips their `candidates` and
    `without_chance` (and files them as pages sharing no key). On a batch mixing such pages with pages that share a chance key with another
    page of the batch, a page found by a near fingerprint, one far from a stored page but under two
    of its keys, and an unrelated one, the verdicts and
    every work count are those of the one-page-at-a-time path."""
    import random

    from streamdedup.store.signature_store import StoreBatch

    def run(path, skip: bool) -> tuple[list[dict], dict, int]:
        rng = random.Random(11)
        stored = [rng.getrandbits(64) for _ in range(5)]
        told = 0
        original = StoreBatch.chance_only

        def chance_only(self, page: int) -> int:
            nonlocal told
            found = original(self, page)
            told += found > 0
            return found

        monkeypatch.setattr(StoreBatch, "chance_only", chance_only)
        if not skip:  # nothing told for the batch: every page's candidates looked up and dropped one at a time
            monkeypatch.setattr(chance, "chance_only_pages", lambda *args: {})
        with Detector(DetectorConfig(), path) as detector:
            detector.decide_batch([_synthetic(i, word, rng) for i, word in enumerate(stored)])
            twin = _chance_collision(stored[1], 8, rng)
            three_keys = sum(1 << b for b in rng.sample(range(26), 12))  # blocks 0 and 1: tables 7, 8, 9 kept
            batch = [
                _synthetic(10, _chance_collision(stored[0], 9, rng), rng),  # a chance collision only
                _synthetic(11, twin, rng),  # a chance collision, and a key another page of the batch names
                _synthetic(12, twin ^ 1, rng),  # 1 bit from 11 (block 0), the same key of table 8
                _synthetic(13, stored[2] ^ 0b101, rng),  # a near fingerprint: judged
                _synthetic(14, _chance_collision(stored[3], 6, rng), rng),  # a chance collision only
                _synthetic(15, rng.getrandbits(64), rng),  # nothing
                _synthetic(16, stored[4] ^ three_keys, rng),  # far, but under three of its keys: judged
            ]
            outcomes = [o.dedup for o in detector.decide_batch(batch)]
            return outcomes, dict(detector.work), told, detector.store.memory.table()

    batch_wise, work, told, table = run(tmp_path / "batch", skip=True)
    page_wise, page_work, _, page_table = run(tmp_path / "page", skip=False)
    assert batch_wise == page_wise
    # filed alike, slot for slot (a told page's keys go into the free slots `stage` found)
    assert all(np.array_equal(a, b) for a, b in zip(table, page_table, strict=True))
    assert work == page_work and work["candidates_by_chance"] >= 2
    assert told == 2  # pages 10 and 14 (11 and 12 share a key in the batch; 13 has a real candidate)


def test_the_chance_checks_stage_told_answer_a_pages_as_its_own_check_would(tmp_path, monkeypatch):
    """`without_chance` of a staged page reads the pairs `stage` told (`chance.ToldPairs`) where they
    hold every stored page it asks about: the same pages dropped as its own check of their bits."""
    import random

    from streamdedup.store.signature_store import StoreBatch

    monkeypatch.setattr(chance, "chance_only_pages", lambda *args: {})  # every page looks its candidates up
    original = StoreBatch.without_chance
    read: list[bool] = []

    def without_chance(self, seqs, mine, page=None):
        kept = original(self, seqs, mine, page)
        assert kept == original(self, seqs, mine)  # its own check, asked again
        read.append(page is not None and self._staging is not None and bool(self._staging.chance_told.asked))
        return kept

    monkeypatch.setattr(StoreBatch, "without_chance", without_chance)
    rng = random.Random(12)
    stored = [rng.getrandbits(64) for _ in range(6)]
    with Detector(DetectorConfig(), tmp_path) as detector:
        detector.decide_batch([_synthetic(i, word, rng) for i, word in enumerate(stored)])
        batch = [_synthetic(10 + i, _chance_collision(word, 9 - i, rng), rng) for i, word in enumerate(stored)]
        batch.append(_synthetic(20, stored[2] ^ 0b101, rng))  # a near fingerprint beside them
        detector.decide_batch(batch)
        assert detector.work["candidates_by_chance"] >= 4
    assert sum(read) >= 4


def test_tests_skipped_for_candidates_no_key_of_the_method_found_change_no_verdict(tmp_path, monkeypatch):
    """The Detector does not verify a rule naming exact, SimHash or A12 for a candidate none of
    that method's keys found (`engine.FoundBy`): its verdicts are those of verifying every rule,
    on homogeneous pages whose keys fill (small caps here) and whose pages expire, so that keys
    drain below full while later pages, not filed under them, remain (`DocRecord.unfiled`)."""
    import random
    from datetime import timedelta

    from streamdedup import detector as detector_module
    from streamdedup.fingerprints.a12 import A12Method
    from streamdedup.testing import make_words

    monkeypatch.setattr(candidates, "MAX_POSTINGS_PER_KEY", 5)
    rng = random.Random(8)
    vocabulary = make_words(rng, 800)
    zipf = [1 / rank ** 1.1 for rank in range(1, len(vocabulary) + 1)]
    shared = " ".join(rng.choices(vocabulary, k=40)) + "."  # a long boilerplate sentence: a hot A12 key

    def text() -> list[str]:
        words = rng.choices(vocabulary, zipf, k=rng.randint(150, 260))
        sentences = [" ".join(words[i:i + 12]) + "." for i in range(0, len(words), 12)]
        return sentences + [shared] if rng.random() < 0.5 else sentences

    bodies: list[list[str]] = []
    pages = []
    for i in range(260):
        if bodies and rng.random() < 0.3:  # a copy of a recent page, a word or two changed
            body = list(rng.choice(bodies[-20:]))
            for _ in range(rng.randint(0, 2)):
                j = rng.randrange(len(body))
                body[j] = body[j].replace(body[j].split()[0], rng.choice(vocabulary), 1)
        else:
            body = text()
        bodies.append(body)
        pages.append(page(f"https://forum{i % 7}.example/t/{i}", " ".join(body),
                          f"2024-03-01T{i // 60:02d}:{i % 60:02d}:00Z", content_type="text/plain"))
    asked = {"a12": 0}
    real = A12Method.similarities

    def counting(self, signature, others):
        asked["a12"] += len(others)
        return real(self, signature, others)

    monkeypatch.setattr(A12Method, "similarities", counting)
    config = DetectorConfig(retention=timedelta(minutes=40), batch_size=8)
    runs = {}
    for name, found_by in (("every rule", lambda *args: None), ("FoundBy", detector_module.FoundBy)):
        monkeypatch.setattr(detector_module, "FoundBy", found_by)
        asked["a12"] = 0
        with Detector(config, tmp_path / name) as detector:
            runs[name] = ([o.dedup for o in detector.run(raw_records(pages))], asked["a12"],
                          detector.store.memory.tombstones, detector.work_per_page()["tests_run_mean"])
    (every, every_asked, drained, every_tests), (skipping, skipping_asked, _, tests) = runs["every rule"], runs["FoundBy"]
    assert skipping == every
    assert sum(d["status"] == "duplicate" for d in every) >= 40 and drained > 0  # copies found; keys drained
    assert skipping_asked < 0.75 * every_asked
    assert 0 < tests < 0.75 * every_tests  # summary.json's tests_run_mean counts the tests not run less


def test_an_unfiled_place_names_the_methods_whose_keys_may_stand_there():
    """A page's names sort by method tag first, each method has at most `max_index_keys` keys: a
    place past the bounds of the lower tags' methods may only be a key of a higher one."""
    from streamdedup.fingerprints.registry import create_method
    from streamdedup.store.signature_store import place_bounds

    def may_stand(bounds: dict[int, int | None], place: int) -> set[int]:
        return {tag for tag, bound in bounds.items() if bound is None or place < bound}

    default = {0: create_method("a12"), 1: create_method("exact"), 2: create_method("minhash"), 3: create_method("simhash")}
    bounds = place_bounds(default)  # at most 3, 1, 32 and 10 keys
    assert bounds == {0: 3, 1: 4, 2: 36, 3: 46}
    assert [may_stand(bounds, p) for p in (0, 2, 3, 4, 35, 36, 45, 46)] == [
        {0, 1, 2, 3}, {0, 1, 2, 3}, {1, 2, 3}, {2, 3}, {2, 3}, {3}, {3}, set()]
    unbounded = {0: create_method("exact"), 1: create_method("tf"), 2: create_method("simhash")}  # tf: no bound
    bounds = place_bounds(unbounded)
    assert bounds == {0: 1, 1: None, 2: None}
    assert may_stand(bounds, 0) == {0, 1, 2} and may_stand(bounds, 1) == may_stand(bounds, 99) == {1, 2}  # never exact


def test_an_expiry_in_bulk_leaves_the_table_removing_each_record_left(tmp_path, monkeypatch):
    """`expire` makes a chunk's postings from the raw records at once (`rebuild.unindex_records`);
    the index, the chance check's words and the records left are those the removal record by
    record (`_remove`, which deleting one page still uses) leaves, slot for slot, on pages whose
    keys filled (small caps: records that name keys they were not filed under)."""
    import random
    import shutil
    from datetime import datetime

    from streamdedup.store import layout
    from streamdedup.testing import make_words

    monkeypatch.setattr(candidates, "MAX_POSTINGS_PER_KEY", 5)
    rng = random.Random(12)
    vocabulary = make_words(rng, 600)
    zipf = [1 / rank ** 1.1 for rank in range(1, len(vocabulary) + 1)]
    pages = [page(f"https://forum{i % 5}.example/t/{i}",
                  ". ".join(" ".join(rng.choices(vocabulary, zipf, k=12)) for _ in range(15)) + ".",
                  f"2024-03-01T{i // 60:02d}:{i % 60:02d}:00Z", content_type="text/plain") for i in range(150)]
    with Detector(DetectorConfig(batch_size=16), tmp_path / "bulk") as detector:
        list(detector.run(raw_records(pages)))
        assert any(doc.unfiled for doc in detector.store.iter_docs())
    shutil.copytree(tmp_path / "bulk", tmp_path / "each")
    before = int(datetime(2024, 3, 1, 1, 40, tzinfo=UTC).timestamp() * 1000)  # the first 100 pages
    stores = {}
    for name in ("bulk", "each"):
        detector = Detector(DetectorConfig(), tmp_path / name)
        store = detector.store
        if name == "bulk":
            assert store.expire(before) == 100
        else:
            store._remove([doc for doc in store.iter_docs() if doc.event_ms < before])
        stores[name] = detector
    bulk, each = stores["bulk"].store, stores["each"].store
    for table_of in (lambda s: s.memory.table(), lambda s: s.words.table()):
        assert all(np.array_equal(a, b) for a, b in zip(table_of(bulk), table_of(each), strict=True))
    assert (bulk.memory.postings, bulk.memory.tombstones) == (each.memory.postings, each.memory.tombstones)
    assert bulk.memory.tombstones > 0 and bulk.index_version == each.index_version
    assert [d.seq for d in bulk.iter_docs()] == [d.seq for d in each.iter_docs()] == list(range(100, 150))
    time_keys = [key for key, _ in bulk.db.items(from_key=layout.TIME) if key[:1] == layout.TIME]
    assert len(time_keys) == 50
    for detector in stores.values():
        detector.close()


def test_an_expiry_with_a_budget_removes_a_chunk_a_call_oldest_first_and_drains_to_the_whole_expirys_store(
        tmp_path, monkeypatch):
    """`expire(budget_s=0)` removes one chunk and returns (a backlog is not expired in one call);
    called until it returns 0, it leaves the index, the words and the records that one unbounded
    `expire` leaves."""
    import shutil
    from datetime import datetime

    from streamdedup.store import layout

    monkeypatch.setattr(removal, "_EXPIRE_CHUNK", 7)
    pages = [page(f"https://news{i % 3}.example/{i}", wrap_in_template(make_article(i), f"News {i % 3}"),
                  f"2024-03-01T{i // 60:02d}:{i % 60:02d}:00Z") for i in range(60)]
    with Detector(DetectorConfig(batch_size=16), tmp_path / "whole") as detector:
        list(detector.run(raw_records(pages)))
    shutil.copytree(tmp_path / "whole", tmp_path / "drained")
    before = int(datetime(2024, 3, 1, 0, 45, tzinfo=UTC).timestamp() * 1000)  # the first 45 pages
    with Detector(DetectorConfig(), tmp_path / "whole") as whole, Detector(DetectorConfig(), tmp_path / "drained") as drained:
        assert whole.store.expire(before) == 45
        calls = []
        while removed := drained.store.expire(before, budget_s=0):
            calls.append(removed)
            left = [d.seq for d in drained.store.iter_docs()]
            assert left == list(range(sum(calls), 60))  # oldest first
            time_keys = [key for key, _ in drained.store.db.items(from_key=layout.TIME) if key[:1] == layout.TIME]
            assert [layout.time_key_parts(key)[1] for key in time_keys] == left  # the chunk's time entries removed, no more
        assert calls == [7, 7, 7, 7, 7, 7, 3]
        a, b = whole.store, drained.store
        for table_of in (lambda s: s.memory.table(), lambda s: s.words.table()):
            assert all(np.array_equal(x, y) for x, y in zip(table_of(a), table_of(b), strict=True))
        assert (a.memory.postings, a.memory.tombstones) == (b.memory.postings, b.memory.tombstones)
        assert [d.seq for d in a.iter_docs()] == [d.seq for d in b.iter_docs()] == list(range(45, 60))


def test_expiry_scans_on_from_where_it_ended_and_still_finds_a_later_filed_older_page(tmp_path):
    """`expire` scans the time entries from where its last removal ended (not over the
    tombstones of every entry removed before), and a page filed since under an older time than
    that is still found and expired by the next call, after a restart too (the start is kept in
    the store with the writes that move it)."""
    from datetime import datetime

    from streamdedup.store import layout

    def dated(i: int, day: int) -> dict:
        return page(f"https://news.example/{day}/{i}", wrap_in_template(make_article(200 + day * 10 + i), "News"),
                    f"2024-03-{day:02d}T10:{i:02d}:00Z")

    before = int(datetime(2024, 3, 2, tzinfo=UTC).timestamp() * 1000)
    with Detector(DetectorConfig(batch_size=4), tmp_path) as detector:
        list(detector.run(raw_records([dated(i, 1) for i in range(6)] + [dated(i, 3) for i in range(6)])))
        assert detector.store.expire(before) == 6
        ended = detector.store._time_scan_from
        assert ended > layout.time_bound(int(datetime(2024, 3, 1, 10, 5, tzinfo=UTC).timestamp() * 1000))
    with Detector(DetectorConfig(batch_size=4), tmp_path) as detector:  # kept in the store: a restart starts there
        assert detector.store._time_scan_from == ended
        late = page("https://news.example/late", wrap_in_template(make_article(299), "News"), "2024-03-01T10:02:30Z")
        list(detector.run(raw_records([late])))  # filed under a time older than the last page expired
        assert detector.store._time_scan_from < ended
    with Detector(DetectorConfig(batch_size=4), tmp_path) as detector:  # moved back, in the store too
        store = detector.store
        assert store.expire(before) == 1
        assert store.expire(before) == 0
        assert sorted(d.event_ms for d in store.iter_docs())[0] >= before and len(list(store.iter_docs())) == 6


def _forum_pages(seed: int, count: int = 120) -> list[bytes]:
    """Forum pages of 300 words drawn Zipf from one 800-word vocabulary: every page shares keys with many."""
    import random

    from streamdedup.testing import make_words

    rng = random.Random(seed)
    vocabulary = make_words(rng, 800)
    zipf = [1 / rank ** 1.1 for rank in range(1, len(vocabulary) + 1)]
    return [page(f"https://forum.example/t/{i}", " ".join(rng.choices(vocabulary, zipf, k=300)), "2024-03-01T00:00:00Z",
                 content_type="text/plain") for i in range(count)]
