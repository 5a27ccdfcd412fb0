"""Method name -> implementation. Adding a method: one file, one line here."""

from __future__ import annotations

from typing import Any

from streamdedup.fingerprints.a12 import A12Method
from streamdedup.fingerprints.base import FingerprintMethod
from streamdedup.fingerprints.exact import ExactMethod
from streamdedup.fingerprints.minhash import MinHashMethod
from streamdedup.fingerprints.simhash import SimHashMethod

METHODS: dict[str, type[FingerprintMethod[Any]]] = {
    ExactMethod.name: ExactMethod,
    MinHashMethod.name: MinHashMethod,
    SimHashMethod.name: SimHashMethod,
    A12Method.name: A12Method,
}


def create_method(name: str, **params: Any) -> FingerprintMethod[Any]:
    """Instantiate a registered method; unknown names and parameters are named in the error."""
    try:
        cls = METHODS[name]
    except KeyError:
        raise ValueError(f"unknown fingerprint method {name!r}; registered: {', '.join(sorted(METHODS))}") from None
    try:
        return cls(cls.params_type(**params))
    except TypeError as err:
        known = ", ".join(cls.params_type.__dataclass_fields__)
        raise ValueError(f"bad parameters for {name}: {err} (known: {known})") from None
