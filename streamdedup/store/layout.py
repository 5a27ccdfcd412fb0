"""The key layout of the store, in one place.

One RocksDB, and the index in memory.

RocksDB column family "default", keys distinguished by a 1-byte prefix:

    M<name>                        -> meta value (config, counters, watermark)            [meta]
    D<seq:8>                       -> DocRecord: id, event time, cluster, signatures       [docs]
    T<event ms:8><seq:8>           -> b""   event-time index, for retention                [time]
    V<topic>:<partition>@<offset:20> -> record digest + verdict the Faust app emitted      [journal]
    S<xxh3-64(site):8>             -> the site's template model (clean/template.py)        [templates]
    L<xxh3-64(site):8>             -> the site's learned layout (clean/learned_layout.py)  [templates]

The index (`memory_index`), every name 6 bytes, rebuilt from the DocRecords when the store opens:

    <method tag:1><index key:5>    -> seqs filed under the key, oldest first               [postings]
    <0xff><xxh3-64(page id):5>     -> seqs of the pages with that id hash                  [ids]

seq is the page's arrival number (big-endian, so prefix scans return pages oldest first).

Until schema 3 the index was a RocksDB column family "index" (postings as varint values); it is
still opened, empty, so that an older store opens far enough to be refused by its schema. The
batch's view of a name is its postings value (`seqs_value`): a page adds itself by appending its
seq inside its batch, and the table takes the new postings when the batch is written. Index keys are hashed to 5 bytes
(the first 5 of xxh3-64; keys of 8 bytes, already random, are cut): a collision only adds a
candidate, which verification rejects (since schema 4, 9-byte keys are mixed by splitmix64 in
one array pass rather than hashed one by one), and at 10 M pages x 32 MinHash bands a lookup meets another
key's postings once in ~3,400. The 3 bytes less per key are ~3 bytes less per entry on disk:
neighbouring keys of a sorted table already share their first ~3 bytes (RocksDB's delta encoding),
so a key's own bytes were 5 of 8 and are 2 of 5. Page ids are hashed likewise; the DocRecord holds
the id itself, so a lookup checks it.

The reverse index from a page to its index keys is its DocRecord: the keys are a pure function of
the stored signatures and the store's frozen method parameters, so they are recomputed, not stored.
The record names only the keys the page was *not* filed under (full keys: `unfiled`, places in
the sorted names, usually none), so the rebuilt index is exactly the one the pages made.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import xxhash


def method_tags(names: Sequence[str]) -> dict[str, int]:
    """The 1-byte tag of each method in the store's keys (by sorted name).

    Routing that must agree with a store's keys (the scale-out index partitions) uses this same
    rule."""
    return {name: tag for tag, name in enumerate(sorted(names))}

META, DOC, TIME, JOURNAL, TEMPLATE, LAYOUT = b"M", b"D", b"T", b"V", b"S", b"L"
INDEX_CF = "index"
HASH_BYTES = 5
INDEX_KEY_SIZE = 1 + HASH_BYTES
ID_TAG = 0xFF  # page ids share the index column family under a tag no method gets
# A record's document key (`DocRecord.document`) is written among its signatures under a tag no
# method gets: records written before it have none (0), and every reader skips unknown tags.
DOCUMENT_TAG = 0xFE
_DOCUMENT = struct.Struct("<Q")
_DOCUMENT_FIELD = struct.Struct("<BBQ")  # DOCUMENT_TAG, the field's size, the key
# So is a rescued page's steered signature (`DocRecord.steered`), where its record keeps one.
STEERED_TAG = 0xFD
# So are the encoded word pairs of the lines its site showed before (`DocRecord.shown`), which only
# the global topology's index partitions keep: there a page can be filed before an earlier one arrives
SHOWN_TAG = 0xFC
# So is the cluster a cluster's first page was merged into (`DocRecord.merged_into`), on that page's record only
MERGED_TAG = 0xFB
# So is the mark of a digest (`DocRecord.digest`), on that page's record only: 1 its stories overlap
# (`DocRecord.overlapping`, the only value rules 33 to 35 wrote), 2 they do not
OVERLAPPING_TAG = 0xFA
_OVERLAPPING_FIELD = bytes((OVERLAPPING_TAG, 1, 1))  # the tag, the field's size, 1
_DIGEST_FIELD = bytes((OVERLAPPING_TAG, 1, 2))
_TAGS = [bytes((tag,)) for tag in range(256)]
_SEQ = struct.Struct(">Q")
_TIME_OFFSET = 1 << 63  # event ms may be negative (pre-1970): shift into unsigned order
_HEAD = struct.Struct("<qQ")


def journal_key(name: str) -> bytes:
    """The key of a journal entry."""
    return JOURNAL + name.encode()


def template_key(site_hash: int) -> bytes:
    """The key of a site's template model."""
    return TEMPLATE + _SEQ.pack(site_hash)


