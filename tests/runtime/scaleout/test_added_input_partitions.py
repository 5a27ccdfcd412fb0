"""An index partition and input partitions added to the pages topic after its worker started (no broker).

The worker reads the pages topic's partition count once, at start (`Routes.input_partitions`); a
partition added later is known to an index partition only by the watermarks it sends. Those are in
the index partition's store; what it holds in memory is read from the store again after a failed
transaction (`discard`) and when the partition comes back to a worker (a rebalance: a new handler
on its store). Both read only the partitions counted at start, so an added input was forgotten
until it sent again, and the index watermark could pass its pages in between: gather then releases
later pages before them (their matches with those pages come as `late_match` events, not in the
verdicts). Found by reading the code in a scale-out review; the tests fail before the fix.
"""

from __future__ import annotations

from conftest import FakeMessage

from streamdedup.config import DetectorConfig
from streamdedup.fingerprinter import Fingerprinter
from streamdedup.runtime.metrics import WorkerMetrics
from streamdedup.runtime.scaleout.index_stage import IndexPartition
from streamdedup.runtime.scaleout.messages import KIND_HEADER, WATERMARK, kind_of, watermark_value
from streamdedup.runtime.scaleout.routing import page_order
from streamdedup.runtime.topologies.scaleout import Holding, IndexStagePartition, Routes

LOW, HIGH = page_order(1000, 0, 2, 0), page_order(9000, 0, 0, 0)


class _Out:
    """What the handler sends (its records' order is not under test here)."""

    def __init__(self) -> None:
        self.metrics = WorkerMetrics()
        self.sent: list[tuple[str, bytes | None]] = []

    def send(self, topic: str, key: bytes | None, value: bytes | None, headers: list | None = None,
             partition: int | None = None) -> None:
        self.sent.append((topic, kind_of(headers)))

    def on_commit(self, action) -> None:
        pass


def _watermark(offset: int, source: int, order: bytes) -> FakeMessage:
    return FakeMessage(watermark_value(source, order), offset, topic="index", headers=[(KIND_HEADER, WATERMARK)])


def _stage(tmp_path) -> IndexStagePartition:
    detector = Fingerprinter(DetectorConfig())
    index = IndexPartition(tmp_path / "index", detector.methods, DetectorConfig().site_policies(),
                           detector.store_config, partition=0)
    # started when the pages topic had 2 partitions; a third was added since
    return IndexStagePartition(index, Routes("index", "parts", 1, 1, 2), Holding(wait_s=5.0))


def test_an_added_input_partition_holds_the_index_watermark_after_a_failed_transaction(tmp_path):
    stage = _stage(tmp_path)
    stage.process([_watermark(0, 0, HIGH), _watermark(1, 1, HIGH), _watermark(2, 2, LOW)], _Out(), -1)
    stage.index.stage_meta("offset:index:0", b"3")
    stage.commit()
    assert stage.watermark() == LOW  # input 2's pages below HIGH are still to come
    stage.process([_watermark(3, 0, HIGH + b"\x01")], _Out(), -1)
    stage.discard()  # the batch's transaction failed: back to what the store holds
    assert stage.watermark() == LOW
    stage.index.close()


def test_an_added_input_partition_holds_the_index_watermark_when_its_index_partition_comes_back(tmp_path):
    stage = _stage(tmp_path)
    stage.process([_watermark(0, 0, HIGH), _watermark(1, 1, HIGH), _watermark(2, 2, LOW)], _Out(), -1)
    stage.commit()
    stage.close()  # revoked, then assigned to this worker again: a new handler on the same store
    again = _stage(tmp_path)
    assert again.watermark() == LOW
    again.index.close()
