"""docker-compose.yml, the Dockerfile and the monitoring files beside them, validated offline (no
Docker engine here): the compose file's structure, the files it mounts, commands that parse with
the real CLI, environment variables streamdedup reads, the host ports, Prometheus scraping the
workers' metrics port, and a Grafana dashboard that asks only for metrics the worker exports."""

import json
import re
import shlex
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest
import yaml

from streamdedup.cli import build_parser
from streamdedup.runtime.metrics import WorkerMetrics
from streamdedup.runtime.settings import WorkerSettings

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
OUR_ENV = ({"STREAMDEDUP_BOOTSTRAP_SERVERS", "STREAMDEDUP_METRICS_PORT", "STREAMDEDUP_METRICS_HOST"}  # the CLI's
           | {f"STREAMDEDUP_{f.name.upper()}" for f in fields(WorkerSettings)})


def test_the_compose_file_is_valid_by_the_compose_specification():
    """The Compose Specification's JSON schema, as check-jsonschema vendors it (offline)."""
    pytest.importorskip("check_jsonschema", reason="check-jsonschema (the test extra) validates the compose file")
    checked = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.compose-spec",
                              str(ROOT / "docker-compose.yml")], capture_output=True, text=True, timeout=120)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_services_that_build_use_existing_files_and_real_commands():
    built = {name: s for name, s in COMPOSE["services"].items() if "build" in s}
    assert set(built) == {"topics", "worker-1", "worker-2", "feeder"}
    worker_ids = {s["environment"]["STREAMDEDUP_WORKER_ID"] for n, s in built.items() if n.startswith("worker")}
    assert len(worker_ids) == 2, "each worker needs its own id (static membership, transactional id)"
    for name, service in built.items():
        build = service["build"]
        assert (ROOT / build["context"] / build["dockerfile"]).is_file(), name
        args = build_parser().parse_args(service["command"])  # SystemExit if the CLI disagrees
        assert args.command == next(word for word in service["command"] if not word.startswith("-"))
        for variable in service.get("environment", {}):
            assert variable in OUR_ENV, f"{name}: {variable} is not read by streamdedup"


def test_references_resolve():
    services = COMPOSE["services"]
    assert services["kafka"]["image"].startswith("apache/kafka:")
    for name, service in services.items():
        for dependency in service.get("depends_on", {}):
            assert dependency in services, f"{name} depends on unknown {dependency}"
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("./"):  # a file or folder of this repository, bind-mounted
                assert (ROOT / source).exists(), f"{name} mounts {source}, which does not exist"
            else:
                assert source in COMPOSE.get("volumes", {}), volume
    feeder_input = services["feeder"]["command"][1]
    assert (ROOT / feeder_input.removeprefix("/app/")).is_file()


def test_the_native_demo_in_runtime_md_runs_each_built_service_with_the_real_cli():
    """README's docker-compose section sends a user without Docker to docs/runtime.md's native commands:
    each parses with the real CLI, reads only variables streamdedup reads, and together they run what the
    compose file builds (topics of its partitions, one worker per worker service, the feeder's input)."""
    assert "(docs/runtime.md#the-compose-demo-natively)" in (ROOT / "README.md").read_text()
    text = (ROOT / "docs" / "runtime.md").read_text()
    (block,) = re.findall(r"### The compose demo, natively\n.*?```sh\n(.*?)```", text, flags=re.S)
    commands, env = [], {}
    for line in block.splitlines():
        words = shlex.split(line.split("  #")[0].split(";")[-1].strip().removesuffix("&"))
        words = words[1:] if words[:1] == ["export"] else words
        env |= dict(w.split("=", 1) for w in words if "=" in w and not w.startswith("-"))
        words = [w for w in words if "=" not in w or w.startswith("-")]
        if words[:1] == ["streamdedup"]:
            commands.append(build_parser().parse_args(words[1:]))  # SystemExit if the CLI disagrees
    assert set(env) <= OUR_ENV, set(env) - OUR_ENV
    built = {name: s for name, s in COMPOSE["services"].items() if "build" in s}
    assert env["STREAMDEDUP_PARTITIONS"] == built["topics"]["environment"]["STREAMDEDUP_PARTITIONS"]
    workers = [c for c in commands if c.command == "worker"]
    assert sorted(w.worker_id for w in workers) == sorted(s["environment"]["STREAMDEDUP_WORKER_ID"] for s in WORKERS.values())
    assert len({str(w.state) for w in workers}) == len(workers), "each worker its own --state"
    (feed,) = [c for c in commands if c.command == "feed"]
    assert [str(i) for i in feed.inputs] == [built["feeder"]["command"][1].removeprefix("/app/")]
    assert {"broker", "topics", "worker", "feed", "clusters"} <= {c.command for c in commands}


