"""docker-compose.yml and the Dockerfile, validated offline (no Docker engine here)."""

from pathlib import Path

import yaml

from streamdedup.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]


def test_compose_services_build_from_existing_files_and_run_real_commands():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    assert compose["services"], "no services"
    for name, service in compose["services"].items():
        build = service["build"]
        assert (ROOT / build["context"] / build["dockerfile"]).is_file(), name
        args = build_parser().parse_args(service["command"])  # raises SystemExit if the CLI disagrees
        assert args.command
        for volume in service.get("volumes", []):
            assert volume.split(":")[0] in compose.get("volumes", {}), volume


def test_dockerfile_copies_what_exists():
    lines = (ROOT / "deploy" / "Dockerfile").read_text().splitlines()
    for line in lines:
        if line.startswith("COPY "):
            for source in line.split()[1:-1]:
                assert (ROOT / source).exists(), source