def layout_key(site_hash: int) -> bytes:
    """A site's learned layout, written whole beside its template (stores before it have none: learned anew)."""
    return LAYOUT + _SEQ.pack(site_hash)


_TEMPLATE_DELTA_KEY = struct.Struct(">cQI")


def template_delta_key(site_hash: int, n: int) -> bytes:
    """A site's n-th delta record after its whole one: its key (`template_key`), then n, in order."""
    return _TEMPLATE_DELTA_KEY.pack(TEMPLATE, site_hash, n)


def seq_bytes(seq: int) -> bytes:
    """A seq as the 8 big-endian bytes keys end with."""
    return _SEQ.pack(seq)


def seq_from(data: bytes) -> int:
    """The seq a key ends with (`seq_bytes`)."""
    return _SEQ.unpack(data[-8:])[0]


def meta_key(name: str) -> bytes:
    """The key of a meta entry (the store's counters and settings)."""
    return META + name.encode()


_DOC_KEY = struct.Struct(">cQ")
_TIME_KEY = struct.Struct(">cQQ")


def doc_key(seq: int) -> bytes:
    """The key of a page's record: its seq, so records scan in arrival order."""
    return _DOC_KEY.pack(DOC, seq)


def page_id_key(page_id: str) -> bytes:
    """The index name of a page id (`page_id_key_of` its UTF-8 bytes)."""
    return page_id_key_of(page_id.encode("utf-8", "surrogatepass"))


def page_id_key_of(page_id: bytes) -> bytes:
    """`page_id_key` of an id as its record holds it (UTF-8, surrogates passed)."""
    return _TAGS[ID_TAG] + xxhash.xxh3_64_digest(page_id)[:HASH_BYTES]


def index_key(tag: int, key: bytes) -> bytes:
    """The method's tag byte and its index key in exactly `HASH_BYTES` bytes (`index_names`)."""
    return index_names(tag, [key])[0]


_KEY9 = np.dtype([("first", "u1"), ("rest", "<u8")])


def index_names(tag: int, keys: Sequence[bytes]) -> list[bytes]:
    """Each key as the index names it: the tag byte and `HASH_BYTES` bytes.

    An 8-byte key, a random hash already, is cut; a 9-byte key (a band or table number and 64 bits:
    MinHash bands, SimHash tables) is mixed by splitmix64, all of them in one pass of array
    operations; others are hashed by xxh3-64."""
    if not keys:
        return []
    if set(map(len, keys)) == {9}:
        data = names9(tag, b"".join(keys)).tobytes()
        return [data[i: i + INDEX_KEY_SIZE] for i in range(0, len(data), INDEX_KEY_SIZE)]
    head = _TAGS[tag]
    return [head + (key if len(key) == 8 else xxhash.xxh3_64_digest(key))[:HASH_BYTES] for key in keys]


def names9(tag: int, keys: bytes | np.ndarray) -> np.ndarray:
    """9-byte keys back to back (`bytes` or uint8) as `index_names` names them.

    One uint8 row of `INDEX_KEY_SIZE` bytes each, the tag byte and the first `HASH_BYTES` of the
    key's splitmix64."""
    parts = np.frombuffer(keys, dtype=_KEY9)
    z = _splitmix(parts["rest"], parts["first"])
    names = np.empty((len(parts), INDEX_KEY_SIZE), dtype=np.uint8)
    names[:, 0] = tag
    names[:, 1:] = z.astype("<u8").view(np.uint8).reshape(-1, 8)[:, :HASH_BYTES]
    return names


