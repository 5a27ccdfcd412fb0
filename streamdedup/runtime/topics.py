"""Create the topics the worker needs if they are missing; use existing ones as they are.

Message sizes. A page may hold up to `max_content_bytes` (10 MB) of content, and every hop of a
page (input, parts header, verdict, dead letter) carries its record. Apache Kafka and noida-db
refuse a record batch over the topic's `max.message.bytes` (default 1,048,588 bytes, measured
after compression), so the topics we create get `MAX_MESSAGE_BYTES`, and every client compresses
(`COMPRESSION`: zstd, which Apache Kafka >= 2.1, noida-db and Tansu all take). A topic that
already exists keeps its own limit: what a broker still refuses becomes an explicit
`too_large_for_broker` rejection (outputs/kafka.py), never a silent loss.
"""

from __future__ import annotations

import logging

from confluent_kafka.admin import AdminClient, NewTopic

from streamdedup.outputs.kafka_contract import MAX_RECORD_BYTES  # noqa: F401 - imported from here too
from streamdedup.runtime.settings import WorkerSettings

log = logging.getLogger(__name__)

# a 10 MB page as JSON is ~10-14 MB before compression (escapes, base64 of WARC payloads) and
# ~2-4 MB after it; 32 MiB leaves room for records of more fields without allowing anything huge
MAX_MESSAGE_BYTES = 32 * 1024 * 1024
COMPRESSION = "zstd"


def producer_settings() -> dict[str, object]:
    """librdkafka settings every producer of ours shares (feed and worker)."""
    return {"compression.type": COMPRESSION, "message.max.bytes": MAX_RECORD_BYTES}


def consumer_settings() -> dict[str, object]:
    """Fetch sizes that let one record of the largest allowed size through.

    Apache Kafka (KIP-74) returns an oversized first batch anyway; we do not rely on every broker
    doing so."""
    return {"max.partition.fetch.bytes": MAX_MESSAGE_BYTES, "fetch.max.bytes": 2 * MAX_MESSAGE_BYTES,
            "receive.message.max.bytes": MAX_RECORD_BYTES}


def topic_config(name: str, settings: WorkerSettings) -> dict[str, str]:
    """The Kafka config a topic is created with: its largest record, compaction, replicas in sync."""
    config = {"max.message.bytes": str(MAX_MESSAGE_BYTES)}
    if name in (settings.topics.settings, settings.topics.cluster_view):  # kept for ever, by key
        config["cleanup.policy"] = "compact"
    if settings.replication_factor >= 3:  # a write is acknowledged once on 2 replicas: one broker may fail
        config["min.insync.replicas"] = "2"
    if name in settings.topics.internal:
        # the internal topics are the changelogs the index and parts stores are rebuilt from:
        # keep them as long as the stores keep pages (see README, "Scale-out"): for ever by default
        config["retention.ms"] = str(settings.changelog_retention_ms)
    return config


def topic_exists(settings: WorkerSettings, name: str, timeout: float = 15.0) -> bool:
    """Whether the broker has a topic of this name (asked by name: the answer creates nothing)."""
    topics = AdminClient(settings.client()).list_topics(timeout=timeout).topics
    return name in topics


def ensure_topics(settings: WorkerSettings, timeout: float = 15.0) -> dict[str, int]:
    """Returns the partition count of every topic (existing ones are not changed)."""
    admin = AdminClient(settings.client())
    names = (settings.topics.pages, *settings.topics.outputs, settings.topics.settings)
    if settings.topology == "global":
        names += settings.topics.internal
    existing = admin.list_topics(timeout=timeout).topics
    missing = [NewTopic(name, num_partitions=1 if name == settings.topics.settings else settings.partitions,
                        replication_factor=settings.replication_factor, config=topic_config(name, settings))
               for name in names if name not in existing]
    if missing:
        for name, future in admin.create_topics(missing, request_timeout=timeout).items():
            try:
                future.result(timeout)
                log.info("created topic %s with %d partitions", name, settings.partitions)
            except Exception as err:  # noqa: BLE001 - another worker may have created it meanwhile
                if "already exists" not in str(err).lower() and "TOPIC_ALREADY_EXISTS" not in str(err):
                    raise
    topics = admin.list_topics(timeout=timeout).topics
    counts = {name: len(topics[name].partitions) for name in names if name in topics}
    for name, count in counts.items():
        # more partitions than the settings ask for (topics made by `topics create` with their own
        # STREAMDEDUP_PARTITIONS, or by an operator) is no problem: the workers use every one
        if name not in existing or name == settings.topics.settings or count >= settings.partitions:
            continue
        if name in settings.topics.internal:  # its count routes every index key: never to be changed under data
            log.warning("topic %s has %d partitions, not the %d of the settings (partitions): at most %d workers "
                        "share its step. Do not add partitions to it once it holds data (the index keys are routed "
                        "by its count: docs/scaleout.md); for more, start on new internal topics "
                        "(STREAMDEDUP_TOPIC_INDEX, STREAMDEDUP_TOPIC_PARTS), a new group and new stores",
                        name, count, settings.partitions, count)
        elif name == settings.topics.pages and settings.topology == "local":  # a store a partition (and Faust)
            log.warning("topic %s has %d partitions, not the %d of the settings (partitions): at most %d workers "
                        "share it. Do not add partitions to it once it holds data: in the local topology each "
                        "partition's store holds the pages its keys sent there, and a key routed elsewhere would "
                        "miss its earlier copies; for more, use the global topology (docs/scaleout.md), or a new "
                        "pages topic, group and stores", name, count, settings.partitions, count)
        else:
            log.warning("topic %s has %d partitions, not the %d of the settings (partitions): an existing topic keeps "
                        "its own; to spread the work over %d, add partitions to it (kafka-topics.sh --alter "
                        "--partitions) before the workers start, or create it again", name, count,
                        settings.partitions, settings.partitions)
    return counts