def test_dockerfile_copies_what_exists():
    for line in (ROOT / "deploy" / "Dockerfile").read_text().splitlines():
        if line.startswith("COPY "):
            for source in line.split()[1:-1]:
                assert (ROOT / source).exists(), source


def test_the_image_compiles_the_kernels_at_build():
    """Without it each worker container compiled numba's kernels at every start: ~70 s before its
    /healthz answered (the healthcheck's start_period is 60 s) and ~55 s more in its first batch."""
    lines = (ROOT / "deploy" / "Dockerfile").read_text().splitlines()
    install = next(i for i, line in enumerate(lines) if line.startswith("RUN pip install"))
    warm = [line for line in lines[install + 1:] if line.startswith("RUN streamdedup dedup ")]
    assert warm, "no RUN streamdedup dedup after the install: the kernels compile at every container start"
    argv = warm[0].removeprefix("RUN streamdedup ").split(" && ")[0].split()
    args = build_parser().parse_args(argv)
    assert all((ROOT / path).is_file() for path in args.inputs) and "-q" in argv


WORKERS = {name: s for name, s in COMPOSE["services"].items() if name.startswith("worker")}


def metrics_port(worker: dict) -> int:
    return int(worker["environment"]["STREAMDEDUP_METRICS_PORT"])


def exported_metric_names() -> set[str]:
    """Every sample name a worker's /metrics can show (a counter's `_total`, a histogram's
    `_bucket`, `_sum` and `_count`), from the worker's own registry."""
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}
    names = {f.name + suffix for f in WorkerMetrics().registry.collect() for suffix in suffixes[f.type]}
    assert len(names) > 10
    return names


def test_kafka_keeps_its_data_in_the_volume_and_listens_on_the_host():
    kafka = COMPOSE["services"]["kafka"]
    env = kafka["environment"]
    mounts = {v.split(":")[1] for v in kafka["volumes"]}
    assert env["KAFKA_LOG_DIRS"] in mounts, "Kafka's log dirs must be the mounted volume"
    listeners = dict(item.split("://") for item in env["KAFKA_ADVERTISED_LISTENERS"].split(","))
    assert listeners["EXTERNAL"].startswith("localhost:")
    host_port = listeners["EXTERNAL"].split(":")[1]
    assert f"127.0.0.1:{host_port}:{host_port}" in kafka["ports"]
    assert "EXTERNAL:PLAINTEXT" in env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"]


def test_workers_publish_metrics_on_the_host_loopback_and_check_their_health():
    host_ports = set()
    for name, worker in WORKERS.items():
        port = metrics_port(worker)
        assert worker["environment"]["STREAMDEDUP_METRICS_HOST"] == "0.0.0.0", name
        assert str(port) in worker["expose"]
        (published,) = worker["ports"]
        host, host_port, container_port = published.split(":")
        assert host == "127.0.0.1" and int(container_port) == port, published  # no authentication
        host_ports.add(host_port)
        check = " ".join(worker["healthcheck"]["test"])
        assert f"127.0.0.1:{port}/healthz" in check, check
    assert len(host_ports) == len(WORKERS)


def test_prometheus_scrapes_every_worker_on_its_metrics_port():
    service = COMPOSE["services"]["prometheus"]
    mounted = {v.split(":")[1]: v.split(":")[0] for v in service["volumes"]}
    config_path = next(a.split("=", 1)[1] for a in service["command"] if a.startswith("--config.file="))
    config = yaml.safe_load((ROOT / mounted[config_path]).read_text())
    (job,) = config["scrape_configs"]
    assert job.get("metrics_path", "/metrics") == "/metrics"
    targets = {t for static in job["static_configs"] for t in static["targets"]}
    assert targets == {f"{name}:{metrics_port(worker)}" for name, worker in WORKERS.items()}


