"""Prometheus metrics of the worker: pages by verdict, rejections by reason, latency, lag, store.

Each worker gets its own registry (tests run several in one process); `serve` exposes it over
HTTP for Prometheus to scrape."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

DEFAULT_HOST = "127.0.0.1"


class WorkerMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.pages = Counter("streamdedup_pages_total", "Pages processed, by verdict", ["status"],
                             registry=self.registry)
        self.rejected = Counter("streamdedup_rejected_total", "Rejected pages, by reason", ["reason"],
                                registry=self.registry)
        self.batch_seconds = Histogram("streamdedup_batch_seconds", "Time to decide and commit one batch",
                                       registry=self.registry,
                                       buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))
        self.page_latency = Histogram("streamdedup_page_latency_seconds",
                                      "From the input message's timestamp to its verdict's commit",
                                      registry=self.registry,
                                      buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300))
        self.lag = Gauge("streamdedup_consumer_lag", "Messages behind the end of the input partition",
                         ["partition"], registry=self.registry)
        self.store_bytes = Gauge("streamdedup_store_bytes", "Live SST bytes of a partition's store",
                                 ["partition"], registry=self.registry)
        # accounting: what came in against what went out, counted when the batch's transaction
        # commits (an aborted batch counts nothing); every input page ends as exactly one
        # unique, duplicate or rejected output once the pipeline is drained
        self.inputs = Counter("streamdedup_input_records", "Input records consumed, by topic", ["topic"],
                              registry=self.registry)
        self.outputs = Counter("streamdedup_output_records",
                               "Records produced, by topic and status (unique, duplicate, rejected, event, internal)",
                               ["topic", "status"], registry=self.registry)
        self.refused = Counter("streamdedup_refused_outputs",
                               "Outputs the broker refused as too large, sent as too_large_for_broker rejections",
                               ["topic"], registry=self.registry)
        self.store_keys = Gauge("streamdedup_store_keys", "Estimated keys in a partition's store",
                                ["partition"], registry=self.registry)

    def serve(self, port: int, host: str = DEFAULT_HOST) -> tuple[str, int]:
        """Expose the registry over HTTP; returns the bound address. Loopback by default: the
        endpoint has no authentication, so other interfaces only on purpose (0.0.0.0 in a container)."""
        server, _ = start_http_server(port, addr=host, registry=self.registry)
        bound_host, bound_port = server.server_address[:2]
        return (bound_host if isinstance(bound_host, str) else bytes(bound_host).decode()), int(bound_port)
