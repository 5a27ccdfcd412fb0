"""Steps of the pure gather-stage tests (real RocksDB, no broker): a page completed, what its gather sends routed."""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass

from streamdedup.runtime.scaleout.gather_stage import GatherPartition
from streamdedup.runtime.scaleout.gather_verdicts import Decided, Emitted
from streamdedup.runtime.scaleout.messages import Answer, Match, PageHeader, RootAsk, RootReply, Supplement


@dataclass(frozen=True)
class GatherSteps:
    """The pages of a test by id (`orders`), and which of them are the gather partition's under test (all if None)."""

    orders: Mapping[str, bytes]
    here: Container[str] | None = None

    def route(self, gather: GatherPartition, emitted: Iterable[Emitted], out: list[Emitted]) -> None:
        """Deliver what the gather sends to its own pages (asks about them, replies to them); keep the rest.

        With `here` None every reply delivered is kept too (what the gather was told); with `here`
        only what goes elsewhere is kept."""
        queue = list(emitted)
        while queue:
            item = queue.pop(0)
            if isinstance(item, RootAsk) and self.is_here(item.page_id):
                queue += gather.add_root_ask(item)
            elif isinstance(item, RootReply) and self.is_here(item.page_id):
                if self.here is None:
                    out.append(item)
                queue += gather.add_root(item)
            else:
                out.append(item)

    def complete(self, gather: GatherPartition, page_id: str, matches: tuple[Match, ...], out: list[Emitted]) -> None:
        """The page's header and its one index partition's answer (`matches`), at 0 ms."""
        order = self.orders[page_id]
        self.route(gather, gather.add_header(PageHeader(page_id, order, (0,), {}, "t"), at_ms=0), out)
        self.route(gather, gather.add_answer(Answer(page_id, order, 0, matches), at_ms=0), out)

    def is_here(self, page_id: str) -> bool:
        """Whether the page is the gather partition's under test."""
        return self.here is None or page_id in self.here


def verdicts(out: list[Emitted]) -> dict[str, dict]:
    """The verdicts out, by page id."""
    return {d.header.page_id: d.dedup for d in out if isinstance(d, Decided)}


def told(gather: GatherPartition, page_id: str, order: bytes, match: Match, overlapping: bool = False,
         digest: bool = False) -> list[Emitted]:
    """The match's gather answers a page out asking about a late match (`RootAsk`): its cluster, as the index
    partition named it, and its mark (`overlapping`, `digest`); what the page's gather emits then."""
    return gather.add_root(RootReply(page_id, order, match.page_id, match.root_order, match.root_id,
                                     overlapping=overlapping, digest=digest))


def late_match(gather: GatherPartition, page_id: str, order: bytes, match: Match, overlapping: bool = False,
               digest: bool = False) -> list[Emitted]:
    """A late match of a page out (`Supplement`); where its gather asks the match's gather, the answer (`told`)."""
    emitted = gather.add_supplement(Supplement(page_id, order, match))
    ask = RootAsk(match.page_id, match.order, page_id, order)
    if ask not in emitted:
        return emitted
    return [e for e in emitted if e != ask] + told(gather, page_id, order, match, overlapping, digest)
