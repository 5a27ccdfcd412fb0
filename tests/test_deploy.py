"""docker-compose.yml and the Dockerfile, validated offline (no Docker engine here)."""

from dataclasses import fields
from pathlib import Path

import yaml

from streamdedup.cli import build_parser
from streamdedup.runtime.settings import WorkerSettings

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
OUR_ENV = ({"STREAMDEDUP_BOOTSTRAP_SERVERS", "STREAMDEDUP_METRICS_PORT", "STREAMDEDUP_METRICS_HOST"}  # the CLI's
           | {f"STREAMDEDUP_{f.name.upper()}" for f in fields(WorkerSettings)})


def test_services_that_build_use_existing_files_and_real_commands():
    built = {name: s for name, s in COMPOSE["services"].items() if "build" in s}
    assert set(built) == {"topics", "worker-1", "worker-2", "feeder"}
    worker_ids = {s["environment"]["STREAMDEDUP_WORKER_ID"] for n, s in built.items() if n.startswith("worker")}
    assert len(worker_ids) == 2, "each worker needs its own id (static membership, transactional id)"
    for name, service in built.items():
        build = service["build"]
        assert (ROOT / build["context"] / build["dockerfile"]).is_file(), name
        args = build_parser().parse_args(service["command"])  # SystemExit if the CLI disagrees
        assert args.command == service["command"][0]
        for variable in service.get("environment", {}):
            assert variable in OUR_ENV, f"{name}: {variable} is not read by streamdedup"


def test_references_resolve():
    services = COMPOSE["services"]
    assert services["kafka"]["image"].startswith("apache/kafka:")
    for name, service in services.items():
        for dependency in service.get("depends_on", {}):
            assert dependency in services, f"{name} depends on unknown {dependency}"
        for volume in service.get("volumes", []):
            assert volume.split(":")[0] in COMPOSE.get("volumes", {}), volume
    feeder_input = services["feeder"]["command"][1]
    assert (ROOT / feeder_input.removeprefix("/app/")).is_file()


def test_dockerfile_copies_what_exists():
    for line in (ROOT / "deploy" / "Dockerfile").read_text().splitlines():
        if line.startswith("COPY "):
            for source in line.split()[1:-1]:
                assert (ROOT / source).exists(), source
