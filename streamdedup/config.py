"""The detector's configuration: methods with parameters, policy, cleaning, retention.

Read from a TOML file and command-line flags (flags win). Only what changes signatures (cleaning,
tokeniser, method parameters) is recorded in the store; policy and retention may change freely
between runs, but the workers of one group must agree on them (`verdict_settings`).
"""

from __future__ import annotations

import json
import numbers
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import xxhash

from streamdedup.clean.pipeline import CleaningConfig
from streamdedup.clean.template import TemplateParams
from streamdedup.fingerprints.registry import METHODS
from streamdedup.record.batches import DEFAULT_BATCH_BYTES, check_batch_limits
from streamdedup.store.retention import DEFAULT_MAX_CLOCK_SKEW, RetentionClock
from streamdedup.tokens.tokenize import ICU_VERSION

if TYPE_CHECKING:
    from streamdedup.verdict.policy import SitePolicy

# v2: token hashes from the compiled scan (was xxh3 of UTF-8); v3: Thai, Lao, Khmer and Myanmar cut
# into words by ICU, whose dictionaries are named by its version
TOKENIZER_VERSION = f"words-v3+icu{ICU_VERSION}"
DEFAULT_METHODS = ("exact", "minhash", "simhash", "a12", "wordpairs")
DEFAULT_POLICY = "exact|minhash|simhash+a12"
# a stricter policy for a site's own pages while its template is unknown: no longer the default
# (a site's first pages are judged like any other: docs/design.md), kept for `--same-site-policy`
STRICT_SAME_SITE_POLICY = "exact|minhash>=0.8|minhash.containment>=0.95+minhash>=0.4"
# a match is the page's duplicate only if the page's text absent from it (its word pairs) is at most
# this share of the page or this many pairs (`policy.NewTextTolerance`; the reasons: docs/design.md)
DEFAULT_MAX_NEW_SHARE = 0.10
DEFAULT_MAX_NEW_PAIRS = 8
# ... and holds no new paragraph of this many words or more (`wordpairs` paragraph sketch; 0: not asked)
DEFAULT_MIN_NEW_PARAGRAPH_WORDS = 20
# a --config file's top-level keys (its [worker] and [kafka] tables are the Kafka commands'):
# docs/reference.md, "Configuration", shows each (tests/test_docs_config.py)
CONFIG_KEYS = frozenset({"methods", "params", "policy", "same_site_policy", "max_new_share", "max_new_pairs",
                         "min_new_paragraph_words", "extractor", "retention", "batch_size", "batch_bytes",
                         "max_content_bytes", "lexicon", "max_clock_skew", "prepare_threads", "template",
                         "learned_extraction"})
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_duration(text: str, name: str | None = None) -> timedelta:
    """'90s', '12h', '7d', '26w'; another text ends in one line naming the setting (`name`) it was given for."""
    match = _DURATION.match(text)
    if not match:
        raise ValueError(f"{name + ' ' if name else ''}{text!r} is not a duration: use a number and one of s, m, h, d, "
                         "w (e.g. 7d)")
    return timedelta(**{_UNITS[match.group(2)]: float(match.group(1))})


def verdict_identity(settings: Mapping[str, str]) -> bytes:
    """The 8 bytes that name `DetectorConfig.verdict_settings`.

    8 bytes that name `DetectorConfig.verdict_settings` (as `registry.signature_identity` names
    what signatures are made with)."""
    return xxhash.xxh3_64_digest(json.dumps(dict(sorted(settings.items()))).encode())


def read_toml(path: str | Path) -> dict[str, Any]:
    """A configuration file's table; one not TOML is named (the parser's message names only the line)."""
    import tomllib  # here: most runs read no file

    try:
        handle = open(path, "rb")  # closed below; a missing file named first
    except (FileNotFoundError, IsADirectoryError):
        what = "is a folder" if Path(path).is_dir() else "does not exist"
        raise FileNotFoundError(f"configuration file {path} {what}: give --config the path of a TOML "
                                "file") from None
    with handle:
        try:
            return tomllib.load(handle)
        except tomllib.TOMLDecodeError as err:
            raise ValueError(f"{path} is not valid TOML: {err}") from None


