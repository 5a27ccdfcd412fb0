"""The optional parts of the install (pyproject's extras).

Which command needs which, and the one line that says how to add a missing one."""

from __future__ import annotations

import importlib.util
import platform
import shlex
import sys
from pathlib import Path

# the distribution's name on the package index (`streamdedup` there is another project); the
# import package is `streamdedup`
DISTRIBUTION = "streamdedup-crawl"
# optional parts (pyproject's extras): the modules each one brings, and the commands that need it
EXTRAS: dict[str, tuple[str, ...]] = {
    "kafka": ("confluent_kafka", "prometheus_client", "cramjam"),
    "faust": ("confluent_kafka", "prometheus_client", "faust", "cramjam"),
    "broker": ("confluent_kafka", "prometheus_client", "cramjam", "noida_db"),
    "eval": ("matplotlib", "rapidfuzz"),
}
# the distributions that bring an extra's modules (what pip installs by hand)
EXTRA_PACKAGES = {"kafka": "confluent-kafka prometheus-client cramjam",
                  "faust": "confluent-kafka prometheus-client faust-streaming cramjam",
                  "broker": "confluent-kafka prometheus-client cramjam noida-db", "eval": "matplotlib rapidfuzz"}
COMMAND_EXTRAS = {"worker": "kafka", "feed": "kafka", "topics": "kafka", "faust": "faust",
                  "broker": "broker", "demo": "broker", "eval": "eval"}
# noida-db (the development broker) ships wheels for these platforms only
NOIDA_PLATFORMS = (("linux", "x86_64"), ("darwin", None), ("win32", None))


class MissingExtra(Exception):
    """A command whose optional part is not installed; the message is the one line to show."""


def check_extra(command: str) -> None:
    """Raise MissingExtra, one line naming the fix, if `command` needs an extra not installed."""
    extra = COMMAND_EXTRAS.get(command)
    if extra is None:
        return
    missing = [name for name in EXTRAS[extra] if importlib.util.find_spec(name) is None]
    if not missing:
        return
    if "noida_db" in missing and not any(sys.platform == system and machine in (None, platform.machine())
                                         for system, machine in NOIDA_PLATFORMS):
        raise MissingExtra(f"streamdedup {command} needs noida-db (the development broker), which has no wheel for "
                           f"{sys.platform} {platform.machine()}: run Kafka (or another Kafka-protocol broker) "
                           "and point `streamdedup worker --bootstrap-servers` at it")
    raise MissingExtra(f"streamdedup {command} needs the {extra} extra: {install_hint(extra)}")


def _checkout() -> Path | None:
    """The checkout this code runs from (an editable install, as `make` makes, or PYTHONPATH), if any."""
    root = Path(__file__).resolve().parents[1]
    return root if (root / "pyproject.toml").is_file() and (root / "constraints.txt").is_file() else None


def install_hint(extra: str) -> str:
    """How to add `extra`; from a checkout, editable and into this interpreter.

    A plain `pip install .` there would replace the checkout's editable install (`make`'s .venv)
    with a copy that the checkout's later edits do not reach."""
    root = _checkout()
    if root is None:
        return (f"pip install -c constraints.txt '.[{extra}]' "
                f"in a streamdedup checkout (or pip install {EXTRA_PACKAGES[extra]})")
    return (f"cd {shlex.quote(str(root))} && {shlex.quote(sys.executable)} -m pip install -c constraints.txt "
            f"-e '.[{extra}]' (or pip install {EXTRA_PACKAGES[extra]})")
