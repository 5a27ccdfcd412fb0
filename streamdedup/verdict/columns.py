"""A page's candidates' signatures by method, and the similarity tests run on them.

`SignatureColumns` holds each method's encoded signatures of a page's stored candidates, read once
a page; `CandidateSimilarities` runs a method's test (or measure) on all the candidates that still
need it in one call, when a rule of the policy first asks for it (verdict/relations.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from operator import itemgetter
from typing import Any, NamedTuple, cast

import numpy as np

from streamdedup.fingerprints.base import FingerprintMethod

Methods = Mapping[str, tuple[int, FingerprintMethod[Any, Any]]]  # name -> (tag, method)
MINHASH = "minhash"  # the method whose test `Measured` holds
# a column asked for fewer than 1 in FEW_ROWS of the candidates, and not read yet, is read at those alone
# (`SignatureColumns.present`)
FEW_ROWS = 4


class Measured(NamedTuple):
    """MinHash's similarities and the word pairs' new shares of a page's candidates, measured before judging.

    By the candidate filter (`verdict.prefilter`), with the kernels and bytes `MinHashMethod.similarities`
    and `WordPairsMethod.new_shares` use, in the order of the candidates `relations.judged` is given:
    it measures again only where `tested` is False (elsewhere the values mean nothing)."""

    similarity: np.ndarray
    new_shares: np.ndarray
    their_new_shares: np.ndarray
    sizes: np.ndarray
    tested: np.ndarray

    def take(self, rows: np.ndarray) -> Measured:
        """The same of the candidates at `rows` (indices or a mask), as new arrays."""
        return Measured(*(column[rows] for column in self))


class SignatureColumns:
    """The candidates' encoded signatures of each method, gathered once a page.

    By tag; None where a candidate has none. The policy's tests, `new_shares.new_shares_of` and
    `new_shares.in_runs` ask the same methods of the same candidates (minhash twice), and on
    homogeneous pages a page has ~50."""

    __slots__ = ("_columns", "_rows", "records")

    def __init__(self, records: Sequence[Mapping[int, bytes]]) -> None:
        self.records = records
        self._columns: dict[int, tuple[list[bytes | None], bool]] = {}
        self._rows: dict[int, dict[int, bytes | None]] = {}  # by tag: the values of the few rows read alone

    def __len__(self) -> int:
        return len(self.records)

    def column(self, tag: int) -> tuple[list[bytes | None], bool]:
        """Each candidate's encoded signature of the method `tag`, and whether every one has one."""
        column = self._columns.get(tag)
        if column is None:
            column = self._columns[tag] = _read_column(self.records, tag)
        return column

    def present(self, tag: int, rows: np.ndarray) -> tuple[np.ndarray, list[bytes]]:
        """Of the candidates at `rows` (all, in order, if as many), those with a signature of `tag`, and theirs.

        A few rows asked of a column not read yet (`FEW_ROWS`: the matched candidates' word pairs, the
        rules' later tests) are read alone: reading every candidate's record for them cost more."""
        if tag not in self._columns and len(rows) * FEW_ROWS < len(self.records):
            records, read = self.records, self._rows.setdefault(tag, {})  # each record's value read once
            asked = rows.tolist()
            for row in asked:
                if row not in read:
                    read[row] = records[row].get(tag)
            got = list(map(read.__getitem__, asked))
            complete = False
        else:
            column, complete = self.column(tag)
            got = column if len(rows) == len(self.records) else list(map(column.__getitem__, rows.tolist()))
        if complete or None not in got:
            return rows, cast("list[bytes]", got)
        have = np.fromiter((data is not None for data in got), dtype=bool, count=len(got))
        return rows[have], [data for data in got if data is not None]


