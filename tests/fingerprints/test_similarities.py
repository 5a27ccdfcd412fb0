"""A page's candidates are verified in one vectorised call per method (`similarities`): it must
give exactly what `similarity` gives pair by pair, matches and misses, on the edges of every test."""

import random

import numpy as np
import pytest

from streamdedup.fingerprints.a12 import A12Method, A12Signature
from streamdedup.fingerprints.exact import ExactMethod
from streamdedup.fingerprints.minhash import MinHashMethod, MinHashParams, MinHashSignature
from streamdedup.fingerprints.simhash import SimHashMethod, popcount64
from streamdedup.verdict.policy import SitePolicy
from streamdedup.verdict.relations import judged


def _pairwise(method, mine, others):
    return [method.similarity(mine, method.decode(data)) for data in others]


def _same(vectorised, pairwise):
    assert len(vectorised) == len(pairwise)
    for got, want in zip(vectorised.tolist(), pairwise, strict=True):
        assert (np.isnan(got) and want is None) or got == want, (got, want)


def _minhash_cases(method, rng):
    dtype = method._dtype
    base = rng.integers(0, np.iinfo(dtype).max, size=128, dtype=dtype)
    checks = method.bands if method.params.band_check_bits else 0
    mine = MinHashSignature(base, 400, rng.integers(0, 256, size=checks, dtype=np.uint8))
    others = []
    for _ in range(400):
        values = base.copy()
        changed = rng.choice(128, size=int(rng.integers(0, 128)), replace=False)
        values[changed] = rng.integers(0, np.iinfo(dtype).max, size=len(changed), dtype=dtype)
        size = int(rng.choice([0, 1, 50, 99, 100, 101, 200, 400, 800, 5000]))
        others.append(method.encode(MinHashSignature(values, size, rng.integers(0, 256, size=checks, dtype=np.uint8))))
    return mine, others


@pytest.mark.parametrize("params", [MinHashParams(), MinHashParams(containment=1.0),
                                    MinHashParams(containment_min_shingles=0, containment=0.5),
                                    MinHashParams(value_bits=16, band_check_bits=0),
                                    MinHashParams(value_bits=32, threshold=0.8)])
def test_minhash_similarities_equal_pair_by_pair(params):
    method, rng = MinHashMethod(params), np.random.default_rng(5)
    mine, others = _minhash_cases(method, rng)
    pairwise = _pairwise(method, mine, others)
    assert sum(v is not None for v in pairwise) > 20 and sum(v is None for v in pairwise) > 20
    _same(method.similarities(mine, others), pairwise)
    _same(method.similarities(mine, []), [])


@pytest.mark.parametrize("params", [MinHashParams(), MinHashParams(containment_min_shingles=0),
                                    MinHashParams(value_bits=16, band_check_bits=0)])
def test_minhash_containment_is_the_smaller_pages_share_estimated_pair_by_pair(params):
    """`minhash.containment`: |A∩B| / min(|A|, |B|) from the Jaccard estimate, whatever the
    Jaccard, and NaN where the smaller page is under `containment_min_shingles`; the same from the
    encoded array path and from signatures of mixed sizes (decoded one by one)."""
    method, rng = MinHashMethod(params), np.random.default_rng(9)
    mine, others = _minhash_cases(method, rng)
    got = method.measure_similarities("containment", mine, others)
    floor = max(1, params.containment_min_shingles)
    for value, data in zip(got.tolist(), others, strict=True):
        other = method.decode(data)
        if min(other.set_size, mine.set_size) < floor:
            assert np.isnan(value)
        else:
            want = method.containment_of_smaller(method.jaccard(mine, other), mine.set_size, other.set_size)
            assert value == pytest.approx(want, abs=1e-12)
    assert np.nanmax(got) == 1.0 and np.nanmin(got) < 0.3 and np.isnan(got).any()  # sizes 0 and 1-99 among them
    mixed = [*others[:5], method.encode(MinHashSignature(mine.values[:64], 300, mine.checks))]  # another num_perm: not comparable
    assert np.array_equal(method.measure_similarities("containment", mine, mixed)[:5], got[:5], equal_nan=True)
    assert np.isnan(method.measure_similarities("containment", mine, mixed)[5])
    with pytest.raises(ValueError, match="minhash has no measure 'overlap'; it has: containment"):
        method.measure_similarities("overlap", mine, others)


