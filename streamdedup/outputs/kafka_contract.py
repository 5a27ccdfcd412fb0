"""What the Kafka outputs take from the worker: topic names, the record limit, the metrics.

What `outputs.kafka` takes from the worker that runs it: the topic names, the largest record a
client builds, and the counters it moves.

Defined here, below the runtime, so that the outputs need not import it (`runtime.settings`
and `runtime.topics` take `Topics` and `MAX_RECORD_BYTES` from here; the worker's
`runtime.metrics.WorkerMetrics` is a `WorkerMetrics` as this module describes it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # the kafka extra's: settings and topic names are read without it (file mode)
    from prometheus_client import Counter, Gauge, Histogram

# the largest record a client builds or accepts before compression (librdkafka checks
# `message.max.bytes` against the uncompressed size); over it, a record is refused locally
MAX_RECORD_BYTES = 100 * 1024 * 1024


@dataclass(frozen=True)
class Topics:
    """The topics a worker reads and writes, by role."""

    pages: str = "pages"
    unique: str = "pages.unique"
    duplicates: str = "pages.duplicates"
    rejected: str = "pages.rejected"
    clusters: str = "pages.clusters"
    verdicts: str = "pages.verdicts"  # every input's verdict without the page body, key = page id
    cluster_view: str = "pages.cluster_view"  # compacted: each page's cluster event, key = page id
    index: str = "pages.index"  # global topology: index requests, partitioned by index key
    parts: str = "pages.parts"  # global topology: page headers and answers, partitioned by page id
    # each group's verdict settings (runtime/group_settings.py): compacted, one partition, shared by groups
    settings: str = "pages.settings"

    @property
    def outputs(self) -> tuple[str, ...]:
        """The topics verdicts and cluster events are written to."""
        return (self.unique, self.duplicates, self.rejected, self.clusters, self.verdicts, self.cluster_view)

    @property
    def internal(self) -> tuple[str, ...]:
        """Repartition topics of the global topology; they are also its stores' changelogs."""
        return (self.index, self.parts)


class WorkerMetrics(Protocol):
    """The worker's Prometheus metrics the outputs carry (`runtime.metrics`).

    Those they move when a batch commits, and those the global topology moves through them
    (`Outputs.metrics`)."""

    pages: Counter
    rejected: Counter
    outputs: Counter
    refused: Counter
    late_pages: Counter
    late_matches: Counter
    late_related_left_out: Counter
    late_merges: Counter
    idle_claims_doubted: Counter
    verdicts_released: Counter
    verdict_wait: Histogram
    watermark: Gauge
