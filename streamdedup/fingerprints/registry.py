"""Method name -> implementation.

Adding a method: one file, one line here."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import MISSING
from dataclasses import fields as dataclass_fields
from importlib import import_module
from pathlib import Path
from typing import Any

import xxhash

from streamdedup.fingerprints.a12 import A12Method
from streamdedup.fingerprints.base import FingerprintMethod
from streamdedup.fingerprints.exact import ExactMethod
from streamdedup.fingerprints.minhash import MinHashMethod
from streamdedup.fingerprints.simhash import SimHashMethod
from streamdedup.fingerprints.wordpairs import WordPairsMethod


class _Registered(Mapping[str, type[FingerprintMethod[Any, Any]]]):
    """Method name -> class; a method outside the default five is imported when first asked for.

    Names, their order and membership are known without an import: a run of the default methods
    does not import the other seventeen (~110 of them at start-up, ~35 ms of the command's CPU).
    Each name is its module's name in `streamdedup.fingerprints`, whose class says the same `name`."""

    def __init__(self, eager: Sequence[type[FingerprintMethod[Any, Any]]], lazy: Mapping[str, str]) -> None:
        self._classes: dict[str, type[FingerprintMethod[Any, Any]]] = {cls.name: cls for cls in eager}
        self._lazy = dict(lazy)  # name -> class name, in its module streamdedup.fingerprints.<name>
        self._order = [*self._classes, *self._lazy]

    def __getitem__(self, name: str) -> type[FingerprintMethod[Any, Any]]:
        cls = self._classes.get(name)
        if cls is None:
            class_name = self._lazy[name]  # KeyError: no such method, as a dict says it
            cls = self._classes[name] = getattr(import_module(f"streamdedup.fingerprints.{name}"), class_name)
        return cls

    def __contains__(self, name: object) -> bool:
        return name in self._classes or name in self._lazy

    def __iter__(self) -> Iterator[str]:
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._order)


# Order: the engine's default five (four detectors and the measure of new text), then 004's
# A1-A11, then the other methods of the seeds.
METHODS: Mapping[str, type[FingerprintMethod[Any, Any]]] = _Registered(
    [ExactMethod,  # A0
     MinHashMethod,
     SimHashMethod,
     A12Method,  # A12 "3+5"
     WordPairsMethod],  # new_share of a match (not a detector)
    {"tf": "TfMethod",  # A1
     "tfidf": "TfIdfMethod",  # A2
     "tfridf": "TfRidfMethod",  # A3
     "longsent": "LongSentMethod",  # A4
     "heavysent": "HeavySentMethod",  # A5
     "megashingles": "MegaShinglesMethod",  # A6
     "lexrand": "LexRandMethod",  # A7
     "logshingles": "LogShinglesMethod",  # A8
     "descrwords": "DescrWordsMethod",  # A9
     "optfreq": "OptFreqMethod",  # A10
     "decomposition": "DecompositionMethod",  # A11
     "imatch": "IMatchMethod",
     "supershingles": "SuperShinglesMethod",
     "pugh": "PughMethod",
     "randproj": "RandProjMethod",
     "spotsigs": "SpotSigsMethod",
     "tibetan_summary": "TibetanSummaryMethod"})


_DESCRIPTION = re.compile(r"(?P<name>\w+)\((?P<params>.*)\)(?:\[(?P<version>[^\]]+)\])?", re.DOTALL)


def parse_description(description: str) -> tuple[str, dict[str, str], str | None]:
    """Split a method spec into its name, parameter texts and statistics version.

    'imatch(min_idf=2.5,...,lexicon=/x/l.json.gz)[corpus-ab12]' -> name, parameter texts and
    the version of the statistics the method uses (the [suffix]; None for methods without)."""
    match = _DESCRIPTION.fullmatch(description)
    cls = METHODS.get(match["name"]) if match else None
    if match is None or cls is None:
        raise ValueError(f"not a method description: {description!r}")
    fields = cls.params_type.__dataclass_fields__
    # split only before a known name: a value (a lexicon path) may hold commas
    names = "|".join(map(re.escape, fields))
    items = re.split(f",(?=(?:{names})=)", match["params"]) if match["params"] else []
    params: dict[str, str] = {}
    for item in items:
        key, equals, value = item.partition("=")
        if not equals or key not in fields:
            raise ValueError(f"not a method description: {description!r} ({item!r} is no {match['name']} parameter)")
        params[key] = value
    for key, value in getattr(cls.params_type, "ABSENT_MEANS", {}).items():  # a parameter added since
        params.setdefault(key, value)
    # in the parameters' order, as a description names them: two added since compare as one names them
    params = {key: params[key] for key in fields if key in params}
    return match["name"], params, match["version"]


def pinned_description(description: str) -> str:
    """What a store compares: a lexicon by its version (the [suffix]), not by where its file was.

    A method that uses no statistics has no suffix, and its lexicon setting does not matter."""
    try:
        name, params, version = parse_description(description)
    except ValueError:
        return description
    params.pop("lexicon", None)
    text = f"{name}({','.join(f'{k}={v}' for k, v in params.items())})"
    return f"{text}[{version}]" if version else text


