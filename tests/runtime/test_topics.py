"""Topic creation at start (`runtime/topics.ensure_topics`), against a real broker."""

from __future__ import annotations

import logging
from dataclasses import replace

from streamdedup.runtime.topics import ensure_topics


def test_topics_with_more_partitions_than_the_settings_ask_are_not_warned_about(settings, caplog):
    """`STREAMDEDUP_PARTITIONS=4 streamdedup topics create`, then workers started without it (the
    default, 1): before, each start logged nine WARNING lines advising to add partitions "to spread
    the work over 1", pages.index and pages.parts included, whose count routes every index key
    (docs/scaleout.md: never add partitions to them). Fewer than asked is still named, and for
    the internal topics without that advice."""
    assert set(ensure_topics(replace(settings, partitions=4)).values()) == {1, 4}  # the settings topic: 1
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="streamdedup.runtime.topics"):
        counts = ensure_topics(settings)  # partitions=1
    assert counts[settings.topics.pages] == 4 and counts[settings.topics.index] == 4
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    with caplog.at_level(logging.WARNING, logger="streamdedup.runtime.topics"):
        ensure_topics(replace(settings, partitions=6))
    warned = {r.getMessage().split()[1]: r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING}
    t = settings.topics
    assert set(warned) == {t.pages, *t.outputs, *t.internal}
    assert "kafka-topics.sh --alter" in warned[t.pages]
    for name in t.internal:
        assert "--alter" not in warned[name] and "Do not add partitions" in warned[name], warned[name]
