"""Method name -> implementation. Adding a method: one file, one line here."""

from __future__ import annotations

from typing import Any

from streamdedup.fingerprints.a12 import A12Method
from streamdedup.fingerprints.base import FingerprintMethod
from streamdedup.fingerprints.decomposition import DecompositionMethod
from streamdedup.fingerprints.descrwords import DescrWordsMethod
from streamdedup.fingerprints.exact import ExactMethod
from streamdedup.fingerprints.heavysent import HeavySentMethod
from streamdedup.fingerprints.imatch import IMatchMethod
from streamdedup.fingerprints.lexrand import LexRandMethod
from streamdedup.fingerprints.logshingles import LogShinglesMethod
from streamdedup.fingerprints.longsent import LongSentMethod
from streamdedup.fingerprints.megashingles import MegaShinglesMethod
from streamdedup.fingerprints.minhash import MinHashMethod
from streamdedup.fingerprints.optfreq import OptFreqMethod
from streamdedup.fingerprints.pugh import PughMethod
from streamdedup.fingerprints.randproj import RandProjMethod
from streamdedup.fingerprints.simhash import SimHashMethod
from streamdedup.fingerprints.spotsigs import SpotSigsMethod
from streamdedup.fingerprints.supershingles import SuperShinglesMethod
from streamdedup.fingerprints.tf import TfMethod
from streamdedup.fingerprints.tfidf import TfIdfMethod
from streamdedup.fingerprints.tfridf import TfRidfMethod
from streamdedup.fingerprints.tibetan_summary import TibetanSummaryMethod

# Order: the engine's default four, then 004's A1-A11, then the other methods of the seeds.
METHODS: dict[str, type[FingerprintMethod[Any, Any]]] = {
    ExactMethod.name: ExactMethod,  # A0
    MinHashMethod.name: MinHashMethod,
    SimHashMethod.name: SimHashMethod,
    A12Method.name: A12Method,  # A12 "3+5"
    TfMethod.name: TfMethod,  # A1
    TfIdfMethod.name: TfIdfMethod,  # A2
    TfRidfMethod.name: TfRidfMethod,  # A3
    LongSentMethod.name: LongSentMethod,  # A4
    HeavySentMethod.name: HeavySentMethod,  # A5
    MegaShinglesMethod.name: MegaShinglesMethod,  # A6
    LexRandMethod.name: LexRandMethod,  # A7
    LogShinglesMethod.name: LogShinglesMethod,  # A8
    DescrWordsMethod.name: DescrWordsMethod,  # A9
    OptFreqMethod.name: OptFreqMethod,  # A10
    DecompositionMethod.name: DecompositionMethod,  # A11
    IMatchMethod.name: IMatchMethod,
    SuperShinglesMethod.name: SuperShinglesMethod,
    PughMethod.name: PughMethod,
    RandProjMethod.name: RandProjMethod,
    SpotSigsMethod.name: SpotSigsMethod,
    TibetanSummaryMethod.name: TibetanSummaryMethod,
}


def method_from_description(description: str) -> FingerprintMethod[Any]:
    """Inverse of `FingerprintMethod.describe()`: 'minhash(num_perm=128,threshold=0.5)' -> method.

    Lets a store rebuild the exact methods it was built with, so maintenance commands need no flags.
    """
    name, _, rest = description.partition("(")
    cls = METHODS.get(name)
    if cls is None or not rest.endswith(")"):
        raise ValueError(f"not a method description: {description!r}")
    fields = cls.params_type.__dataclass_fields__
    params: dict[str, Any] = {}
    for item in filter(None, rest[:-1].split(",")):
        key, _, value = item.partition("=")
        default = fields[key].default
        params[key] = (value == "True") if isinstance(default, bool) else type(default)(value)
    return create_method(name, **params)


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