def test_simhash_similarities_equal_pair_by_pair():
    method, rng = SimHashMethod(), random.Random(3)
    mine = rng.getrandbits(64)
    others = [method.encode(mine ^ sum(1 << b for b in rng.sample(range(64), rng.randint(0, 8)))) for _ in range(300)]
    pairwise = _pairwise(method, mine, others)
    assert sum(v is not None for v in pairwise) > 20 and sum(v is None for v in pairwise) > 20
    _same(method.similarities(mine, others), pairwise)
    values = np.array([0, 1, 2**64 - 1, 2**63, 0xF0F0], dtype=np.uint64)
    assert popcount64(values).tolist() == [0, 1, 64, 1, 8]


def test_exact_similarities_equal_pair_by_pair():
    method = ExactMethod()
    others = [b"a" * 16, b"b" * 16, b"a" * 15, b"a" * 16]
    _same(method.similarities(b"a" * 16, others), _pairwise(method, b"a" * 16, others))
    assert method.similarities(b"a" * 16, []).shape == (0,)


def test_a12_similarities_equal_pair_by_pair():
    method, rng = A12Method(), random.Random(7)
    pool = [rng.getrandbits(64) for _ in range(8)]

    def signature():
        n_ss, n_ws = rng.choice([3, 3, 3, 2, 1]), rng.choice([5, 5, 5, 4])
        ws = tuple(rng.sample(pool, n_ws)) if rng.random() < 0.9 else tuple(rng.choice(pool) for _ in range(n_ws))
        sentences = rng.choice([1, rng.randint(4, 8)])
        return A12Signature(rng.randint(90, 120), sentences, tuple(rng.sample(pool[:4], n_ss)), ws)

    mines = [A12Signature(100, 6, tuple(pool[:3]), tuple(pool[3:8])), A12Signature(100, 5, tuple(pool[1:4]), tuple(pool[:5])),
             A12Signature(100, 1, (pool[0],), tuple(pool[:4])), A12Signature(105, 7, tuple(pool[:3]), (pool[0],) * 3 + (pool[1],)),
             A12Signature(100, 1, (pool[1],), ())]
    others = [method.encode(signature()) for _ in range(600)] + [method.encode(A12Signature(100, 1, (pool[1],), ()))]
    for mine in mines:
        pairwise = _pairwise(method, mine, others)
        assert sum(v is not None for v in pairwise) > 5 and sum(v is None for v in pairwise) > 20
        _same(method.similarities(mine, others), pairwise)


def many(docs):
    """`StoreBatch.docs_of` over a dict of DocRecords by seq."""
    return lambda seqs: [docs.get(seq) for seq in seqs]


