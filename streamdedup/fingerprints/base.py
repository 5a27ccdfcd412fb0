"""The one interface every near-duplicate method implements.

A method turns a `Document` into a signature, names the index keys under which the store files
that signature (candidates are pages sharing a key: lookups, never scans), and decides whether a
candidate's signature is a near-duplicate. Methods are pure: no I/O, no state.

Each method has a frozen `Params` dataclass; `describe()` is its string form, which the store
records so that signatures built with other parameters are never mixed in.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar, cast

import numpy as np

from streamdedup.tokens.document import Document

if TYPE_CHECKING:
    from typing_extensions import TypeVar as DefaultTypeVar
else:
    def DefaultTypeVar(name: str, *, bound: Any = None, default: Any = None) -> Any:  # noqa: N802 - as the class
        """A TypeVar whose default (PEP 696) is for the type checker alone.

        The one of typing_extensions, which Python 3.11 needs for it, took ~50 ms of every start-up
        to import, and no annotation that leaves the default out is evaluated at run time."""
        return TypeVar(name, bound=bound)

S = TypeVar("S")


def all_sized(encoded: Sequence[bytes], size: int) -> bool:
    """Every encoded signature is `size` bytes long (one array layout fits them all), tested at C speed.

    The batch paths ask it of every page's candidates."""
    return not encoded or set(map(len, encoded)) == {size}


@dataclass(frozen=True)
class Params:
    """Base of every method's parameters."""

    def __str__(self) -> str:
        return ",".join(f"{f.name}={getattr(self, f.name)}" for f in fields(self))

    def as_dict(self) -> dict[str, Any]:
        """The parameters as a dict of their names and values."""
        return asdict(self)


P = DefaultTypeVar("P", bound=Params, default=Params)  # a method's parameters (default: any)


class FingerprintMethod(ABC, Generic[S, P]):
    """Generic in its signature type `S` and its parameters `P`, so `self.params` has its real type."""

    name: ClassVar[str]
    params_type: ClassVar[type[Params]]
    # other similarities of the same signatures that a policy term can name ("minhash.containment")
    measures: ClassVar[frozenset[str]] = frozenset()
    params: P
    # False for a method whose own test matches nothing (`wordpairs`: it measures the new text of
    # the candidates found, and its keys only find them), so a policy cannot name it
    can_match: ClassVar[bool] = True

    def __init__(self, params: P | None = None) -> None:
        self.params = cast(P, params if params is not None else self.params_type())
        if not isinstance(self.params, self.params_type):
            raise TypeError(f"{self.name} takes {self.params_type.__name__}, got {type(self.params).__name__}")

    def describe(self) -> str:
        """The method's name and parameters as the store records them (`minhash(num_perm=128, ...)`)."""
        return f"{self.name}({self.params})"

    @abstractmethod
    def signature(self, doc: Document) -> S | None:
        """The page's signature, or None when the method cannot judge it (e.g. too short)."""

    @abstractmethod
    def index_keys(self, signature: S) -> list[bytes]:
        """Keys under which this signature is filed; near-duplicates share at least one."""

    def index_key_rows(self, encoded: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray] | None:
        """The `index_keys` of many encoded signatures at once, when all keys are one size.

        Uint8 rows, one a key, each signature's in `index_keys` order, and how many keys each
        signature has (the store's rebuild after a crash). None: not offered, or not for these
        signatures."""
        return None

    # Whether any two signatures this method's test accepts share one of their index keys (exact:
    # the digest; SimHash: the permuted tables; A12: the sentence keys), so that a candidate none of
    # the page's keys of this method found, under keys that answer all their pages, cannot pass the
    # test: a rule naming the method is not verified for it (`relations.judged`'s `found_by`). Not LSH
    # bands, which miss some pairs above their threshold.
    keys_find_every_match: ClassVar[bool] = False

    @property
    def max_index_keys(self) -> int | None:
        """The most index keys a signature has (None: no bound).

        Where a page's keys of each method can stand among its sorted names
        (`signature_store.place_bounds`)."""
        return None

    # Whether `index_finds_bits` can tell a page its keys found by chance (short keys, as SimHash's
    # tables: their chance collisions grow with the store).
    tells_chance_keys: ClassVar[bool] = False

    def index_finds_bits(self, signature: Any, bits: np.ndarray, mask: int) -> np.ndarray:
        """Whether each stored page is one this method's index is built to find, not a chance collision.

        Whether each stored page is one this method's index is built to find for `signature`,
        not a chance collision of its keys, from only the `mask` bits of the stored pages' encoded
        signatures (their first 8 bytes, little-endian uint64, as the store keeps them in memory).
        True wherever the whole signature could be found, so that no real candidate is dropped. A
        candidate that only one key of such a method found, and that it does not find, is dropped
        unread and unjudged: it is no method's candidate (the other methods' own keys would have
        found it). Only asked of a method with `tells_chance_keys`; `signature`: the page's own
        signature, or an array of such words, one per stored page."""
        return np.ones(len(bits), dtype=np.bool_)

    @abstractmethod
    def similarity(self, signature: S, other: S) -> float | None:
        """Estimated similarity if `other` is a near-duplicate by this method, else None."""

    def similarities(self, signature: S, others: Sequence[bytes]) -> np.ndarray:
        """`similarity` against many encoded signatures at once (the candidates of one page).

        Float64, NaN where `similarity` is None. Methods whose test is a few array operations
        override it with one vectorised pass giving exactly the same values."""
        out = np.full(len(others), np.nan)
        for i, data in enumerate(others):
            value = self.similarity(signature, self.decode(data))
            if value is not None:
                out[i] = value
        return out

    def measure_similarities(self, measure: str, signature: S, others: Sequence[bytes]) -> np.ndarray:
        """One of `measures` against many encoded signatures: float64, NaN where it does not apply."""
        offered = ", ".join(sorted(self.measures)) or "none"
        raise ValueError(f"{self.name} has no measure {measure!r}; it has: {offered}")

    @abstractmethod
    def encode(self, signature: S) -> bytes:
        """Compact bytes for the store."""

    @abstractmethod
    def decode(self, data: bytes) -> S:
        """Inverse of `encode`."""

    def laid_out_as_mine(self, data: bytes) -> bool:
        """Whether an encoded signature has the layout this method's parameters give it.

        False for one that other parameters made where its size tells (another MinHash width, A12's
        64-bit words). A request that names no maker is checked by this
        (`IndexPartition.check_made_by`); True where the layout does not depend on the parameters."""
        return True
