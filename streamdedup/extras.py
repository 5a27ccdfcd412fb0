"""The optional parts of the install (pyproject's extras).

Which command needs which, and the one line that says how to add a missing one."""

from __future__ import annotations

import importlib.util
import platform
import sys

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
    raise MissingExtra(f"streamdedup {command} needs the {extra} extra: pip install -c constraints.txt '.[{extra}]' "
                       f"in a streamdedup checkout (or pip install {EXTRA_PACKAGES[extra]})")