def _engine_case():
    """A page, 400 stored candidates (and the page itself, and one not stored) of the four default
    methods, a policy of four rules and a site policy: (methods, policy, mine, docs, page, seqs)."""
    from streamdedup.store.layout import DocRecord

    minhash, simhash, a12, exact = MinHashMethod(), SimHashMethod(), A12Method(), ExactMethod()
    methods = {"exact": (0, exact), "minhash": (1, minhash), "simhash": (2, simhash), "a12": (3, a12)}
    policy = SitePolicy.parse("exact|minhash>=0.7|simhash+a12|a12>=0.99+minhash", "exact|minhash>=0.8")
    rng, np_rng = random.Random(11), np.random.default_rng(11)
    mh_mine, mh_others = _minhash_cases(minhash, np_rng)
    pool = [rng.getrandbits(64) for _ in range(6)]
    mine = {0: b"x" * 16, 1: mh_mine, 2: rng.getrandbits(64), 3: A12Signature(100, 6, tuple(pool[:3]), tuple(pool[:5]))}
    docs = {}
    for seq in range(400):
        signatures = {0: b"x" * 16 if rng.random() < 0.05 else b"y" * 16, 1: mh_others[seq],
                      2: simhash.encode(mine[2] ^ sum(1 << b for b in rng.sample(range(64), rng.randint(0, 5)))),
                      3: a12.encode(A12Signature(rng.randint(95, 110), 6, tuple(rng.sample(pool, 3)), tuple(pool[:5])))}
        for tag in rng.sample(range(4), rng.choice([0, 0, 0, 1])):  # a method that abstained on the candidate
            del signatures[tag]
        docs[seq] = DocRecord(seq, f"p{seq}", 1000 + seq, f"p{seq}", "", signatures, site=rng.choice([1, 2]))
    docs[5] = DocRecord(5, "me", 1005, "me", "", {}, site=1)  # the page itself
    page = DocRecord(0, "me", 2000, "", site=1)
    seqs = list(range(400)) + [999]  # 999: not stored (expired or deleted)
    return methods, policy, mine, docs, page, seqs


def test_the_engine_judges_as_the_policy_does_candidate_by_candidate():
    """Batched verification (each rule's methods over all still-undecided candidates) gives every
    candidate the first rule of its policy that holds, the rule's first similarity, and keeps the
    candidates' order; own-site candidates meet the site policy during the cold start: some of
    them (the page of site 1), none (site 3) or all (every candidate moved to site 1)."""
    from dataclasses import replace

    methods, policy, mine, two_sites, mixed, seqs = _engine_case()
    own = {seq: replace(doc, site=1) for seq, doc in two_sites.items()}
    for docs, page, template_known in [(d, p, known) for d, p in ((two_sites, mixed), (two_sites, replace(mixed, site=3)),
                                                                  (own, mixed)) for known in (False, True)]:
        got = [(j.seq, j.doc, (j.rule, j.similarity)) for j in judged(seqs, many(docs), policy, methods, page, mine,
                                                                          template_known, oldest_ms=1010)]
        want = []
        for seq in seqs:
            other = docs.get(seq)
            if other is None or other.page_id == "me" or other.event_ms < 1010:
                continue
            values = {name: None if tag not in other.signatures else method.similarity(mine[tag], method.decode(other.signatures[tag]))
                      for name, (tag, method) in methods.items()}
            rule = policy.judge(values.get, other.site == page.site and not template_known)
            if rule is not None:
                want.append((seq, other, rule))
        assert got == want
        site_policy_only = docs is own and not template_known  # its two rules, else at least three of four
        assert len({rule for _, _, (rule, _) in want}) >= (2 if site_policy_only else 3) and 10 < len(want) < 380