def test_grafana_is_provisioned_with_prometheus_and_a_dashboard_of_real_metrics():
    service = COMPOSE["services"]["grafana"]
    mounted = {v.split(":")[1]: ROOT / v.split(":")[0] for v in service["volumes"] if v.startswith("./")}
    provisioning = mounted["/etc/grafana/provisioning"]
    (source,) = yaml.safe_load((provisioning / "datasources" / "prometheus.yml").read_text())["datasources"]
    prometheus_port = COMPOSE["services"]["prometheus"]["ports"][0].split(":")[-1]
    assert source["type"] == "prometheus" and source["url"] == f"http://prometheus:{prometheus_port}"
    (provider,) = yaml.safe_load((provisioning / "dashboards" / "streamdedup.yml").read_text())["providers"]
    dashboards = mounted[provider["options"]["path"]]
    files = sorted(dashboards.glob("*.json"))
    assert files, dashboards
    exported = exported_metric_names()
    for path in files:
        dashboard = json.loads(path.read_text())  # parses
        exprs = [t["expr"] for panel in dashboard["panels"] for t in panel.get("targets", [])]
        assert exprs and all(t["datasource"]["uid"] == source["uid"] for p in dashboard["panels"]
                             for t in p.get("targets", []))
        used = {name for expr in exprs for name in re.findall(r"\bstreamdedup_[a-z_]+", expr)}
        unknown = used - exported
        assert not unknown, f"{path.name} asks for metrics the worker does not export: {sorted(unknown)}"
        families = {f.name for f in WorkerMetrics().registry.collect()}
        shown = {name for name in families if any(u.startswith(name) for u in used)}
        assert shown == families, f"metrics without a panel: {sorted(families - shown)}"
    home = service["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert (dashboards / Path(home).name).is_file()


DOCKERFILE = (ROOT / "deploy" / "Dockerfile").read_text()


def dockerignored(path: str, patterns: list[str]) -> bool:
    """Whether Docker leaves `path` (relative to the context) out of the build context: it or a
    folder above it matches a pattern (`**/` any folders; no `!` exceptions are used here)."""
    import fnmatch

    parts = path.split("/")
    prefixes = ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]
    for pattern in patterns:
        pattern = pattern.rstrip("/")
        if pattern.startswith("**/"):
            tail = pattern[3:]
            if any(fnmatch.fnmatchcase("/".join(parts[i:n]), tail) for n in range(1, len(parts) + 1)
                   for i in range(n)):
                return True
        elif any(fnmatch.fnmatchcase(prefix, pattern) for prefix in prefixes):
            return True
    return False


def test_the_image_installs_at_the_pinned_versions():
    """lxml, regex and click drift without the pins, and a store refuses another ICU: an image
    rebuilt without them could refuse its own volumes."""
    installs = [line for line in DOCKERFILE.splitlines() if line.startswith("RUN") and "pip install" in line]
    assert installs and all("-c constraints.txt" in line for line in installs), installs
    copied = {source for line in DOCKERFILE.splitlines() if line.startswith("COPY ") for source in line.split()[1:-1]}
    assert "constraints.txt" in copied


def test_the_build_context_leaves_out_the_virtualenv_history_and_state():
    ignore = ROOT / ".dockerignore"
    assert ignore.is_file(), "without .dockerignore the build context holds .venv (851 MB) and .git"
    patterns = [line.strip() for line in ignore.read_text().splitlines() if line.strip() and not line.startswith("#")]
    for left_out in (".venv/bin/python", ".git/HEAD", "streamdedup/__pycache__/cli.cpython-311.pyc",
                     "bench/results/latest.json", "out/crawl/state/CURRENT", "state/pages-0/CURRENT",
                     "demo-data/broker/x", ".pytest_cache/v/x", ".mypy_cache/x"):
        assert dockerignored(left_out, patterns), left_out
    for needed in ("pyproject.toml", "README.md", "constraints.txt", "streamdedup/cli.py",
                   "streamdedup/data/sample_crawl.jsonl.gz", "streamdedup/store/signature_store.py"):
        assert not dockerignored(needed, patterns), needed