def name_ints_of_keys(tag: int, keys: np.ndarray) -> np.ndarray:
    """The `index_names` of keys of one size as 48-bit integers, made without the names' bytes.

    `index_names` of keys of one size (uint8 rows) as 48-bit integers (`memory_index.name_ints`),
    made without the names' bytes: the tag in the top byte, then the first `HASH_BYTES` bytes of
    the name's hash as a big-endian number. Of a little-endian 64-bit word w (an 8-byte key, the
    mix of a 9-byte one) those bytes are `w.byteswap() >> 24`; of an xxh3-64 digest (big-endian),
    the hash's top bits."""
    top = np.uint64(tag) << np.uint64(8 * HASH_BYTES)
    shift = np.uint64(8 * (8 - HASH_BYTES))
    width = keys.shape[1]
    if width == 9:
        parts = np.frombuffer(np.ascontiguousarray(keys).tobytes(), dtype=_KEY9)
        words = _splitmix(parts["rest"], parts["first"])
    elif width == 8:
        words = np.ascontiguousarray(keys).view("<u8").ravel().astype(np.uint64)
    else:
        data = np.ascontiguousarray(keys).tobytes()
        hashed = np.fromiter(map(xxhash.xxh3_64_intdigest, (data[i: i + width] for i in range(0, len(data), width))),
                             dtype=np.uint64, count=len(keys))
        return top | (hashed >> shift)
    return top | (words.byteswap() >> shift)


def _splitmix(rest: np.ndarray, first: np.ndarray) -> np.ndarray:
    """The 9-byte keys' mix (`names9`): splitmix64's finaliser of the 64 bits, the first byte folded in."""
    z = rest ^ (first.astype(np.uint64) * np.uint64(0xD6E8FEB86659FD93))
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def time_key(event_ms: int, seq: int) -> bytes:
    """The key that orders a page by event time for expiry: its time, then its seq."""
    return _TIME_KEY.pack(TIME, event_ms + _TIME_OFFSET, seq)


def time_bound(event_ms: int) -> bytes:
    """The first time key at or after `event_ms`: where an expiry scan stops."""
    return TIME + _SEQ.pack(event_ms + _TIME_OFFSET)


def time_key_parts(key: bytes) -> tuple[int, int]:
    """The event time and seq a time key holds."""
    event, seq = struct.unpack(">QQ", key[1:17])
    return event - _TIME_OFFSET, seq


# -- postings: seqs as LEB128 varints (3 bytes up to 2 M pages, 5 up to 34 G) -----------------
_VARINT_ENDS = bytes(range(0x80))  # deleting these leaves a varint's continuation bytes


_SMALL_VARINTS = [bytes((n,)) for n in range(0x80)]


