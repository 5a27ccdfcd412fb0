"""A faust-streaming app that embeds the same detector, for teams that run Faust.

Why not the default runtime: faust's confluent transport is experimental and its exactly-once
mode has open reports of duplicates on rebalance, so this app runs Faust's default (aiokafka)
transport with **at-least-once** delivery and makes re-processing idempotent instead: every
verdict it emits is journaled in the partition's RocksDB store in the same WriteBatch as the
state change and the offset, and a message at or below the stored offset (a replay after a
crash) re-emits the journaled verdict, byte for byte, under the same key. Consumers that key by
page id therefore see each page once. One rocksdict store per input partition, like the worker.

    streamdedup faust --bootstrap-servers 127.0.0.1:9092 --state-dir faust-state
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from streamdedup.config import DetectorConfig
from streamdedup.detector import Detector
from streamdedup.record.readers import RawRecord
from streamdedup.runtime.settings import WorkerSettings
from streamdedup.runtime.worker import cluster_events, offset_key
from streamdedup.verdict.contract import headers as dedup_headers


def create_app(settings: WorkerSettings, config: DetectorConfig, app_id: str = "streamdedup-faust") -> Any:
    import faust

    # datadir: Faust's own files beside our state, not "<app id>-data" in whatever directory it started in
    Path(settings.state_dir).mkdir(parents=True, exist_ok=True)
    app = faust.App(app_id, broker=f"kafka://{settings.bootstrap_servers}", web_enabled=False,
                    datadir=str(Path(settings.state_dir) / "faust-data"),
                    processing_guarantee="at_least_once", topic_allow_declare=True,
                    consumer_auto_offset_reset="earliest", topic_partitions=settings.partitions)
    raw: dict[str, Any] = {"key_type": bytes, "value_type": bytes, "key_serializer": "raw", "value_serializer": "raw"}
    t = settings.topics
    pages = app.topic(t.pages, **raw)
    targets = {"unique": app.topic(t.unique, **raw), "duplicate": app.topic(t.duplicates, **raw),
               "rejected": app.topic(t.rejected, **raw), "clusters": app.topic(t.clusters, **raw)}
    detectors: dict[int, Detector] = {}

    def detector_for(partition: int) -> Detector:
        if partition not in detectors:
            detectors[partition] = Detector(config, Path(settings.state_dir) / f"faust-{t.pages}-{partition}")
        return detectors[partition]

    async def emit(outputs: list[tuple[str, bytes | None, bytes | None, list]]) -> None:
        for target, key, value, headers in outputs:
            await targets[target].send(key=key, value=value, headers=headers)

    @app.agent(pages)
    async def dedup(stream: Any) -> None:
        async for event in stream.events():
            message = event.message
            detector = detector_for(message.partition)
            await emit(outputs_for(detector, message.topic, message.partition, message.offset,
                                   message.key, message.value))

    return app


def outputs_for(detector: Detector, topic: str, partition: int, offset: int, key: bytes | None,
                value: bytes | None) -> list[tuple[str, Any, Any, list]]:
    """The messages to send for one input message: decided once, replayed from the journal."""
    name = f"{topic}:{partition}:{offset}"
    journaled = detector.store.get_journal(name)
    if journaled is None:
        item = detector.prepare(RawRecord(origin=name, data=value or b""))
        outcomes, batch = detector.decide_staged([item])
        dedup = outcomes[0].dedup
        batch.set_journal(name, orjson.dumps(dedup))
        batch.set_meta(offset_key(topic, partition), str(offset + 1).encode())
        detector.commit(batch)  # state, offset and journal in one WriteBatch, before anything is sent
    else:
        dedup = orjson.loads(journaled)
    return render(dedup, key, value, name)


def render(dedup: dict, key: bytes | None, value: bytes | None, source: str = "") -> list[tuple[str, Any, Any, list]]:
    """Deterministic: the same journaled verdict and input give byte-identical outputs, with the
    worker's headers (`verdict.contract.headers`)."""
    headers = dedup_headers(dedup, source)
    if dedup["status"] == "rejected":
        return [("rejected", key, value, headers)]
    record = orjson.loads(value or b"{}")
    out = [(dedup["status"], dedup["id"].encode(), orjson.dumps({**record, "dedup": dedup}), headers)]
    out += [("clusters", e["cluster_id"].encode(), orjson.dumps(e), []) for e in cluster_events(dedup)]
    return out


__all__ = ["create_app", "outputs_for", "render"]