def test_a_rule_whose_test_cannot_pass_is_not_run_and_the_verdicts_are_the_same(monkeypatch):
    """`FoundBy`: a candidate none of the page's exact, SimHash or A12 keys found cannot pass that
    method's test (every match shares a key), so rules naming it are not verified for it; unless
    the candidate was not filed under all its keys (`DocRecord.unfiled`), which may hide it."""
    from dataclasses import replace

    from streamdedup.verdict.found_by import FoundBy

    methods, policy, mine, docs, page, seqs = _engine_case()
    complete = {tag: method for tag, method in methods.values() if method.keys_find_every_match}
    assert sorted(complete) == [0, 2, 3]  # exact, SimHash, A12; not MinHash's LSH bands
    mine_keys = {tag: set(method.index_keys(mine[tag])) for tag, method in complete.items()}
    found = {tag: {seq for seq, doc in docs.items() if tag in doc.signatures
                   and mine_keys[tag] & set(method.index_keys(method.decode(doc.signatures[tag])))}
             for tag, method in complete.items()}
    # candidates that match by a rule naming A12, as if they were not filed under their A12 keys (full)
    plain = list(judged(seqs, many(docs), policy, methods, page, mine, True, oldest_ms=1010))
    hidden = [j.seq for j in plain if "a12" in j.rule][:15]
    assert len(hidden) == 15
    found[3] -= set(hidden)
    hiding = dict(docs)
    for seq in hidden:
        hiding[seq] = replace(docs[seq], unfiled=(0,))
    asked = {name: 0 for name in methods}
    for name, (_, method) in methods.items():
        def counting(signature, others, _name=name, _real=method.similarities):
            asked[_name] += len(others)
            return _real(signature, others)
        monkeypatch.setattr(method, "similarities", counting)
    by = FoundBy(found, {3: None})  # a record with any unfiled place may not be filed under all its A12 keys
    for template_known in (False, True):
        asked.update(dict.fromkeys(asked, 0))
        want = list(judged(seqs, many(hiding), policy, methods, page, mine, template_known, oldest_ms=1010))
        every = dict(asked)  # candidates asked of each method without FoundBy
        asked.update(dict.fromkeys(asked, 0))
        got = list(judged(seqs, many(hiding), policy, methods, page, mine, template_known, 1010, by))
        assert got == want
        assert asked["exact"] < every["exact"] / 2 and asked["a12"] <= every["a12"], (asked, every)
        assert asked["simhash"] < every["simhash"]  # not for those no A12 key found: their rule cannot hold
        assert asked["minhash"] == every["minhash"]  # its bands miss some matches: always asked
        # without the unfiled marks the hidden candidates' A12 rules are not verified: the marks keep them
        unmarked = list(judged(seqs, many(docs), policy, methods, page, mine, template_known, 1010, by))
        assert unmarked != want


class _CountingSignatures(dict):
    """A record's signatures that count how often each method's is read."""

    def __init__(self, *args, reads):
        super().__init__(*args)
        self.reads = reads

    def get(self, tag, default=None):
        self.reads[tag] += 1
        return super().get(tag, default)

    def __getitem__(self, tag):
        self.reads[tag] += 1
        return super().__getitem__(tag)

    def __contains__(self, tag):
        self.reads[tag] += 1
        return super().__contains__(tag)


def test_each_candidates_signature_of_a_method_is_read_once_a_page():
    """`SignatureColumns`: the policy's tests, the new-text measure and its runs ask the same
    methods of the same candidates; each candidate's signature of a method is read once a page
    (before: MinHash's three times for a matched candidate), and the judgements do not change."""
    from collections import Counter
    from dataclasses import replace

    from streamdedup.fingerprints.wordpairs import WordPairsMethod, WordPairsSignature

    methods, policy, mine, docs, page, seqs = _engine_case()
    pairs = WordPairsMethod()
    methods = {**methods, "wordpairs": (4, pairs)}
    rng = np.random.default_rng(5)
    mine = {**mine, 4: WordPairsSignature(rng.integers(0, 256, 64, dtype=np.uint8), 300)}
    plain, counted, reads = {}, {}, {}
    for seq, doc in docs.items():
        signatures = dict(doc.signatures)
        if signatures:
            signatures[4] = pairs.encode(WordPairsSignature(rng.integers(0, 256, 64, dtype=np.uint8), int(rng.integers(50, 400))))
        plain[seq] = replace(doc, signatures=signatures)
        reads[seq] = Counter()
        counted[seq] = replace(doc, signatures=_CountingSignatures(signatures, reads=reads[seq]))
    want = list(judged(seqs, many(plain), policy, methods, page, mine, True, oldest_ms=1010))
    got = list(judged(seqs, many(counted), policy, methods, page, mine, True, oldest_ms=1010))
    assert [(j.seq, j.rule, j.relation, j.new_share) for j in got] == [(j.seq, j.rule, j.relation, j.new_share) for j in want]
    assert sum(1 for j in want if j.rule.startswith("minhash")) > 10  # matched: `_in_runs` asks MinHash of them again
    assert max(n for r in reads.values() for n in r.values()) == 1


