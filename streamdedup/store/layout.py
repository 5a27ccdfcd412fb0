"""The key layout of the store, in one place. One RocksDB, keys distinguished by a 1-byte prefix:

    M<name>                           -> meta value (config, counters, watermark)        [meta]
    D<seq:8>                          -> DocRecord: id, event time, cluster, signatures   [docs]
    P<page id utf-8>                  -> seq:8                                            [ids]
    I<method tag:1><index key><seq:8> -> b""   postings: "page seq is filed under key"   [index]
    T<event ms:8><seq:8>              -> b""   event-time index, for retention            [time]
    V<runtime key>                    -> bytes verdicts a runtime already emitted (Faust)  [journal]

seq is the page's arrival number (big-endian, so prefix scans return pages oldest first). The
reverse index from a page to its index keys is its DocRecord: the keys are a pure function of the
stored signatures and the store's frozen method parameters, so they are recomputed, not stored.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

META, DOC, PAGE_ID, INDEX, TIME, JOURNAL = b"M", b"D", b"P", b"I", b"T", b"V"
_SEQ = struct.Struct(">Q")
_TIME_OFFSET = 1 << 63  # event ms may be negative (pre-1970): shift into unsigned order


def journal_key(name: str) -> bytes:
    return JOURNAL + name.encode()


def seq_bytes(seq: int) -> bytes:
    return _SEQ.pack(seq)


def seq_from(data: bytes) -> int:
    return _SEQ.unpack(data[-8:])[0]


def meta_key(name: str) -> bytes:
    return META + name.encode()


def doc_key(seq: int) -> bytes:
    return DOC + seq_bytes(seq)


def page_id_key(page_id: str) -> bytes:
    return PAGE_ID + page_id.encode("utf-8", "surrogatepass")


def index_prefix(tag: int, key: bytes) -> bytes:
    return INDEX + bytes((tag,)) + key


def posting_key(tag: int, key: bytes, seq: int) -> bytes:
    return index_prefix(tag, key) + seq_bytes(seq)


def time_key(event_ms: int, seq: int) -> bytes:
    return TIME + _SEQ.pack(event_ms + _TIME_OFFSET) + seq_bytes(seq)


def time_bound(event_ms: int) -> bytes:
    return TIME + _SEQ.pack(event_ms + _TIME_OFFSET)


def time_key_parts(key: bytes) -> tuple[int, int]:
    event, seq = struct.unpack(">QQ", key[1:17])
    return event - _TIME_OFFSET, seq


@dataclass(slots=True)
class DocRecord:
    """What the store keeps per page: enough to verify a candidate and to remove the page."""

    seq: int
    page_id: str
    event_ms: int
    cluster_id: str
    duplicate_of: str = ""
    signatures: dict[int, bytes] = field(default_factory=dict)  # method tag -> encoded signature
    site: int = 0  # xxh3-64 of the page's site (same-site candidates are judged more strictly)

    _HEAD = struct.Struct("<qQHHHB")

    def encode(self) -> bytes:
        ids = [s.encode("utf-8", "surrogatepass") for s in (self.page_id, self.cluster_id, self.duplicate_of)]
        parts = [self._HEAD.pack(self.event_ms, self.site, *(len(i) for i in ids), len(self.signatures)), *ids]
        for tag, sig in sorted(self.signatures.items()):
            parts.append(struct.pack("<BI", tag, len(sig)))
            parts.append(sig)
        return b"".join(parts)

    @classmethod
    def decode(cls, seq: int, data: bytes) -> "DocRecord":
        event_ms, site, n_id, n_cluster, n_dup, n_sigs = cls._HEAD.unpack_from(data)
        pos = cls._HEAD.size
        texts = []
        for n in (n_id, n_cluster, n_dup):
            texts.append(data[pos: pos + n].decode("utf-8", "surrogatepass"))
            pos += n
        signatures: dict[int, bytes] = {}
        for _ in range(n_sigs):
            tag, size = struct.unpack_from("<BI", data, pos)
            pos += 5
            signatures[tag] = data[pos: pos + size]
            pos += size
        return cls(seq, texts[0], event_ms, texts[1], texts[2], signatures, site)
