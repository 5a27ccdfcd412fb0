"""Create the topics the worker needs if they are missing; use existing ones as they are."""

from __future__ import annotations

import logging

from confluent_kafka.admin import AdminClient, NewTopic

from streamdedup.runtime.settings import WorkerSettings

log = logging.getLogger(__name__)


def ensure_topics(settings: WorkerSettings, timeout: float = 15.0) -> dict[str, int]:
    """Returns the partition count of every topic (existing ones are not changed)."""
    admin = AdminClient(settings.client())
    names = (settings.topics.pages, *settings.topics.outputs)
    if settings.topology == "global":
        names += settings.topics.internal
    existing = admin.list_topics(timeout=timeout).topics
    # the internal topics are the changelogs the index and parts stores are rebuilt from: keep
    # them as long as the stores keep pages (see README, "Scale-out")
    missing = [NewTopic(name, num_partitions=settings.partitions, replication_factor=1,
                        config={"retention.ms": "-1"} if name in settings.topics.internal else {})
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
    return {name: len(topics[name].partitions) for name in names if name in topics}