def test_a_column_reads_each_records_value_once_and_none_where_missing():
    """`SignatureColumns.column` (read by `map`, going on past a record without the tag) equals `get` record by record."""
    from streamdedup.verdict.columns import SignatureColumns

    rng = random.Random(3)
    for _ in range(300):
        records = [{1: b"a%d" % i, 2: b"b"} if rng.random() < 0.7 else {2: b"x"} for i in range(rng.randint(0, 12))]
        want = [record.get(1) for record in records]
        assert SignatureColumns(records).column(1) == (want, None not in want)


def test_new_shares_read_each_record_at_its_offset_past_its_paragraphs():
    """`WordPairsMethod.new_shares` of records with paragraph sketches equals that of the records cut before them.

    And a record shorter than a whole one reads NaN, the others as if alone."""
    from streamdedup.fingerprints.wordpairs import WordPairsMethod, WordPairsSignature

    method = WordPairsMethod()
    rng = np.random.default_rng(11)
    width = method._record.itemsize

    def signature(paragraphs: int) -> WordPairsSignature:
        return WordPairsSignature(rng.integers(0, 256, width - 4, dtype=np.uint8), int(rng.integers(50, 400)),
                                  rng.integers(0, 1 << 48, paragraphs, dtype=np.uint64))

    mine = signature(3)
    others = [method.encode(signature(int(rng.integers(0, 6)))) for _ in range(40)]
    assert any(len(data) > width for data in others) and any(len(data) == width for data in others)
    got = method.new_shares(mine, others)
    want = method.new_shares(mine, [data[:width] for data in others])
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)
    short = method.new_shares(mine, [others[0], others[1][: width - 1], others[2]])
    assert np.isnan(short[0][1]) and short[2][1] == 0
    np.testing.assert_array_equal(short[0][[0, 2]], got[0][[0, 2]])


def test_own_site_other_documents_at_once_as_one_by_one():
    """`relations._own_site_other_documents` agrees with `_own_site_other_document` candidate by candidate."""
    from streamdedup.store.layout import DocRecord
    from streamdedup.verdict.relations import _own_site_other_document, _own_site_other_documents

    rng = random.Random(7)
    sites, documents = [0, 5, (1 << 64) - 1], [0, 9, (1 << 63) + 1]
    for _ in range(200):
        page = DocRecord(0, "p", 0, "p", site=rng.choice(sites), document=rng.choice(documents))
        others = [DocRecord(i, f"o{i}", 0, f"o{i}", site=rng.choice(sites), document=rng.choice(documents))
                  for i in range(rng.randint(0, 8))]
        assert _own_site_other_documents(page, others).tolist() == [_own_site_other_document(page, o) for o in others]


def test_a_few_rows_of_a_column_are_read_alone_and_once():
    """`SignatureColumns.present` of a few candidates, the column not read yet, reads their records
    only, each once however often asked; the column read whole after gives the same values."""
    from collections import Counter

    from streamdedup.verdict.columns import FEW_ROWS, SignatureColumns

    reads = [Counter() for _ in range(40)]
    records = [_CountingSignatures({1: b"a%d" % i} if i % 7 else {2: b"b"}, reads=reads[i]) for i in range(40)]
    columns = SignatureColumns(records)
    asked = np.array([3, 7, 9, 14], dtype=np.int64)
    assert len(asked) * FEW_ROWS < len(records)
    for _ in range(2):
        rows, data = columns.present(1, asked)
        assert rows.tolist() == [3, 9] and data == [b"a3", b"a9"]  # 7 and 14 have none
    assert [i for i, r in enumerate(reads) if r[1]] == [3, 7, 9, 14] and max(r[1] for r in reads) == 1
    rows, data = columns.present(1, np.arange(40))
    assert rows.tolist() == [i for i in range(40) if i % 7] and data == [b"a%d" % i for i in range(40) if i % 7]
