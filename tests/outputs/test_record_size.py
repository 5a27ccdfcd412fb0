"""Whether an output fits: the producer's limit before compression, its topic's after it."""

from __future__ import annotations

import random

import cramjam

from streamdedup.outputs.record_size import DEFAULT_BATCH_BYTES, RecordLimits, record_size, room
from streamdedup.testing import make_words


def text(size: int) -> bytes:
    rng = random.Random(7)
    return " ".join(rng.choices(make_words(rng, 3000), k=size // 4)).encode()[:size]


def test_a_record_over_its_topics_limit_before_compression_fits_if_it_does_after():
    value = text(900_000)  # ~280 KB as zstd
    compressed = len(cramjam.zstd.compress(value, level=3))
    limits = RecordLimits(topic_bytes={"small": compressed + 20_000, "smaller": compressed}, compression="zstd")
    assert limits.fits("small", b"key", value, [("dedup.status", b"unique")])
    assert not limits.fits("smaller", b"key", value)  # the 1% margin: not right at the limit
    assert limits.fits("unlimited", b"key", value)  # a topic whose limit is unknown


def test_the_producers_compression_level_is_the_one_estimated():
    """A user's `compression.level` (zstd 1: ~10 % larger than 3 on these pages) is what the producer
    compresses with, so the estimate uses it: a page that fits at level 3 may not at level 1."""
    value = text(900_000)
    at_1, at_3 = (len(cramjam.zstd.compress(value, level=level)) for level in (1, 3))
    assert at_1 > at_3
    limit = (at_1 + at_3) // 2 * 100 // 99  # room(limit) lies between the two sizes
    assert RecordLimits(topic_bytes={"t": limit}, compression="zstd").fits("t", None, value)
    assert not RecordLimits(topic_bytes={"t": limit}, compression="zstd", level=1).fits("t", None, value)


def test_without_compression_or_with_a_codec_it_cannot_tell_the_size_before_compression_counts():
    value = text(400_000)
    for codec in ("none", "an-unknown-codec"):
        limits = RecordLimits(topic_bytes={"t": 300_000}, compression=codec)
        assert not limits.fits("t", None, value)
        assert limits.fits("t", None, value[:250_000])


def test_the_producers_own_limit_counts_before_compression():
    value = b" " * 600_000  # compresses to almost nothing
    assert not RecordLimits(client_bytes=500_000, compression="zstd").fits("t", None, value)
    assert record_size(b"k", value, [("h", b"v")]) > 600_000


def test_a_batch_stays_within_the_smallest_topic_limit():
    assert RecordLimits().batch_bytes() == DEFAULT_BATCH_BYTES
    assert RecordLimits(topic_bytes={"a": 300_000, "b": 32 << 20}).batch_bytes() == room(300_000)


def test_a_topic_its_broker_compresses_again_is_estimated_with_its_codec():
    """A topic with its own `compression.type` has its broker compress records again and check the
    size after that: uncompressed there, a page that zstd makes small does not fit."""
    value = text(900_000)
    limits = RecordLimits(topic_bytes={"t": 500_000, "plain": 500_000}, compression="zstd",
                          topic_compression={"plain": "none"})
    assert limits.fits("t", None, value) and not limits.fits("plain", None, value)
