"""Worker settings: defaults < config file < environment < command-line flags.

The config file is TOML, with [kafka] and [worker] tables; the environment variables are STREAMDEDUP_*.
Any librdkafka client setting, TLS and SASL included, passes through as STREAMDEDUP_KAFKA_<NAME> (dots as
underscores: STREAMDEDUP_KAFKA_SASL_MECHANISM) or in the file's [kafka] table. Secrets are masked whenever
settings are shown or logged."""

from __future__ import annotations

import difflib
import hashlib
import os
from collections.abc import Mapping
from dataclasses import Field, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from streamdedup.config import read_toml
from streamdedup.logs import kafka_logger
from streamdedup.outputs.kafka_contract import Topics
from streamdedup.record.batches import DEFAULT_BATCH_BYTES, check_batch_limits

TOPOLOGIES = ("global", "local")
ON_TOPIC_RESET = ("refuse", "restart")  # what a worker does with a partition that started over
# a setting's kind, as its error names it ("a int" read badly)
_KIND_NAMES = {int: "a whole number", float: "a number", str: "a text"}
# a yes-or-no setting's texts (an environment variable's, a TOML string's); "" is an unset variable: no
_YES = ("1", "true", "yes", "on")
_NO = ("0", "false", "no", "off", "")
SECRET_MARKERS = ("password", "passwd", "secret", "key", "token", "credential", "jaas", "private")


# read by the command line itself (cli.py), not a worker setting
COMMAND_VARIABLES = {"STREAMDEDUP_METRICS_PORT", "STREAMDEDUP_METRICS_HOST", "STREAMDEDUP_CONNECT_TIMEOUT"}


def check_variable_names(env: Mapping[str, str], known: set[str]) -> None:
    """Refuse a STREAMDEDUP_* variable that is a near miss of a known one (STREAMDEDUP_BATCH_SIZ).

    A misspelt setting was not applied, without a word: the worker ran at the default. Only near
    misses are refused: other STREAMDEDUP_* names (the tests' and benchmarks' own) pass."""
    for name in sorted(k for k in env if k.startswith("STREAMDEDUP_") and k not in known
                       and not k.startswith(("STREAMDEDUP_TOPIC_", "STREAMDEDUP_KAFKA_"))):
        close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.85)
        if close:
            raise ValueError(f"unknown variable {name}: did you mean {close[0]}? (the setting is not applied as "
                             "spelt; rename or unset it)")


def is_secret(name: str) -> bool:
    """Whether a client setting may carry a secret.

    A password, key, token or credential in its name, or a `*.config` (sasl.jaas.config,
    sasl.oauthbearer.config: a client secret inline). File locations (ssl.ca.location,
    ssl.key.location) name a path, not its content."""
    lower = name.lower()
    if lower.endswith(".location"):
        return False
    return lower.endswith(".config") or any(marker in lower for marker in SECRET_MARKERS)


