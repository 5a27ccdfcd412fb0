"""(d) a text whose k-shingle hashes all fall in the first half of `first_seen`'s table (public hashes):
one run of n filled slots, ~n^2/4 probes. Time `Document.shingle_set(k)` against a random text of the same words."""

import sys
import time

import numpy as np

from streamdedup.hash_arrays import _FIBONACCI, first_seen
from streamdedup.jit import numba
from streamdedup.tokens.document import Document
from streamdedup.tokens.hashing import mix_one


@numba.njit(cache=True)
def craft(vocab_hashes, n_tokens, k, bits, window, seed):
    np.random.seed(seed)
    out = np.empty(n_tokens, dtype=np.int64)
    for i in range(n_tokens):
        for _ in range(10000000):
            w = np.random.randint(0, len(vocab_hashes))
            if i < k - 1:
                break
            acc = vocab_hashes[out[i - k + 1]]
            for j in range(i - k + 2, i):
                acc = acc * np.uint64(0x9E3779B97F4A7C15) + vocab_hashes[out[j]]
            acc = acc * np.uint64(0x9E3779B97F4A7C15) + vocab_hashes[w]
            slot = (mix_one(acc) * np.uint64(_FIBONACCI)) >> np.uint64(64 - bits)
            if slot < window:
                break
        out[i] = w
    return out


def main(chars, k):
    letters = "bcdfgklmnprstvz"
    vocab = [a + b + c + d for a in letters for b in "aeiou" for c in letters for d in "aeiou"]  # 5,625 words
    vdoc = Document.from_text(" ".join(vocab), None)
    assert vdoc.tokens == vocab
    vh = np.ascontiguousarray(vdoc.token_hashes, dtype=np.uint64)
    n_tokens = chars // 5
    n = n_tokens - k + 1
    bits = 4
    while (1 << bits) < 2 * n:
        bits += 1
    for name, window in (("random", 1 << bits), ("crafted-n", n), ("crafted-w", max(1, (1 << bits) >> 9))):
        ids = craft(vh, n_tokens, k, bits, window, 7)
        text = " ".join(vocab[i] for i in ids)[:chars]
        doc = Document.from_text(text, "en")
        sh = doc.all_shingles(k)
        sl = (sh * np.uint64(_FIBONACCI)) >> np.uint64(64 - bits)
        print("share of slots < n:", float(np.mean(sl < n)), "bits", bits, "chars/token", len(text) / n_tokens)
        times = []
        for _ in range(int(sys.argv[3]) if len(sys.argv) > 3 else 3):
            t = time.process_time()
            first_seen(sh)
            times.append(time.process_time() - t)
        print(
            f"{name}: {len(text)} chars, {doc.num_tokens} tokens, {len(sh)} k={k} shingles, "
            f"{len(first_seen(sh))} distinct, first_seen median {sorted(times)[len(times) // 2] * 1000:.1f} CPU ms",
            flush=True,
        )


main(int(sys.argv[1]), int(sys.argv[2]))
