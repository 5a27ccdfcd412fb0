"""The worker as a service, run as a user runs it (`python -m streamdedup -v worker` as a
subprocess against the real broker): health and readiness beside the metrics, lag per topic
and partition, progress at INFO, an idle worker that is idle, and SIGTERM that stops cleanly."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import orjson
import pytest
from conftest import make_article, page, wrap_in_template
from prometheus_client.parser import text_string_to_metric_families

from streamdedup.record.readers import RawRecord
from streamdedup.runtime.broker import free_port
from streamdedup.runtime.feed import feed
from streamdedup.runtime.settings import Topics, WorkerSettings
from streamdedup.runtime.topics import ensure_topics

ARTICLES = 3
SITES = ("Alpha", "Beta", "Gamma")
PAGES = ARTICLES * len(SITES) + 1  # and one line that is not JSON


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def samples(metrics_text: str, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    return {tuple(sorted(s.labels.items())): s.value for family in text_string_to_metric_families(metrics_text)
            for s in family.samples if s.name == name}


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


class Service:
    def __init__(self, process: subprocess.Popen[bytes], log: Path, url: str, settings: WorkerSettings) -> None:
        self.process, self.log, self.url, self.settings = process, log, url, settings

    def records(self) -> list[dict]:
        return [orjson.loads(line) for line in self.log.read_bytes().splitlines() if line.startswith(b"{")]

    def metrics(self) -> str:
        status, body = get(self.url + "/metrics")
        assert status == 200
        return body.decode()

    def pages_decided(self) -> float:
        return sum(samples(self.metrics(), "streamdedup_pages_total").values())


@pytest.fixture(scope="module")
def service(broker, tmp_path_factory):
    """`streamdedup -v worker` with its metrics endpoint, fed 10 pages, waited on until it decided them."""
    run = uuid.uuid4().hex[:8]
    workdir = tmp_path_factory.mktemp("service")
    topics = Topics(pages=f"pages-{run}", unique=f"unique-{run}", duplicates=f"dups-{run}",
                    rejected=f"rejected-{run}", clusters=f"clusters-{run}", index=f"index-{run}", parts=f"parts-{run}")
    settings = WorkerSettings(bootstrap_servers=broker.bootstrap_servers, group_id=f"g-{run}", worker_id="w1",
                              state_dir=workdir / "state", topics=topics)
    ensure_topics(settings)
    port = free_port()
    env = {**os.environ, "STREAMDEDUP_BOOTSTRAP_SERVERS": broker.bootstrap_servers,
           "STREAMDEDUP_GROUP_ID": settings.group_id, "STREAMDEDUP_WORKER_ID": "w1",
           "STREAMDEDUP_PROGRESS_INTERVAL_S": "1", "STREAMDEDUP_BATCH_TIMEOUT_S": "0.2",
           **{f"STREAMDEDUP_TOPIC_{k.upper()}": v for k, v in topics.__dict__.items()}}
    log = workdir / "worker.log"
    with open(log, "wb") as stderr:
        process = subprocess.Popen([sys.executable, "-m", "streamdedup", "-v", "worker", "--state",
                                    str(settings.state_dir), "--metrics-port", str(port)],
                                   env=env, stdout=subprocess.PIPE, stderr=stderr)
    running = Service(process, log, f"http://127.0.0.1:{port}", settings)
    try:
        deadline = time.monotonic() + 120
        while not any(r["message"].startswith("assigned ") for r in running.records()):
            assert process.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.2)
        records = [b"not json at all"]
        for i in range(ARTICLES):
            story = make_article(2000 + i, paragraphs=4)
            records += [orjson.dumps(page(f"https://{site.lower()}.example/{i}", wrap_in_template(story, site),
                                          f"2024-03-01T{j:02d}:{i:02d}:00Z")) for j, site in enumerate(SITES)]
        feed([RawRecord(f"test:{i}", data=r) for i, r in enumerate(records)], settings.client(), topics.pages)
        while running.pages_decided() < PAGES:
            assert process.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.2)
        yield running
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_health_and_readiness_beside_the_metrics_and_404_elsewhere(service):
    status, body = get(service.url + "/healthz")
    health = orjson.loads(body)
    assert status == 200 and health["ok"] and health["last_loop_age_s"] < 5, body
    status, body = get(service.url + "/readyz")
    ready = orjson.loads(body)
    topics = service.settings.topics
    assert status == 200 and ready["ok"], body
    assert set(ready["assigned"]) == {f"{topics.pages}[0]", f"{topics.index}[0]", f"{topics.parts}[0]"}
    assert get(service.url + "/nothing-here")[0] == 404
    assert get(service.url + "/")[0] == 404
    assert "streamdedup_pages_total" in service.metrics()


def test_lag_has_topic_and_partition_labels_and_reads_zero_when_caught_up(service):
    topics = service.settings.topics
    deadline = time.monotonic() + 10
    while True:  # the idle worker asks the broker for the partitions' ends within a second
        lag = samples(service.metrics(), "streamdedup_consumer_lag")
        wanted = {(("partition", "0"), ("topic", topic)) for topic in (topics.pages, topics.index, topics.parts)}
        if wanted <= set(lag) and all(lag[k] == 0 for k in wanted) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert wanted <= set(lag), lag
    assert {k: lag[k] for k in wanted} == dict.fromkeys(wanted, 0.0)
    # every topic's messages were transactional outputs of this worker or the feed's; the index
    # and parts partitions end with commit markers: the lag must not count them
    assert all(dict(k)["partition"].isdigit() for k in lag), lag


def test_progress_is_logged_at_info(service):
    pattern = re.compile(r"progress: (\d+) pages in .*?, (\d+) decided .*?: (.*); lag (.*); (\d+) partitions")
    deadline = time.monotonic() + 10
    found = None
    while found is None and time.monotonic() < deadline:
        lines = [r for r in service.records() if r["level"] == "INFO" and r["message"].startswith("progress:")]
        # the latest line once every page is decided and the lag of every topic reads 0
        found = next((m for r in reversed(lines) if (m := pattern.match(r["message"])) and int(m.group(2)) == PAGES
                      and all(kv.endswith("=0") for kv in m.group(4).split())), None)
        time.sleep(0.5)
    assert found is not None, [r["message"] for r in service.records()][-10:]
    assert int(found.group(1)) == PAGES
    assert dict(kv.split("=") for kv in found.group(3).split()) == {"unique": "3", "duplicate": "6", "rejected": "1"}
    topics = service.settings.topics
    assert {kv.split("=")[0] for kv in found.group(4).split()} == {topics.pages, topics.index, topics.parts}
    assert found.group(5) == "3"


def test_an_idle_caught_up_worker_uses_almost_no_cpu(service):
    """librdkafka fetches again the moment a fetch returns; noida-db answers an empty fetch at
    once, so a caught-up consumer spun at half a core (and the broker at 0.4). 0.1 core is a
    generous bound: the paused worker measures ~0.01."""
    time.sleep(1)
    before, started = cpu_seconds(service.process.pid), time.monotonic()
    time.sleep(3)
    used = (cpu_seconds(service.process.pid) - before) / (time.monotonic() - started)
    assert used < 0.1, f"an idle worker used {used:.2f} of a core"
    # and it still answers: a page sent now gets its verdict
    feed([RawRecord("late", data=orjson.dumps(page("https://late.example/1", "<p>" + " ".join(
        make_article(2999, paragraphs=2)) + "</p>")))], service.settings.client(), service.settings.topics.pages)
    deadline = time.monotonic() + 30
    while service.pages_decided() < PAGES + 1:
        assert time.monotonic() < deadline, "the idle worker did not pick up a new page"
        time.sleep(0.2)


def test_sigterm_stops_the_worker_cleanly(service):
    service.process.send_signal(signal.SIGTERM)
    try:
        stdout, _ = service.process.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail("the worker did not stop within 20 s of SIGTERM")
    assert service.process.returncode == 0
    assert orjson.loads(stdout.splitlines()[-1])["decided"] == PAGES + 1  # its final accounting line