def mask(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The settings with those that may carry a secret (`is_secret`) shown as *****."""
    return {k: "*****" if is_secret(k) else v for k, v in settings.items()}


WORKER_ID_FILE = "worker-id"  # in the state directory: the default worker id it was first run under


def default_worker_id(state_dir: Path) -> str:
    """The worker id of a worker (or Faust app) not given one: the host name and a hash of its state directory.

    Unique per process on a host, since two cannot share a state directory (`worker/state_lock.py`), and the same
    at every restart on that directory. The host name alone made two workers or apps on one host take the same
    static group.instance.id: the group fenced the workers, and the Faust apps rebalanced for ever. A state
    directory keeps the id it was first run under: `WORKER_ID_FILE` (`keep_worker_id`), or, written by 0.11.0 or
    earlier (a worker's `producer-<host>.json`, a Faust app's `faust-data`, no id file), the host name alone:
    under another id its static member would hold its partitions until the broker ends its session, which
    noida-db and Tansu never do."""
    host = os.uname().nodename
    state = Path(state_dir)
    try:
        kept = (state / WORKER_ID_FILE).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        kept = ""
    if kept:
        return kept
    if (state / f"producer-{host}.json").exists() or (state / "faust-data").exists():
        return host  # a state directory of 0.11.0 or earlier keeps its id: its static member holds its partitions
    where = hashlib.sha256(str(state.resolve()).encode("utf-8", "surrogateescape")).hexdigest()[:8]
    return f"{host}-{where}"


def keep_worker_id(settings: WorkerSettings) -> None:
    """Write a default worker id into its state directory (`WORKER_ID_FILE`), where it is read at every restart.

    Only a default id (one not given), and only once."""
    state = Path(settings.state_dir)
    path = state / WORKER_ID_FILE
    if path.exists() or settings.worker_id != default_worker_id(state):
        return
    state.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    partial.write_text(settings.worker_id + "\n", encoding="utf-8")
    os.replace(partial, path)


def _settings(settings: WorkerSettings | type[WorkerSettings]) -> list[Field[Any]]:
    """The fields of WorkerSettings a user sets (not the private ones)."""
    return [f for f in fields(settings) if not f.name.startswith("_")]


@dataclass(frozen=True)
class WorkerSettings:
    """A worker's or the Faust app's settings: the broker, group, topics, state folder and batches.

    From the `[worker]` and `[kafka]` tables of `--config` < `STREAMDEDUP_*` environment < flags
    (docs/runtime.md, "Settings"); the fields starting with `_` are not a user's."""

    bootstrap_servers: str = "127.0.0.1:9092"
    group_id: str = "streamdedup"
    # the static group.instance.id and transactional id's name; "" (not given): `default_worker_id(state_dir)`
    worker_id: str = ""
    state_dir: Path = Path("state")
    batch_size: int = 256
    # a batch also ends with the message that brings it to this many bytes: it is held in memory
    # whole (record/batches.py); at least one message a batch
    batch_bytes: int = DEFAULT_BATCH_BYTES
    batch_timeout_s: float = 0.5
    transactions: bool = True
    partitions: int = 1  # for topics the worker creates
    # replicas of each topic the worker creates: 1 for a dev broker; production: 3 (the topics then
    # get min.insync.replicas 2, docs/runtime.md). Existing topics keep theirs
    replication_factor: int = 1
    # retention.ms of the internal topics (changelogs the index and parts stores are rebuilt from)
    # the worker creates; -1: for ever. At least the detector's retention plus its max_clock_skew
    changelog_retention_ms: int = -1
    topology: str = "global"  # global: near-duplicates found across partitions; local: per partition
    static_membership: bool = True  # a restarted worker gets its partitions back at once
    # range: every topic's partitions spread evenly (each worker fingerprints, indexes and
    # gathers); cooperative-sticky: fewest partitions move on a rebalance (fewer store rebuilds)
    assignment_strategy: str = "range"
    # caught up, the worker pauses fetching and asks the partitions' end offsets this often:
    # noida-db answers an empty fetch at once (it ignores fetch.wait.max.ms), so a caught-up
    # consumer would fetch thousands of times a second; 0 keeps fetching (Apache Kafka waits)
    idle_poll_s: float = 0.25
    # global topology, final verdicts: a complete page is held until every index partition it was
    # sent to has passed it (watermarks), at most this long; then it goes out with what is known
    # and a match found later is a counted late_match. 0: no holding (verdicts as soon as complete)
    verdict_wait_s: float = 5.0
    # a caught-up (idle) input partition sends an "infinite" watermark after this long, so it never
    # holds the others' verdicts back. Longer than a worker takes to notice records on an idle
    # partition (an end-offset poll, `idle_poll_s`; the fetch after resuming, up to ~1 s; a batch,
    # `batch_timeout_s`): else a burst's pages on one worker went out under the infinite watermarks
    # of partitions whose records another worker had not fetched yet (late matches, after_idle)
    watermark_interval_s: float = 2.0
    # how far back a page's fetch time may be behind the newest one seen on its input partition
    # and still be on time; 0: the watermark is the newest page's place in the order itself
    allowed_lateness_ms: int = 0
    progress_interval_s: float = 30.0  # a progress line at INFO this often once assigned; 0 = never
    stall_timeout_s: float = 120.0  # /healthz fails when the loop has not gone round for this long
    # the longest a worker may go between polls before the group drops it (Kafka's default); also
    # how long librdkafka waits for a JoinGroup answer before it asks again (see runtime/broker.py)
    max_poll_interval_s: float = 300.0
    # a partition whose store read a topic that has since started over (deleted and created again,
    # a broker that lost its data, another cluster; runtime/topic_reset.py): refuse to start, naming
    # the fix, or restart (judge it from its beginning, keeping what the store knows, with a warning).
    # refuse: only the operator knows whether the new topic's records are new (restart) or the old
    # ones copied with other offsets (a mirrored cluster, where restarting would judge them again)
    on_topic_reset: str = "refuse"
    # write this worker's verdict settings (policies, retention, clock skew) as its group's new ones
    # (runtime/group_settings.py); without it, a worker whose settings are not its group's refuses to start
    adopt_settings: bool = False
    topics: Topics = Topics()
    kafka: Mapping[str, str] = field(default_factory=dict)  # extra librdkafka settings
    # not a setting: the state directory (resolved) a default `worker_id` was made for, and that id (None:
    # the id was given), so that `dataclasses.replace` with another `state_dir` gives that directory's default
    _worker_id_of: tuple[Path, str] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        made = self._worker_id_of
        moved = made is not None and self.worker_id == made[1] and Path(self.state_dir).resolve() != made[0]
        if not self.worker_id or moved:
            object.__setattr__(self, "worker_id", default_worker_id(self.state_dir))
            object.__setattr__(self, "_worker_id_of", (Path(self.state_dir).resolve(), self.worker_id))

    def risks(self) -> list[str]:
        """Settings that work but cost correctness a user would not expect, one line each with the fix."""
        notice = self.idle_poll_s + self.batch_timeout_s  # the least a worker takes to fetch a burst's records
        if self.topology == "global" and self.verdict_wait_s > 0 and self.watermark_interval_s < notice:
            return [f"watermark_interval_s {self.watermark_interval_s:g} is shorter than a worker takes to notice "
                    f"and fetch records on an idle partition (idle_poll_s {self.idle_poll_s:g} + batch_timeout_s "
                    f"{self.batch_timeout_s:g}): a burst after a quiet spell can be released before its earlier "
                    "copies on other workers' partitions (late matches, cause after_idle). Set "
                    "STREAMDEDUP_WATERMARK_INTERVAL_S to 2 (the default) or more"]
        return []

    def __repr__(self) -> str:
        shown = {f.name: getattr(self, f.name) for f in _settings(self) if f.name != "kafka"}
        return f"WorkerSettings({shown}, kafka={mask(self.kafka)})"

    def client(self, **extra: Any) -> dict[str, Any]:
        """librdkafka settings for one client: ours, then the user's pass-through, then `extra`.

        Its log goes through Python's logging (`logs.kafka_logger`: JSON lines, repeats held back)."""
        return {"bootstrap.servers": self.bootstrap_servers, "logger": kafka_logger(), **self.kafka, **extra}

    @classmethod
    def load(cls, config_file: Path | None = None, env: Mapping[str, str] | None = None,
             **flags: Any) -> WorkerSettings:
        """The worker's settings: the defaults, then the config file, the environment, then the flags given."""
        settings = cls()
        if config_file is not None:
            data = read_toml(config_file)
            kafka = {str(k): str(v) for k, v in data.get("kafka", {}).items()}
            settings = settings._with(data.get("worker", {}), kafka)
        env = os.environ if env is None else env
        from_env = {f.name: env[f"STREAMDEDUP_{f.name.upper()}"] for f in _settings(cls)
                    if f"STREAMDEDUP_{f.name.upper()}" in env and f.name not in ("topics", "kafka")}
        topics_env = {name: env[f"STREAMDEDUP_TOPIC_{name.upper()}"] for name in Topics.__dataclass_fields__
                      if f"STREAMDEDUP_TOPIC_{name.upper()}" in env}
        topic_names = {name.upper() for name in Topics.__dataclass_fields__}  # as read above: upper case
        misspelt = sorted(k for k in env if k.startswith("STREAMDEDUP_TOPIC_")
                          and k[len("STREAMDEDUP_TOPIC_"):] not in topic_names)
        if misspelt:  # else the worker reads or writes the default topic, without a word
            raise ValueError(f"unknown topic variables {misspelt}; known: "
                             f"{[f'STREAMDEDUP_TOPIC_{name.upper()}' for name in Topics.__dataclass_fields__]}")
        kafka_env = {k[len("STREAMDEDUP_KAFKA_"):].lower().replace("_", "."): v for k, v in env.items()
                     if k.startswith("STREAMDEDUP_KAFKA_")}
        check_variable_names(env, {f"STREAMDEDUP_{f.name.upper()}" for f in _settings(cls)} | COMMAND_VARIABLES)
        settings = settings._with({**from_env, **({"topics": topics_env} if topics_env else {})}, kafka_env)
        return settings._with({k: v for k, v in flags.items() if v is not None}, {})

    def _with(self, values: Mapping[str, Any], kafka: Mapping[str, str]) -> WorkerSettings:
        known = {f.name: f for f in _settings(self)}
        unknown = set(values) - set(known)
        if unknown:
            raise ValueError(f"unknown worker settings {sorted(unknown)}; known: {sorted(known)}")
        changes: dict[str, Any] = {}
        for name, value in values.items():
            current = getattr(self, name)
            if name == "topics":
                known_topics = set(Topics.__dataclass_fields__)
                names = set(value) if isinstance(value, Mapping) else None
                if names is None or names - known_topics:
                    wrong = "not a table" if names is None else f"unknown topics {sorted(names - known_topics)}"
                    raise ValueError(f"[worker.topics]: {wrong}; known: {list(Topics.__dataclass_fields__)} "
                                     "(e.g. pages = \"crawl\")")
                changes[name] = replace(current, **dict(value))
            elif isinstance(current, bool):  # a typo ("ture") read as no: exactly-once was off without a word
                text = value if isinstance(value, bool) else str(value).strip().lower()
                if not isinstance(text, bool) and text not in _YES + _NO:
                    raise ValueError(f"worker setting {name} is true or false (1 or 0, yes or no), got {value!r} "
                                     f"([worker] {name}, STREAMDEDUP_{name.upper()} or its flag)")
                changes[name] = text if isinstance(text, bool) else text in _YES
            elif isinstance(current, Path):
                changes[name] = Path(value)
            else:
                try:
                    changes[name] = type(current)(value)
                except (TypeError, ValueError):
                    kind = _KIND_NAMES.get(type(current), f"a {type(current).__name__}")
                    raise ValueError(f"worker setting {name} is {kind} (as {current!r}), got "
                                     f"{value!r} ([worker] {name}, STREAMDEDUP_{name.upper()} or its flag)") from None
        merged = {**self.kafka, **kafka}
        result = replace(self, **changes, kafka=merged)
        check_batch_limits(result.batch_size, result.batch_bytes, "messages")
        at_least = {"partitions": 1, "replication_factor": 1, "changelog_retention_ms": -1}
        for f in fields(result):
            value = getattr(result, f.name)
            if isinstance(value, int | float) and not isinstance(value, bool) and value < at_least.get(f.name, 0):
                raise ValueError(f"worker setting {f.name} must be {at_least.get(f.name, 0)} or more, got {value!r} "
                                 f"([worker] {f.name}, STREAMDEDUP_{f.name.upper()} or its flag)")
        if result.topology not in TOPOLOGIES:
            raise ValueError(f"unknown topology {result.topology!r}: choose {' or '.join(TOPOLOGIES)} "
                             "([worker] topology, STREAMDEDUP_TOPOLOGY or --topology)")
        if result.on_topic_reset not in ON_TOPIC_RESET:
            raise ValueError(f"unknown on_topic_reset {result.on_topic_reset!r}: choose {' or '.join(ON_TOPIC_RESET)} "
                             "([worker] on_topic_reset, STREAMDEDUP_ON_TOPIC_RESET or --on-topic-reset)")
        return result
