"""Prometheus metrics of the worker.

Pages by verdict, rejections by reason, latency, lag, store; and the HTTP endpoint that serves them
beside the worker's health and readiness.

Each worker gets its own registry (tests run several in one process); `serve` exposes it over
HTTP: `/metrics` (Prometheus text), `/healthz` and `/readyz` (JSON, 200 or 503, from the checks
the worker passes in), 404 for any other path."""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

DEFAULT_HOST = "127.0.0.1"

# a check answers (healthy?, details shown as JSON)
Check = Callable[[], tuple[bool, dict[str, Any]]]


def _alive() -> tuple[bool, dict[str, Any]]:
    return True, {}


class WorkerMetrics:
    """A worker's Prometheus metrics in a registry of their own, served over HTTP by `serve`."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.pages = Counter("streamdedup_pages_total", "Pages processed, by verdict", ["status"],
                             registry=self.registry)
        self.rejected = Counter("streamdedup_rejected_total", "Rejected pages, by reason", ["reason"],
                                registry=self.registry)
        # bounded work (docs/design.md "Hot keys"): each over `pages` is a per-page mean, as summary.json's
        self.work = Counter("streamdedup_decide_work", "The decide step's work: pages judged, candidates "
                            "found, dropped as chance collisions and verified, tests run, candidates ruled out before "
                            "judging, pages over the candidate limit, pages expired by retention", ["kind"],
                            registry=self.registry)
        # where the stateful stage's time goes, told by the detector's own clock (summary.json's
        # `store_us_per_page`): over streamdedup_decide_work{kind="pages"}, seconds a judged page
        self.extraction = Counter("streamdedup_extraction_pages", "HTML pages by how they were read: from their "
                                  "site's learned container (learned), from its brief container after that failed "
                                  "(brief), by fast while the site is cold (fast), by fast after both failed "
                                  "(fallback); relearned: pages after which the site dropped its container",
                                  ["kind"], registry=self.registry)
        self.store_steps = Counter("streamdedup_store_step_seconds", "Seconds the stateful stage spent, by step "
                                   "(Detector.STEPS: template, signatures, index_names, lookups, verdicts, commit, "
                                   "expire; the global topology's index partitions time lookups, verdicts, commit "
                                   "and expire)", ["step"], registry=self.registry)
        self.batch_seconds = Histogram("streamdedup_batch_seconds", "Time to decide and commit one batch",
                                       registry=self.registry,
                                       buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))
        self.page_latency = Histogram("streamdedup_page_latency_seconds",
                                      "From the input message's timestamp to its verdict's commit",
                                      registry=self.registry,
                                      buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300))
        self.lag = Gauge("streamdedup_consumer_lag",
                         "Committed messages behind the end (last stable offset) of an assigned partition",
                         ["topic", "partition"], registry=self.registry)
        self.store_bytes = Gauge("streamdedup_store_bytes", "Live SST bytes of a partition's store",
                                 ["topic", "partition"], registry=self.registry)
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
                                ["topic", "partition"], registry=self.registry)
        self.assigned = Gauge("streamdedup_assigned_partitions", "Partitions assigned to this worker, by topic",
                              ["topic"], registry=self.registry)
        self.last_loop = Gauge("streamdedup_last_loop_timestamp_seconds",
                               "When the worker's loop last went round (Unix time)", registry=self.registry)
        # final verdicts (global topology): how long complete pages were held, what released them,
        # matches found after a verdict was out, and each index partition's watermark
        self.verdict_wait = Histogram("streamdedup_verdict_wait_seconds",
                                      "From a page's last answer to its verdict's release (held for the watermarks)",
                                      registry=self.registry,
                                      buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30))
        self.verdicts_released = Counter("streamdedup_verdicts_released",
                                         "Verdicts released, by what released them (watermark, timeout, complete)",
                                         ["by"], registry=self.registry)
        self.late_matches = Counter("streamdedup_late_matches",
                                    "Matches found after the later page's verdict was out (late_match and "
                                    "late_related events), by cause: late_page (raise allowed_lateness_ms), "
                                    "after_idle (every input had been idle, and a worker took longer than "
                                    "watermark_interval_s to fetch its part of the burst: raise it), "
                                    "released_early (the verdict wait)",
                                    ["cause"], registry=self.registry)
        self.late_merges = Counter("streamdedup_late_merges",
                                   "Merges a page's verdict did not name because it went out before its matches' "
                                   "gathers named their clusters (late merged events, \"late\": true); by cause, "
                                   "as late_matches (released_early: raise the verdict wait)",
                                   ["cause"], registry=self.registry)
        self.late_related_left_out = Counter("streamdedup_late_related_left_out",
                                             "Related pages found after the later page's verdict was out and not "
                                             "sent as late_related events: the page named 8 related pages already "
                                             "(its verdict's related_to and late_related events), as many as file "
                                             "mode's related_to names; by cause, as late_matches",
                                             ["cause"], registry=self.registry)
        self.late_pages = Counter("streamdedup_late_pages",
                                  "Pages filed below the watermark their input partition had sent (behind its "
                                  "newest by more than allowed_lateness_ms): their matches with pages already out "
                                  "become late_match events", ["partition"], registry=self.registry)
        self.idle_claims_doubted = Counter("streamdedup_idle_claims_doubted",
                                           "Idle claims (infinite watermarks) of input partitions that an index "
                                           "partition set aside because records came to the input since and its "
                                           "owner had not taken the claim back (a stalled worker): the pages "
                                           "above them were held, not released", registry=self.registry)
        self.watermark = Gauge("streamdedup_index_watermark_seconds",
                               "An index partition's watermark: the lowest of its input partitions' (event time, "
                               "Unix seconds; +Inf when every input is idle, 0 before every input was heard from)",
                               ["partition"], registry=self.registry)
        self.group_stalled = Gauge("streamdedup_group_stalled_partitions",
                                   "Partitions of the worker's topics, owned by another member or none, whose "
                                   "committed offset has not moved for stall_timeout_s while records wait "
                                   "(a stopped worker, or a static member that left)", registry=self.registry)
        self.health: Check = _alive
        self.readiness: Check = _alive
        self.server: ThreadingHTTPServer | None = None

    def serve(self, port: int, host: str = DEFAULT_HOST) -> tuple[str, int]:
        """Serve /metrics, /healthz and /readyz over HTTP in a daemon thread; returns the bound address.

        Loopback by default: the endpoint has no authentication, so other interfaces only on purpose
        (0.0.0.0 in a container)."""
        metrics = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                path = self.path.split("?", 1)[0]
                if path == "/metrics":
                    self._send(200, CONTENT_TYPE_LATEST, generate_latest(metrics.registry))
                elif path in ("/healthz", "/readyz"):
                    ok, details = (metrics.health if path == "/healthz" else metrics.readiness)()
                    self._send(200 if ok else 503, "application/json", orjson.dumps({"ok": ok, **details}))
                else:
                    self._send(404, "text/plain; charset=utf-8", b"not found: /metrics, /healthz, /readyz\n")

            def _send(self, status: int, content_type: str, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - scrapes are not news
                pass

        try:
            server = ThreadingHTTPServer((host, port), Handler)
        except OSError as err:
            raise OSError(f"cannot serve metrics on {host}:{port} ({err.strerror or err}): give another port with "
                          "--metrics-port (STREAMDEDUP_METRICS_PORT), 0 for none, or stop what uses it") from None
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, name="metrics-http", daemon=True).start()
        self.server = server
        bound_host, bound_port = server.server_address[:2]
        return (bound_host if isinstance(bound_host, str) else bytes(bound_host).decode()), int(bound_port)

    def close(self) -> None:
        """Stop the metrics HTTP server, if one runs."""
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None
