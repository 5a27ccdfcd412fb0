"""The two topologies, side by side.

`local` (a detector store per input partition) and `global` (index keys repartitioned through Kafka,
so near-duplicates meet across partitions and workers)."""

from __future__ import annotations

from collections.abc import Mapping

from streamdedup.config import DetectorConfig
from streamdedup.runtime.scaleout.idle_claims import InputEnd
from streamdedup.runtime.settings import WorkerSettings
from streamdedup.runtime.topologies.base import PartitionHandler, Topology


def make_topology(settings: WorkerSettings, config: DetectorConfig, partitions: Mapping[str, int],
                  input_end: InputEnd | None = None) -> Topology:
    """The `input_end`: the input partitions' end offsets.

    `input_end`: the input partitions' end offsets, which the global topology's index partitions
    ask before they trust an idle claim (`scaleout/idle_claims.py`)."""
    if settings.topology == "local":
        from streamdedup.runtime.topologies.local import LocalTopology

        return LocalTopology(settings, config)
    from streamdedup.runtime.topologies.scaleout import GlobalTopology

    return GlobalTopology(settings, config, partitions, input_end)


__all__ = ["PartitionHandler", "Topology", "make_topology"]