@dataclass(frozen=True)
class DetectorConfig:
    """The detector's settings: methods, policies, cleaning, template model, retention and batches.

    From TOML (`from_toml`), flags (`cli_options`) or Python; a config file's keys, which include
    `extractor` and `max_content_bytes` (no fields here), as a mapping: `from_mapping({"extractor":
    "trafilatura"})`. Each field's kind checked as it is made
    (`_FIELD_KINDS`). What signatures depend on is recorded in the store, which refuses other values;
    policies and retention may change freely (docs/reference.md, "Configuration")."""

    methods: tuple[str, ...] = DEFAULT_METHODS
    method_params: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    policy: str = DEFAULT_POLICY
    same_site_policy: str | None = None  # None: `policy` (STRICT_SAME_SITE_POLICY is the stricter option)
    max_new_share: float = DEFAULT_MAX_NEW_SHARE
    max_new_pairs: int = DEFAULT_MAX_NEW_PAIRS
    min_new_paragraph_words: int = DEFAULT_MIN_NEW_PARAGRAPH_WORDS
    cleaning: CleaningConfig = CleaningConfig()
    retention: timedelta | None = None
    # a page's fetch time further ahead of the clock than this is not trusted (store/retention.py)
    max_clock_skew: timedelta = DEFAULT_MAX_CLOCK_SKEW
    # each site's boilerplate, learned from the stream and removed before fingerprinting (None: off)
    template: TemplateParams | None = TemplateParams()
    batch_size: int = 256
    # a batch also ends with the page that brings it to this many bytes (record/batches.py): a batch
    # is held in memory whole, and 256 pages at the content cap would need ~10 GB
    batch_bytes: int = DEFAULT_BATCH_BYTES
    # threads that prepare (parse, clean, fingerprint) a batch's pages side by side, each with its
    # own extraction process; 0: one per CPU (Fingerprinter.prepare_many). Verdicts do not depend on it
    prepare_threads: int = 0
    # `fast` reads a warm site's pages from the container its earlier pages taught it
    # (clean/learned_layout.py; needs the template model, whose records keep it). Off: every page by `fast`
    learned_extraction: bool = True
    lexicon: str = "wordfreq"  # or a file from `streamdedup lexicon build`, for every global method

    def __post_init__(self) -> None:
        _check_kinds(self)
        if not self.methods:
            raise ValueError(f"methods names no method: give some (registered: {', '.join(sorted(METHODS))})")
        unknown = [m for m in self.methods if m not in METHODS]
        if unknown:
            raise ValueError(f"unknown methods {unknown}; registered: {', '.join(sorted(METHODS))}")
        stray = sorted(set(self.method_params) - set(self.methods))
        if stray:  # a misspelt or disabled method's parameters would change nothing, silently
            named = ", ".join(f"{m} ({'not enabled' if m in METHODS else 'no such method'})" for m in stray)
            raise ValueError(f"parameters for {named}: enabled methods: {', '.join(self.methods)} "
                             f"(registered: {', '.join(sorted(METHODS))}); enable it (--methods) or drop them")
        check_batch_limits(self.batch_size, self.batch_bytes)
        if not 0.0 <= self.max_new_share <= 1.0:
            raise ValueError(f"max_new_share is a share of a page's text in [0, 1], got {self.max_new_share}")
        if self.max_new_pairs < 0:
            raise ValueError(f"max_new_pairs is a number of word pairs, got {self.max_new_pairs}")
        if self.min_new_paragraph_words < 0:
            raise ValueError(f"min_new_paragraph_words is a number of words (0: off), "
                             f"got {self.min_new_paragraph_words}")
        if self.prepare_threads < 0:
            raise ValueError(f"prepare_threads is a number of threads (0: one per CPU), got {self.prepare_threads}")
        # a negative one expired every page at once: an exact copy added next was `unique`
        for name, span in (("retention", self.retention), ("max_clock_skew", self.max_clock_skew)):
            if span is not None and span < timedelta(0):
                raise ValueError(f"{name} is a span of time, not negative: got {span!r}")
        from streamdedup.verdict.policy import Policy

        for name, text in (("policy", self.policy), ("same_site_policy", self.site_policy)):
            policy = Policy.parse(text)
            measuring = sorted(m for m in policy.methods if m in METHODS and not METHODS[m].can_match)
            if measuring:
                raise ValueError(f"{name} {text!r} names {', '.join(measuring)}, which matches nothing: "
                                 f"it measures a match's new text (max_new_share)")
            missing = policy.methods - set(self.methods)
            if missing:
                matching = _policy_of(self.methods)
                flag = "--policy" if name == "policy" else "--same-site-policy"
                raise ValueError(f"{name} {text!r} uses {sorted(missing)}, which are not enabled "
                                 f"(enabled: {', '.join(self.methods)}): give a {name} of the enabled methods "
                                 f"({flag} '{matching}'), or enable those (--methods)")
            for method, measure in sorted(policy.measures):
                offered = METHODS[method].measures
                if measure not in offered:
                    raise ValueError(f"{name} {text!r}: {method} has no measure {measure!r} "
                                     f"(it has: {', '.join(sorted(offered)) or 'none'})")

    def params_for(self, name: str) -> dict[str, Any]:
        """A method's parameters: its own section, plus the shared lexicon if it uses one."""
        params = dict(self.method_params.get(name, {}))
        if "lexicon" in METHODS[name].params_type.__dataclass_fields__ and self.lexicon != "wordfreq":
            params.setdefault("lexicon", self.lexicon)
        return params

    @property
    def site_policy(self) -> str:
        """The policy for candidates from the page's own site while its template is unknown."""
        return self.same_site_policy if self.same_site_policy is not None else self.policy

    def site_policies(self) -> SitePolicy:
        """The parsed policies and tolerance the engine judges with (`verdict/relations.py`)."""
        from streamdedup.verdict.policy import SitePolicy

        return SitePolicy.parse(self.policy, self.site_policy, self.max_new_share, self.max_new_pairs,
                                self.min_new_paragraph_words)

    def retention_clock(self, get_meta_int: Callable[[str, int], int]) -> RetentionClock:
        """A store's retention clock under this configuration, its watermarks read from the store."""
        return RetentionClock.load(self.retention_ms, self.max_clock_skew_ms, get_meta_int)

    @property
    def retention_ms(self) -> int | None:
        """The retention in milliseconds, as the store's clock counts it (None: pages are kept forever)."""
        return None if self.retention is None else int(self.retention.total_seconds() * 1000)

    @property
    def max_clock_skew_ms(self) -> int:
        """How far ahead of the clock a fetch time may be and still be used, in milliseconds."""
        return int(self.max_clock_skew.total_seconds() * 1000)

    def verdict_settings(self) -> dict[str, str]:
        """What turns compared signatures into verdicts, besides what the store records (the signature parameters).

        The engine's rules version, the policies, the new-text tolerance, retention and clock skew.
        Stores do not record it, so a file-mode store may be
        judged under another policy later; the workers of one group must agree on it
        (`verdict_identity`, carried by the global topology's index requests, recorded for the group
        by `runtime/group_settings.py`). The policies are written as parsed, so the same rules
        written differently ("minhash >= 0.80 | exact" and "minhash>=0.8|exact") have one id; the
        order of rules and of a rule's terms is kept (it names the verdict's rule)."""
        from streamdedup.verdict.engine import RULES_VERSION
        from streamdedup.verdict.policy import Policy

        return {"rules": str(RULES_VERSION), "policy": str(Policy.parse(self.policy)),
                "same_site_policy": str(Policy.parse(self.site_policy)),
                "retention_ms": str(self.retention_ms), "max_clock_skew_ms": str(self.max_clock_skew_ms),
                "max_new_share": f"{self.max_new_share:g}", "max_new_pairs": str(self.max_new_pairs),
                "min_new_paragraph_words": str(self.min_new_paragraph_words)}

    def with_overrides(self, **changes: Any) -> DetectorConfig:
        """A copy with the settings given changed; a None leaves a setting as it is (an option not given)."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    @classmethod
    def from_toml(cls, path: str | Path) -> DetectorConfig:
        """The configuration a TOML file gives (its keys as `from_mapping` reads them); an error names the file."""
        try:
            return cls.from_mapping(read_toml(path))
        except ValueError as err:
            raise ValueError(f"{path}: {err}") from None

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> DetectorConfig:
        """The configuration a mapping of setting names gives (a TOML file's), refusing unknown keys and bad values."""
        unknown = set(data) - CONFIG_KEYS
        if unknown:
            raise ValueError(f"unknown configuration keys {sorted(unknown)}; known: {sorted(CONFIG_KEYS)}")
        methods = data.get("methods", DEFAULT_METHODS)
        if not isinstance(methods, list | tuple) or not all(isinstance(m, str) for m in methods):
            raise ValueError(f"methods is a list of names (methods = [\"exact\", \"minhash\"]), got {methods!r}")
        names = tuple(methods)
        tables = data.get("params", {})
        if not isinstance(tables, Mapping) or not all(isinstance(v, Mapping) for v in tables.values()):
            raise ValueError(f"params is a table of tables, one a method ([params.minhash] num_perm = 128), "
                             f"got {tables!r}")
        params = {name: dict(value) for name, value in tables.items()}
        stray = set(params) - set(names)
        if stray:
            raise ValueError(f"[params] for methods that are not enabled: {sorted(stray)}")
        cleaning = CleaningConfig(
            extractor=_text(data, "extractor", CleaningConfig.extractor),
            max_content_bytes=_number(data, "max_content_bytes", int, CleaningConfig.max_content_bytes))
        retention = _text(data, "retention", None, '"30d"')
        skew = _text(data, "max_clock_skew", None, '"1d"')
        template = data.get("template", {})
        if template is not False and not isinstance(template, Mapping):
            raise ValueError("template is a table of TemplateParams fields ([template] min_share = 0.3) or false")
        return cls(template=None if template is False else _template_params(template),
                   methods=names, method_params=params, policy=_text(data, "policy", DEFAULT_POLICY),
                   same_site_policy=_text(data, "same_site_policy", None, '"exact|minhash>=0.8"'),
                   max_new_share=_number(data, "max_new_share", float, DEFAULT_MAX_NEW_SHARE),
                   max_new_pairs=_number(data, "max_new_pairs", int, DEFAULT_MAX_NEW_PAIRS),
                   min_new_paragraph_words=_number(data, "min_new_paragraph_words", int,
                                                   DEFAULT_MIN_NEW_PARAGRAPH_WORDS),
                   cleaning=cleaning, retention=parse_duration(retention, "retention") if retention else None,
                   max_clock_skew=parse_duration(skew, "max_clock_skew") if skew else DEFAULT_MAX_CLOCK_SKEW,
                   batch_size=_number(data, "batch_size", int, 256),
                   batch_bytes=_number(data, "batch_bytes", int, cls.batch_bytes),
                   lexicon=_text(data, "lexicon", "wordfreq"),
                   prepare_threads=_number(data, "prepare_threads", int, 0),
                   learned_extraction=_flag(data, "learned_extraction", True))


# each field's kinds and how to write one: a library caller's "30d" or "0.2" failed later, as an
# AttributeError or a TypeError naming neither the field nor the kind (the TOML reader checks its own)
_FIELD_KINDS: tuple[tuple[str, tuple[type, ...], str], ...] = (
    ("methods", (tuple, list), "a tuple of method names, e.g. ('exact', 'minhash')"),
    ("method_params", (Mapping,), "a mapping of method names to their parameters, e.g. {'minhash': {'num_perm': 64}}"),
    ("policy", (str,), f"a policy text, e.g. {DEFAULT_POLICY!r}"),
    ("same_site_policy", (str, type(None)), "a policy text or None, e.g. 'exact|minhash>=0.8'"),
    ("max_new_share", (numbers.Real,), "a share of a page's text, e.g. 0.1"),
    ("max_new_pairs", (numbers.Integral,), "a whole number of word pairs, e.g. 8"),
    ("min_new_paragraph_words", (numbers.Integral,), "a whole number of words, e.g. 20"),
    ("cleaning", (CleaningConfig,), "a CleaningConfig, e.g. CleaningConfig(extractor='trafilatura')"),
    ("retention", (timedelta, type(None)),
     "a timedelta or None, e.g. timedelta(days=30) or streamdedup.config.parse_duration('30d')"),
    ("max_clock_skew", (timedelta,), "a timedelta, e.g. timedelta(days=1)"),
    ("template", (TemplateParams, type(None)), "a TemplateParams or None (no template model)"),
    ("batch_size", (numbers.Integral,), "a whole number of pages, e.g. 256"),
    ("batch_bytes", (numbers.Integral,), "a whole number of bytes, e.g. 64 << 20"),
    ("prepare_threads", (numbers.Integral,), "a whole number of threads (0: one per CPU)"),
    ("learned_extraction", (bool,), "True or False"),
    ("lexicon", (str,), "'wordfreq' or the path of a file made by `streamdedup lexicon build`"),
)


def _check_kinds(config: DetectorConfig) -> None:
    """Raise TypeError, naming the field and how to write it, for a field of another kind (True is no number).

    A number of another type (numpy's) is taken, and kept as Python's int or float."""
    for name, kinds, written in _FIELD_KINDS:
        value = getattr(config, name)
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            raise TypeError(f"DetectorConfig {name} is {written}, got {value!r} ({type(value).__name__})")
        if type(value) in (int, float, bool) or not isinstance(value, numbers.Real):
            continue
        # numpy's int64 or float32, kept as Python's
        object.__setattr__(config, name, int(value) if isinstance(value, numbers.Integral) else float(value))
    if not all(isinstance(m, str) for m in config.methods):
        raise TypeError(f"DetectorConfig methods is a tuple of method names, got {config.methods!r}")


def _policy_of(methods: tuple[str, ...]) -> str:
    """A policy of `methods`: the default's rules whose methods are all enabled, then each other matching method."""
    from streamdedup.verdict.policy import Policy

    kept = [rule for rule, names in zip(DEFAULT_POLICY.split("|"), Policy.parse(DEFAULT_POLICY).rule_methods,
                                        strict=True) if set(names) <= set(methods)]
    used = {name for rule in kept for name in rule.split("+")}
    others = [m for m in methods if m in METHODS and METHODS[m].can_match and m not in used]
    return "|".join(kept + others) or "exact"


def _number(data: Mapping[str, Any], key: str, kind: type[Any], default: Any) -> Any:
    """`data[key]` as an int or float (`kind`), or `default`; another kind of value ends in one line naming the key."""
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{key} is a number (as {default!r}), got {value!r}")
    if kind is int and not float(value).is_integer():
        raise ValueError(f"{key} is a whole number (as {default!r}), got {value!r}")
    return kind(value)


def _text(data: Mapping[str, Any], key: str, default: str | None, example: str | None = None) -> Any:
    """`data[key]` as a string, or `default`; another kind of value ends in one line naming the key."""
    value = data.get(key, default)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{key} is a string in quotes ({key} = {example or repr(default)}), got {value!r}")
    return value


def _flag(data: Mapping[str, Any], key: str, default: bool) -> bool:
    """`data[key]` as true or false, or `default`; another kind of value ends in one line naming the key."""
    value = data.get(key, default)
    if not isinstance(value, bool):
        raise ValueError(f"{key} is true or false, got {value!r}")
    return value


def _template_params(table: Mapping[str, Any]) -> TemplateParams:
    """[template]'s fields as TemplateParams; an unknown field or a value of another kind ends in one line."""
    known = {f.name: f for f in fields(TemplateParams)}
    unknown = sorted(set(table) - set(known))
    if unknown:
        raise ValueError(f"unknown [template] keys {unknown}; known: {sorted(known)}")
    for key in table:
        default = known[key].default
        if isinstance(default, int | float) and not isinstance(default, bool):
            _number(table, key, type(default), default)
    return TemplateParams(**table)

