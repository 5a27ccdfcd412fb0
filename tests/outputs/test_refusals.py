"""After a transaction the broker refused for a record's size, only the largest record of each topic is learnt."""

from __future__ import annotations

from typing import Any, cast

from confluent_kafka import KafkaError

from streamdedup.outputs.kafka import Outputs, WorkerStats
from streamdedup.outputs.kafka_contract import Topics


def _outputs() -> Outputs:
    return Outputs(cast(Any, None), Topics(), cast(Any, None), WorkerStats())  # learning reads neither client


def test_only_the_largest_refused_record_of_each_topic_is_learnt():
    """librdkafka fails every record of the transaction with MSG_SIZE_TOO_LARGE: the three pages that
    fit were sent as stubs with the one that did not (a test on noida-db, limits unread). Now the
    largest of each topic is learnt; should another be over the limit too, the next attempt learns it."""
    outputs = _outputs()
    too_large = KafkaError(KafkaError.MSG_SIZE_TOO_LARGE)
    outputs.failures = [(("unique", b"a", 2_000), too_large), (("unique", b"big", 1_100_000), too_large),
                        (("unique", b"b", 937_000), too_large), (("verdicts", b"big", 900), too_large),
                        (("unique", b"c", 5_000), KafkaError(KafkaError._MSG_TIMED_OUT))]
    assert sorted(outputs.learn_refusals()) == [("unique", b"big", 1_100_000), ("verdicts", b"big", 900)]
    assert outputs.failures == [] and outputs.refused == {("unique", b"big", 1_100_000), ("verdicts", b"big", 900)}
    # the retry fails again on the second one over the limit: it is learnt then, not the learnt one again
    outputs.failures = [(("unique", b"b", 937_000), too_large), (("unique", b"a", 2_000), too_large)]
    assert outputs.learn_refusals() == [("unique", b"b", 937_000)]
    assert outputs.learn_refusals() == []  # no failure, nothing learnt