def _read_column(records: Sequence[Mapping[int, bytes]], tag: int) -> tuple[list[bytes | None], bool]:
    """Each record's value at `tag` (None where it has none), each read once, and whether every one has one.

    Read by `map` at C speed (a list comprehension of `get`, and then a search for None, cost ~4 us
    of ~60 records a column). `list.extend` keeps what it appended before the iterator raised, and
    the records iterator is past the one that lacks `tag`: its None is appended and the rest read on."""
    read = itemgetter(tag)
    values: list[bytes | None] = []
    rest = iter(records)
    complete = True
    while True:
        try:
            values.extend(map(read, rest))
            return values, complete
        except KeyError:
            values.append(None)
            complete = False


class CandidateSimilarities:
    """Each method's verdict on a page's candidates, computed when the policy first asks for it.

    Then kept, for the candidates asked about, in one vectorised call per method
    (`FingerprintMethod.similarities`): `mine` are the page's signatures by method tag, `theirs`
    each candidate's encoded ones. NaN where a method abstains on either page or finds no match."""

    __slots__ = ("_asked", "_values", "methods", "mine", "tests", "theirs")

    def __init__(self, methods: Methods, mine: Mapping[int, Any],
                 theirs: Sequence[Mapping[int, bytes]] | SignatureColumns, tests: Counter[str] | None = None) -> None:
        self.methods, self.mine = methods, mine
        self.theirs = theirs if isinstance(theirs, SignatureColumns) else SignatureColumns(theirs)
        self.tests = tests  # counts the tests asked ("tests_run"), one a candidate and measure
        self._values: dict[str, np.ndarray] = {}
        self._asked: dict[str, np.ndarray | None] = {}  # None: every candidate asked

    def __call__(self, name: str, rows: np.ndarray) -> np.ndarray:
        """`name`'s values (a method, or method.measure) for the candidates at `rows`, each measured once."""
        values = self._values.get(name)
        count = len(self.theirs)
        if values is None and len(rows) == count:  # the first question, of all of them (a first rule's)
            method_name, _, measure = name.partition(".")
            tag, method = self.methods[method_name]
            signature = self.mine.get(tag)
            column, complete = self.theirs.column(tag)
            if signature is not None and complete:  # the usual case: one call, nothing to place or track
                if self.tests is not None:
                    self.tests["tests_run"] += count
                data = cast("list[bytes]", column)
                values = self._values[name] = np.asarray(
                    method.measure_similarities(measure, signature, data) if measure
                    else method.similarities(signature, data), dtype=np.float64)
                self._asked[name] = None
                return values
        if values is None:  # the method's first question: nothing asked yet
            values = self._values[name] = np.full(count, np.nan)
            if len(rows) == count:  # all of them (a policy's first rule asks so): nothing to track
                self._asked[name] = None
            else:
                asked_rows = self._asked[name] = np.zeros(count, dtype=bool)
                asked_rows[rows] = True
            todo = rows
        else:
            asked = self._asked[name]
            if asked is None:
                return values[rows]
            todo = rows[~asked[rows]]
            if not todo.size:
                return values[rows]
            asked[todo] = True
        if self.tests is not None:
            self.tests["tests_run"] += len(todo)
        method_name, _, measure = name.partition(".")  # "minhash.containment": another measure of minhash's
        tag, method = self.methods[method_name]
        signature = self.mine.get(tag)
        if signature is not None:
            have, data = self.theirs.present(tag, todo)  # candidates the method abstained on: no match
            if have.size:
                values[have] = (method.measure_similarities(measure, signature, data) if measure
                                else method.similarities(signature, data))
        return values[rows]

    def known(self, name: str, values: np.ndarray, asked: np.ndarray) -> None:
        """`name`'s values measured already (`Measured`) where `asked` (a mask): not asked again, nor counted."""
        if asked.all():
            self._values[name], self._asked[name] = values.copy(), None
        elif asked.any():
            self._values[name], self._asked[name] = np.where(asked, values, np.nan), asked.copy()

    def value(self, name: str, row: int) -> float:
        """A similarity already asked for (the matched rule's first method: the verdict's similarity)."""
        return float(self._values[name][row])