def varint(n: int) -> bytes:
    """A non-negative int as a LEB128 varint."""
    if n < 0x80:
        return _SMALL_VARINTS[n] if n >= 0 else bytes((n,))  # (a negative n raises, as it did)
    if n < 0x4000:
        return bytes(((n & 0x7F) | 0x80, n >> 7))
    if n < 0x20_0000:
        return bytes(((n & 0x7F) | 0x80, ((n >> 7) & 0x7F) | 0x80, n >> 14))
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """The varint at `pos` and the position after it."""
    n = shift = 0
    while True:
        b = data[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        if not b & 0x80:
            return n, pos
        shift += 7


def seqs_from(value: bytes | None, limit: int = 0) -> list[int]:
    """The seqs of a postings value, oldest first (`limit`: only the first so many, the rest not decoded)."""
    if not value:
        return []
    seqs, n, shift = [], 0, 0
    for b in value:
        n |= (b & 0x7F) << shift
        if b & 0x80:
            shift += 7
        else:
            seqs.append(n)
            if len(seqs) == limit:
                break
            n = shift = 0
    return seqs


def postings_count(value: bytes) -> int:
    """How many seqs a postings value holds (one varint ends at each byte below 0x80)."""
    return len(value) - len(value.translate(None, _VARINT_ENDS))


def seqs_value(seqs: list[int]) -> bytes:
    """A postings value: the seqs as varints, back to back."""
    return b"".join(map(varint, seqs))


def grouped_seqs_values(seqs: np.ndarray, counts: np.ndarray) -> tuple[list[list[int]], list[bytes]]:
    """Each group's seqs ascending and their postings value (`seqs_value`), for groups back to back.

    `seqs` holds the groups one after another, `counts[i]` seqs the i-th (as `MemoryIndex.found_ints`
    gives them). The varints of every group are made in one array pass: a batch's stored names hold
    ~10 seqs each, and one `varint` call a seq was most of `StoreBatch.stage`'s encoding."""
    counts = np.asarray(counts, dtype=np.int64)
    seqs = np.asarray(seqs, dtype=np.uint64)[: int(counts.sum())]
    group = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    if len(seqs) and int(seqs.max()) < 1 << 40 and len(counts) < 1 << 24:
        # by group, then ascending: one sort of (group, seq) as one integer, ~30x faster than lexsort
        ordered = np.sort((group.astype(np.uint64) << np.uint64(40)) | seqs) & np.uint64((1 << 40) - 1)
    else:
        ordered = seqs[np.lexsort((seqs, group))]
    sizes = np.ones(len(ordered), dtype=np.int64)  # each seq's varint length
    for shift in range(7, 64, 7):
        sizes += ordered >= np.uint64(1 << shift)
    width = int(sizes.max()) if len(sizes) else 0
    bytes_of = np.empty((len(ordered), width), dtype=np.uint8)
    for k in range(width):  # byte k of each varint: 7 bits, the high bit set on all but its last
        low = ((ordered >> np.uint64(7 * k)) & np.uint64(0x7F)).astype(np.uint8)
        bytes_of[:, k] = low | ((k < sizes - 1).astype(np.uint8) << np.uint8(7))
    encoded = bytes_of[np.arange(width) < sizes[:, None]].tobytes()  # row by row: the varints in order
    ends = np.cumsum(counts).tolist()
    byte_ends = np.concatenate([[0], np.cumsum(sizes)])[ends].tolist()
    flat = ordered.tolist()
    starts, byte_starts = [0, *ends][:-1], [0, *byte_ends][:-1]
    return ([flat[a:b] for a, b in zip(starts, ends, strict=True)],
            [encoded[a:b] for a, b in zip(byte_starts, byte_ends, strict=True)])


def without_seq(value: bytes | None, seq: int) -> bytes:
    """A postings value with one page taken out (b"": none left, delete the key)."""
    return seqs_value([s for s in seqs_from(value) if s != seq])


@dataclass(slots=True)
class DocRecord:
    """What the store keeps per page: enough to verify a candidate and to remove the page.

    Encoded compactly: event time and site hash fixed, lengths as varints, the cluster id left out
    when it is the page's own id (every first page of a cluster).
    """

    seq: int
    page_id: str
    event_ms: int
    cluster_id: str
    duplicate_of: str = ""
    signatures: dict[int, bytes] = field(default_factory=dict)  # method tag -> encoded signature
    site: int = 0  # xxh3-64 of the page's site (same-site candidates are judged more strictly)
    # places, in its sorted index names, of the keys it was not filed under (full): ascending, as
    # the store makes them and reads them back (the engine reads the first, `found_by.found_members_of`)
    unfiled: tuple[int, ...] = ()
    document: int = 0  # xxh3-64 of its URL without fragment (`clean.template.document_key`); 0: not known
    # the encoded MinHash signature of its article element's own text, where extraction's rescue
    # replaced that text (`verdict.relations._steered_agree`); b"": none
    steered: bytes = b""
    # the encoded word pairs of the lines its site showed before (`wordpairs.with_shown_lines`), kept
    # where a page earlier than it may arrive after it is filed (the index partitions); b"": none
    shown: bytes = b""
    # of a cluster's first page: the cluster (its first page's id) a later page merged its cluster into
    # (`StoreBatch.merge`), as the store knew it then; "": none. Read by `StoreBatch.story_of`
    merged_into: str = ""
    # of a cluster's first page: it is a digest two of whose stories were each most of it
    # (`engine.digest_of_overlapping`), a cluster no later copy bridges for being most of it; read by
    # `StoreBatch.overlapping`. Records of rules before version 33 have none
    overlapping: bool = False
    # a digest of any stories (`engine.started_digest`; `overlapping` is one), or a page joining its cluster after
    # it: a cluster no later page of its site bridges for being of its site; read by `StoreBatch.digest` (of a
    # cluster's first page) and into `Candidate.digest` (of any page). Records of rules before version 36 have it
    # only where `overlapping`, before version 38 only on a cluster's first page
    digest: bool = False

    def encode(self) -> bytes:
        """The record as the bytes the store keeps (its time, site, id, signatures and unfiled keys)."""
        # written once for every page filed: lengths below 128 (nearly all) are their own varint
        small = _SMALL_VARINTS
        page_id = self.page_id.encode("utf-8", "surrogatepass")
        n = len(page_id)
        parts = [_HEAD.pack(self.event_ms, self.site), small[n] if n < 0x80 else varint(n), page_id]
        if self.cluster_id == self.page_id:
            parts.append(b"\x00")
        else:
            cluster = self.cluster_id.encode("utf-8", "surrogatepass")
            parts += [varint(len(cluster) + 1), cluster]
        if self.duplicate_of:
            dup = self.duplicate_of.encode("utf-8", "surrogatepass")
            parts += [varint(len(dup)), dup]
        else:
            parts.append(b"\x00")
        signatures = self.signatures
        parts.append(_TAGS[len(signatures) + (self.document != 0) + bool(self.steered) + bool(self.shown)
                           + bool(self.merged_into) + (self.overlapping or self.digest)])
        for tag in sorted(signatures) if len(signatures) > 1 else signatures:
            sig = signatures[tag]
            n = len(sig)
            parts += [_TAGS[tag], small[n] if n < 0x80 else varint(n), sig]
        if self.steered:
            parts += [_TAGS[STEERED_TAG], varint(len(self.steered)), self.steered]
        if self.shown:
            parts += [_TAGS[SHOWN_TAG], varint(len(self.shown)), self.shown]
        if self.merged_into:
            merged = self.merged_into.encode("utf-8", "surrogatepass")
            parts += [_TAGS[MERGED_TAG], varint(len(merged)), merged]
        if self.overlapping or self.digest:
            parts.append(_OVERLAPPING_FIELD if self.overlapping else _DIGEST_FIELD)
        if self.document:
            parts.append(_DOCUMENT_FIELD.pack(DOCUMENT_TAG, _DOCUMENT.size, self.document))
        if self.unfiled:  # left out when empty (nearly every page)
            parts += [varint(len(self.unfiled)), *map(varint, self.unfiled)]
        return b"".join(parts)

    @classmethod
    def decode(cls, seq: int, data: bytes) -> DocRecord:
        """The record `encode` wrote, under its seq."""
        event_ms, site = _HEAD.unpack_from(data)
        pos = _HEAD.size
        n, pos = read_varint(data, pos)
        page_id = data[pos: pos + n].decode("utf-8", "surrogatepass")
        pos += n
        n, pos = read_varint(data, pos)
        cluster_id = page_id if n == 0 else data[pos: pos + n - 1].decode("utf-8", "surrogatepass")
        pos += max(0, n - 1)
        n, pos = read_varint(data, pos)
        duplicate_of = data[pos: pos + n].decode("utf-8", "surrogatepass")
        pos += n
        n_sigs = data[pos]
        pos += 1
        signatures: dict[int, bytes] = {}
        for _ in range(n_sigs):
            tag = data[pos]
            size, pos = read_varint(data, pos + 1)
            signatures[tag] = data[pos: pos + size]
            pos += size
        document = signatures.pop(DOCUMENT_TAG, None)
        steered = signatures.pop(STEERED_TAG, b"")
        shown = signatures.pop(SHOWN_TAG, b"")
        merged = signatures.pop(MERGED_TAG, b"")
        mark = signatures.pop(OVERLAPPING_TAG, None)
        unfiled = []
        if pos < len(data):
            n, pos = read_varint(data, pos)
            for _ in range(n):
                place, pos = read_varint(data, pos)
                unfiled.append(place)
        return cls(seq, page_id, event_ms, cluster_id, duplicate_of, signatures, site,
                   tuple(sorted(unfiled)),  # as every writer wrote them; sorted, so the engine's first is the least
                   _DOCUMENT.unpack(document)[0] if document is not None and len(document) == _DOCUMENT.size else 0,
                   steered, shown, merged.decode("utf-8", "surrogatepass") if merged else "", mark == b"\x01",
                   mark is not None)
