"""The largest record each topic the worker writes takes, read from the broker at start.

Each topic's `max.message.bytes` (`describe_configs`); where a topic's cannot be read, the
broker's `message.max.bytes`; where neither can, none (the producer's own limit then stands
alone, and a refusal is learnt from the failed transaction as before: `Outputs.learn_refusals`).
An output over its topic's limit goes out at once as its `too_large_for_broker` stub, in the
same transaction (`outputs.record_size`), instead of failing the transaction a minute later.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from confluent_kafka.admin import AdminClient, ConfigResource

from streamdedup.outputs.kafka_contract import MAX_RECORD_BYTES
from streamdedup.outputs.record_size import RecordLimits
from streamdedup.runtime.settings import WorkerSettings

log = logging.getLogger(__name__)


def written_topics(settings: WorkerSettings) -> tuple[str, ...]:
    """The topics the worker produces records to: the outputs, and the global topology's internal ones."""
    internal = settings.topics.internal if settings.topology == "global" else ()
    return (*settings.topics.outputs, *internal)


def read_limits(settings: WorkerSettings, producer: Mapping[str, Any], timeout: float = 15.0) -> RecordLimits:
    """The producer's limit and codec (its settings, `producer`) and each written topic's limit and codec.

    A topic whose `compression.type` is a codec (not `producer`) has the broker compress its records
    again with it, and check their size after that: its outputs are estimated with that codec."""
    admin = AdminClient(settings.client())
    names = written_topics(settings)
    topics = _described(admin, [ConfigResource(ConfigResource.Type.TOPIC, name) for name in names],
                        ("max.message.bytes", "compression.type"), timeout)
    limits = {name: int(found["max.message.bytes"]) for name, found in topics.items() if "max.message.bytes" in found}
    if len(limits) < len(names):
        brokers = admin.list_topics(timeout=timeout).brokers
        described = _described(admin, [ConfigResource(ConfigResource.Type.BROKER, str(broker)) for broker in brokers],
                               ("message.max.bytes",), timeout)
        broker_limits = [int(found["message.max.bytes"]) for found in described.values() if found]
        if broker_limits:
            limits.update({name: min(broker_limits) for name in names if name not in limits})
    unknown = [name for name in names if name not in limits]
    if unknown:
        log.info("the broker did not say the largest record %s take: an output it refuses for its size fails "
                 "its transaction once, then goes out as too_large_for_broker", ", ".join(unknown))
    codecs = {name: TOPIC_CODECS.get(found["compression.type"], "none") for name, found in topics.items()
              if found.get("compression.type", "producer") != "producer"}
    compression = str(producer.get("compression.type", producer.get("compression.codec", "none")))
    return RecordLimits(int(producer.get("message.max.bytes", MAX_RECORD_BYTES)), limits, compression,
                        int(producer.get("compression.level", -1)), codecs)


# a topic's `compression.type` (other than `producer`) -> the codec its broker compresses with
TOPIC_CODECS = {"uncompressed": "none", "zstd": "zstd", "gzip": "gzip", "lz4": "lz4", "snappy": "snappy"}


def _described(admin: AdminClient, resources: Iterable[ConfigResource], names: tuple[str, ...],
               timeout: float) -> dict[str, dict[str, str]]:
    """Resource name -> the values of its settings `names` that could be read."""
    values: dict[str, dict[str, str]] = {}
    for resource, future in admin.describe_configs(list(resources), request_timeout=timeout).items():
        try:
            entries = future.result(timeout)
        except Exception as err:  # noqa: BLE001 - a broker that does not describe it: the next fallback
            log.debug("could not read %s of %s: %s", ", ".join(names), resource.name, err)
            continue
        found = {name: str(entry.value) for name in names
                 if (entry := entries.get(name)) is not None and entry.value is not None}
        if found:
            values[resource.name] = found
    return values