def pinned_setting(key: str, value: str | None) -> str | None:
    """A recorded setting as stores compare it.

    A method's description pinned (`pinned_description`), any other value as it is."""
    return pinned_description(value) if value is not None and key.startswith("method.") else value


def signature_config(settings: Mapping[str, str], methods: Sequence[FingerprintMethod[Any]]) -> dict[str, str]:
    """What signatures are made with, as stores record it.

    `settings` (cleaning, tokeniser, template) and each method's description under `method.<name>`."""
    return {**settings, **{f"method.{m.name}": m.describe() for m in methods}}


def signature_identity(config: Mapping[str, str]) -> bytes:
    """8 bytes that name what signatures were made with.

    `config` as stores record it (the cleaning, tokeniser and template settings, and `method.<name>`
    descriptions), the methods pinned as stores compare them. An index request carries its maker's,
    so an index partition rebuilt from its topic refuses signatures it cannot compare instead of
    filing them (docs/scaleout.md)."""
    pinned = {key: pinned_setting(key, value) for key, value in sorted(config.items())}
    return xxhash.xxh3_64_digest(json.dumps(pinned, sort_keys=True).encode())


def method_from_description(description: str, lexicon_dir: Path | None = None) -> FingerprintMethod[Any]:
    """Inverse of `FingerprintMethod.describe()`: 'minhash(num_perm=128,threshold=0.5)' -> method.

    Lets a store rebuild the exact methods it was built with, so maintenance commands need no flags.
    A lexicon is found by its version: the store's copy in `lexicon_dir` (lexicon-<version>.json.gz,
    see detector.keep_lexicon_with_state), else the recorded path if it still holds that version.
    """
    name, texts, version = parse_description(description)
    fields = METHODS[name].params_type.__dataclass_fields__
    params: dict[str, Any] = {}
    for key, value in texts.items():
        default: Any = fields[key].default
        if key == "lexicon":
            params[key] = _lexicon_of(value, version, lexicon_dir)
        else:
            params[key] = (value == "True") if isinstance(default, bool) else type(default)(value)
    return create_method(name, **params)


def _lexicon_of(recorded: str, version: str | None, lexicon_dir: Path | None) -> str:
    from streamdedup.stats.lexicon import load_lexicon

    if version is None:  # the method does not use the statistics
        return recorded if recorded == "wordfreq" or Path(recorded).exists() else "wordfreq"
    if version.startswith("wordfreq-"):
        return "wordfreq"  # another installed wordfreq version shows as a configuration difference
    candidates = ([lexicon_dir / f"lexicon-{version}.json.gz"] if lexicon_dir is not None else []) + [Path(recorded)]
    for path in candidates:
        if path.is_file() and load_lexicon(str(path)).version == version:
            return str(path)
    raise ValueError(f"the lexicon {version} the store was built with is not found: put its file at "
                     f"{candidates[0]} (made by `streamdedup lexicon build`)")


def _check_type(method: str, key: str, value: Any, field: Any) -> None:
    """A parameter's value of its default's type (an int where a float is: fine), named if not.

    --param minhash.num_perm=abc reached the method's own checks as a string and failed there with
    "'<' not supported between instances of 'str' and 'int'"."""
    if field is None or field.default is MISSING or type(field.default) not in (int, float, bool):
        return  # unknown (the constructor names it), or text (a lexicon's path may be all digits)
    wanted = type(field.default)
    if isinstance(value, bool) != (wanted is bool):
        fits = False
    else:
        fits = isinstance(value, wanted) or (wanted is float and isinstance(value, int))
    if not fits:
        kind = {int: "a whole number", float: "a number", bool: "true or false"}[wanted]
        raise ValueError(f"{method}.{key} takes {kind} (default {field.default!r}), got {value!r}")


def create_method(name: str, **params: Any) -> FingerprintMethod[Any]:
    """Instantiate a registered method; unknown names and parameters are named in the error."""
    try:
        cls = METHODS[name]
    except KeyError:
        raise ValueError(f"unknown fingerprint method {name!r}; registered: {', '.join(sorted(METHODS))}") from None
    known = [field.name for field in dataclass_fields(cls.params_type)]  # its parameters (not class constants)
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise ValueError(f"{name} has no parameter {', '.join(map(repr, unknown))}; its parameters: "
                         f"{', '.join(known)}")
    for key, value in params.items():
        _check_type(name, key, value, cls.params_type.__dataclass_fields__.get(key))
    try:
        return cls(cls.params_type(**params))
    except TypeError as err:  # a value the method's own checks cannot take
        raise ValueError(f"bad parameters for {name}: {err}") from None
    except ValueError as err:  # its own range checks name the parameter, not the method: "threshold is ..."
        said = str(err)
        named = next((key for key in known if said.startswith(f"{key} ")), None)
        raise ValueError(f"{name}.{said}" if named else f"{name}: {said}") from None
