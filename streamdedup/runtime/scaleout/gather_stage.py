"""Where a page's answers meet: one verdict per page, final when emitted, and counted late matches.

A page's header (its fields, and which index partitions will answer) and the answers arrive on
the page's parts partition, in any order. Arrival order at an index partition is not the global
order, so an earlier page E can reach a partition after a later page L it matches: that partition
then sends L a *supplement* ("E is one of your earlier matches"). A complete page is *held* until
every index partition it was sent to has passed its place in the order (the partitions'
watermarks, `W<i>` records on this topic): then no earlier page can still reach them, its
supplements are in, and `decide()` (verdict/engine.py) gives the verdict file mode gives. Pages
released by one watermark go out in the global order.

A page held longer than the bounded wait is released by a *marker* its gather partition writes
to its own parts partition (`tick`): the release happens when the marker is read back, at the
same point of the log on every replay, so a restart emits the same verdicts and none twice. A
supplement for a page already out is a `late_match` event on the clusters topic, counted: "page L
is also a near-duplicate of this earlier page" (where L is all in it, once that page's gather has told
whether its cluster is a digest's, which L then bridges only as file mode would: `_late_marked`); a
related one (L adds much text of its own) is a
`late_related` event, counted too: L's story is related to that page's, as file mode's `related_to`
says (none for a page that went out as a duplicate, as file mode names none), up to `MAX_NAMED`
related pages with those its verdict named, as file mode's `related_to` (`RelatedLeftOut` past it). A page is only ever
tagged as a duplicate of a page earlier than itself, so no two pages are ever tagged as duplicates
of each other.

A page's cluster is the oldest of its earlier matches' clusters, as file mode gives it; but an
index partition knows a page's cluster only from the matches found there (`IndexPartition`), and
a page whose cluster came from another partition's match would be named there as a cluster of its
own: a false merge. So a complete page asks each earlier match's gather partition which cluster
that page joined (`RootAsk`), answered once that page is out (`RootReply`, kept in its `R`
record), and is released only when every answer is in (or its wait is over: the index
partitions' roots then stand). The answers come from pages earlier in the order, whose own
answers come from earlier pages still: no cycle, nothing waits for ever (docs/scaleout.md).

With `hold=False` (a verdict wait of 0) a page is released as soon as it is complete and its
matches' clusters are known.

When a page's verdict went out by its wait with a cluster its index partitions only guessed (or
a late match showed that a page out as a cluster of its own copies an earlier one), its gather
does not tell later askers that guess as named: it keeps them (`G` record, `Guessed`) until its
matches' gathers have named every cluster (`late_merge`), then answers with the cluster it joins;
or, past a bound (one wait, by a release marker, so a replay does the same), answers with the
guess marked as one (`RootReply.guessed`), which the asker never names as merged, and answers
again once named. Records and store: `gather_records`.
"""

from __future__ import annotations

from pathlib import Path

from streamdedup.record.rejection import Reason
from streamdedup.runtime.scaleout.gather_records import (
    FINISHED,
    GUESSED,
    META,
    NAMED,
    OVERLAPPING_MARK,
    RELEASED,
    ROOT,
    WAITING,
    GatherStore,
    Guessed,
    Held,
    Pending,
    as_duplicate,
    hashes_of,
    id_hash,
    id_key,
    released_as,
    root_of,
    root_record,
    waiting_key,
)
from streamdedup.runtime.scaleout.gather_verdicts import (
    AFTER_IDLE,
    LATE_PAGE,
    RELEASED_EARLY,
    Decided,
    Emitted,
    LateMatch,
    LateMerge,
    RelatedLeftOut,
    decided,
    late_match_event,
    late_related_event,
    verdict_and_root,
)
from streamdedup.runtime.scaleout.messages import (
    INFINITE,
    Answer,
    Match,
    PageHeader,
    RootAsk,
    RootReply,
    Supplement,
)
from streamdedup.runtime.scaleout.routing import ORDER_BYTES
from streamdedup.verdict.contract import Rejection
from streamdedup.verdict.engine import MAX_NAMED
from streamdedup.verdict.page_fault import faulted
from streamdedup.verdict.relations import DUPLICATE

__all__ = ["GatherPartition", "Held", "Pending"]


class GatherPartition(GatherStore):
    """One parts partition's gather: its pages' verdicts, late matches and merges, and its pages' clusters told."""

    def __init__(self, path: Path, hold: bool = True) -> None:
        super().__init__(path)
        self.hold = hold
        self.marked: set[bytes] = set()  # pages a release marker was sent for (not yet read back)
        self._load_state()

    def _load_state(self) -> None:
        """The watermarks, the held pages and the guessed pages keeping askers, as committed."""
        self.watermarks: dict[int, bytes] = {}
        it = self.db.iter()
        it.seek(META + b"wm:")
        while it.valid() and it.key().startswith(META + b"wm:"):
            self.watermarks[int(it.key()[len(META) + 3:])] = it.value()
            it.next()
        self.held: dict[bytes, Held] = {}
        it.seek(WAITING)
        while it.valid() and it.key()[:1] == WAITING:
            pending = Pending.decode(it.value())
            if pending.complete() and pending.header is not None:
                self.held[it.key()] = Held(pending.header.page_id, pending.header.order,
                                           pending.header.partitions, pending.completed_ms)
            it.next()
        # waiting key -> (page id, order, since when its askers wait): answered as a guess past the bound
        self.guessing: dict[bytes, tuple[str, bytes, int]] = {}
        for page_id, guessed in self.guessed_records():
            if guessed.askers and not guessed.bounded:
                self.guessing[waiting_key(page_id, guessed.order)] = (page_id, guessed.order, guessed.asked_ms)

    # -- what arrives on the parts partition ----------------------------------------------------
    def add_header(self, header: PageHeader, at_ms: int = 0) -> list[Emitted]:
        """Take a page's header: a page it completes asks its matches' clusters (`RootAsk`), is held or goes out."""
        pending = self.load(header.page_id, header.order)
        was = pending.complete()
        pending.header = header
        return self._completed(pending, was, at_ms)

    def add_answer(self, answer: Answer, at_ms: int = 0) -> list[Emitted]:
        """Take an index partition's answer: a page it completes asks its matches' clusters, is held or goes out."""
        pending = self.load(answer.page_id, answer.order)
        was = pending.complete()
        pending.answers[answer.partition] = answer
        return self._completed(pending, was, at_ms)

    def add_supplement(self, supplement: Supplement) -> list[Emitted]:
        """An earlier match of a page: merged while the page is held, a late match once it is out."""
        before = self.finished_record(supplement.page_id)
        if before is not None:
            if before[:ORDER_BYTES] != supplement.order:
                return []  # another page had this id first: this one is (or will be) a duplicate_id
            known = id_hash(supplement.match.page_id)
            if known in hashes_of(before):
                return []  # it was one of the page's earlier matches already (another partition's answer)
            self.put(id_key(FINISHED, supplement.page_id), before + known)
            match = supplement.match
            if match.relation == DUPLICATE and match.bridges:
                # whether it bridges its story and the match's cluster hangs on that cluster's mark (a digest's:
                # `engine.bridges`), which only the match's gather knows: asked, judged when told (`_late_marked`)
                self.await_mark(supplement.page_id, match)
                self._joins_late(supplement.page_id, supplement.order, match)  # askers wait for its answer
                return [RootAsk(match.page_id, match.order, supplement.page_id, supplement.order)]
            late = self._late(supplement.page_id, match, match.bridges)
            return late + ([RootAsk(match.page_id, match.order, supplement.page_id, supplement.order)]
                           if match.bridges and self._joins_late(supplement.page_id, supplement.order, match) else [])
        pending = self.load(supplement.page_id, supplement.order)
        new = supplement.match.page_id not in pending.earlier() and supplement.match.joins
        pending.supplements.append(supplement.match)
        # complete already: its other earlier matches were asked about then, this one now
        return [RootAsk(supplement.match.page_id, supplement.match.order, supplement.page_id, supplement.order)
                ] if new and pending.complete() else []

    def add_root_ask(self, ask: RootAsk, at_ms: int = 0) -> list[Emitted]:
        """Which cluster page `ask.page_id` joined: answered now if it is out and named, else when it is.

        A page out with a guessed cluster (`Guessed`) keeps the asker until its clusters are named,
        or answers with the guess, marked so, once its bound was reached."""
        root = self.root_record(ask.page_id)
        if root is None and self.finished_order(ask.page_id) is None:
            self.load(ask.page_id, ask.order).askers.append((ask.asker, ask.asker_order))
            return []
        guessed = self.guessed(ask.page_id, ask.order)
        if guessed is None:
            return [_reply(ask.asker, ask.asker_order, ask.page_id, ask.order, root,
                           merged=self.merges_of(ask.page_id), mark=self.digest_mark(ask.page_id))]
        if guessed.bounded:
            guessed.told.append((ask.asker, ask.asker_order))
            self.put(id_key(GUESSED, ask.page_id), guessed.encode())
            return [_reply(ask.asker, ask.asker_order, ask.page_id, ask.order, root, guessed=True,
                           merged=self.merges_of(ask.page_id), mark=self.digest_mark(ask.page_id))]
        self._keep_askers(ask.page_id, guessed, [(ask.asker, ask.asker_order)], at_ms)
        return []

    def add_root(self, reply: RootReply, at_ms: int = 0) -> list[Emitted]:
        """An earlier match's cluster, as its gather says.

        The page goes out once all are in and its watermarks have passed it (out already, by its
        wait: the merges it missed, `_late_merge`)."""
        if self.finished_order(reply.page_id) == reply.order:
            return [*self._late_marked(reply), *self._late_merge(reply)]
        key = waiting_key(reply.page_id, reply.order)
        pending = self.load(reply.page_id, reply.order)
        if reply.guessed and reply.of in pending.roots and reply.of not in pending.guesses:
            return []  # named already: a guess says less
        pending.roots[reply.of] = (reply.root_order, reply.root_id)
        if reply.merged:
            pending.merges[reply.of] = list(reply.merged)
        else:
            pending.merges.pop(reply.of, None)
        (pending.overlaps.add if reply.overlapping else pending.overlaps.discard)(reply.of)
        (pending.digests.add if reply.digest else pending.digests.discard)(reply.of)
        if reply.guessed:
            pending.guesses.add(reply.of)
        else:
            pending.guesses.discard(reply.of)
        held = self.held.get(key)
        if held is None or not pending.roots_known() or (self.hold and not self._passed(held)):
            return []
        return self._release(key, "watermark" if self.hold else "complete", at_ms)

    def add_watermark(self, partition: int, watermark: bytes, at_ms: int = 0) -> list[Emitted]:
        """Index partition `partition` has passed `watermark`: release what it was the last to hold."""
        self.watermarks[partition] = watermark
        self.stage_meta(f"wm:{partition}", watermark)
        ready = [(held.order, key) for key, held in self.held.items()
                 if partition in held.partitions and self._passed(held)
                 and self.load(held.page_id, held.order).roots_known()]  # else released by the last root
        return [item for _, key in sorted(ready) for item in self._release(key, "watermark", at_ms)]

    def add_release(self, pages: list[tuple[str, bytes]], at_ms: int = 0) -> list[Emitted]:
        """A release marker read back: its pages still held go out with what is known.

        Its guessed pages (their askers' bound reached) answer their askers with the guess."""
        out: list[Emitted] = []
        for order, page_id in sorted((order, page_id) for page_id, order in pages):
            key = waiting_key(page_id, order)
            out += self._release(key, "timeout", at_ms) if key in self.held else self._answer_guess(page_id, order)
        return out

    def due(self, now_ms: int, wait_ms: int) -> list[tuple[str, bytes]]:
        """Held pages whose wait is over, and guessed pages whose askers waited as long, in order.

        Those no release marker was sent for."""
        due = [(held.page_id, held.order) for key, held in self.held.items()
               if held.completed_ms + wait_ms <= now_ms and key not in self.marked]
        due += [(page_id, order) for key, (page_id, order, since) in self.guessing.items()
                if since + wait_ms <= now_ms and key not in self.marked]
        return sorted(due, key=lambda p: p[1])

    def mark(self, pages: list[tuple[str, bytes]]) -> None:
        """A release marker for these pages was sent (forgotten on `discard`: sent again)."""
        self.marked.update(waiting_key(page_id, order) for page_id, order in pages)

    # -- deciding -------------------------------------------------------------------------------
    def _passed(self, held: Held) -> bool:
        return all(self.watermarks.get(p, b"") >= held.order for p in held.partitions)

    def _completed(self, pending: Pending, was: bool, at_ms: int) -> list[Emitted]:
        if was or not pending.complete():
            return []
        header = pending.header
        assert header is not None
        pending.completed_ms = at_ms
        key = waiting_key(header.page_id, header.order)
        self.held[key] = held = Held(header.page_id, header.order, header.partitions, at_ms)
        asks: list[Emitted] = [RootAsk(m.page_id, m.order, header.page_id, header.order)
                               for m in pending.joined().values() if m.page_id not in pending.roots]
        if asks or (self.hold and not self._passed(held)):
            return asks
        return self._release(key, "watermark" if self.hold else "complete", at_ms)

    def _release(self, key: bytes, by: str, at_ms: int = 0) -> list[Emitted]:
        """The page's outcome, and the answers to the pages that asked which cluster it joined.

        Those are kept while its cluster is a guess (`Guessed`)."""
        held = self.held.pop(key)
        self.marked.discard(key)
        pending = self.load(held.page_id, held.order)
        header = pending.header
        assert header is not None
        self.forget(key)
        before = self.finished_record(header.page_id)
        if before is not None and before[:ORDER_BYTES] != header.order:
            dedup = Rejection.repeated_id(header.page_id, header.origin).as_dict()
            return [Decided(header, dedup, by, held.completed_ms),
                    *(_reply(asker, order, header.page_id, header.order, None) for asker, order in pending.askers)]
        earlier = pending.earlier()
        # by the watermarks: under an infinite one when every input of one of its partitions was idle
        idle = by == "watermark" and any(self.watermarks.get(p) == INFINITE for p in held.partitions)
        # its judging raised at an index partition (the lowest's error named), which did not file it
        fault = next((a.fault for _, a in sorted(pending.answers.items()) if a.fault), "")
        rejection = Rejection(Reason.PROCESSING_ERROR.value, fault, header.origin, header.page_id) if fault else None
        if rejection is None:
            try:
                dedup, root, mark = verdict_and_root(header, earlier, pending.roots, pending.guesses, pending.merges,
                                                     pending.overlaps, pending.digests)
            except Exception as err:  # noqa: BLE001 - one page's bug must not stop the partition (at every replay)
                if (rejection := faulted(err, header.page_id, header.origin)) is None:
                    raise  # not the page's: the worker stops, the batch is retried
        if rejection is not None:  # a dead letter, filed nowhere, as a repeated id's
            return [Decided(header, rejection.as_dict(), by, held.completed_ms),
                    *(_reply(asker, order, header.page_id, header.order, None) for asker, order in pending.askers)]
        released = RELEASED["idle" if idle else by]
        self.put(id_key(FINISHED, header.page_id),
                 header.order + (released.upper() if dedup["status"] == "duplicate" else released)
                 + b"".join(id_hash(page_id) for page_id in earlier))
        record = root_record(header.order, root)
        self.put(id_key(ROOT, header.page_id), record)
        # told with its cluster: a later copy does not bridge it for being most of it, or of its site
        self.mark_digest(header.page_id, mark)
        merged = tuple(dedup.get("merged_clusters") or ())
        if merged:  # told with its cluster: a later page over both sees one story
            self.add_merges(header.page_id, merged)
        if dedup.get("related_to"):  # late related pages are named up to MAX_NAMED with these
            self.put(id_key(NAMED, header.page_id), bytes([len(dedup["related_to"])]))
        decided = Decided(header, dedup, by, held.completed_ms)
        if pending.roots_named():
            return [decided, *(_reply(asker, order, header.page_id, header.order, record, merged=merged,
                                      mark=mark) for asker, order in pending.askers)]
        # out by its wait (or with a guess answered): the clusters still to be named may be merges it missed
        joined = pending.joined()
        guessed = Guessed(header.order, header.text_cut, joined,
                          {page_id: root for page_id, root in pending.roots.items()
                           if page_id in joined and page_id not in pending.guesses},
                          dedup["cluster_id"], list(merged),
                          early=any(page_id in joined for page_id in pending.guesses),
                          merges={page_id: m for page_id, m in pending.merges.items()
                                  if page_id in joined and page_id not in pending.guesses},
                          overlaps={m for m in pending.overlaps if m in joined and m not in pending.guesses},
                          digests={m for m in pending.digests if m in joined and m not in pending.guesses})
        self._keep_askers(header.page_id, guessed, pending.askers, at_ms)
        return [decided]

    def _keep_askers(self, page_id: str, guessed: Guessed, askers: list[tuple[str, bytes]], at_ms: int) -> None:
        """The `G` record with these askers kept until its clusters are named (or its bound is reached)."""
        if askers and not guessed.askers:
            guessed.asked_ms = at_ms
        guessed.askers += askers
        self.put(id_key(GUESSED, page_id), guessed.encode())
        if guessed.askers:
            self.guessing.setdefault(waiting_key(page_id, guessed.order), (page_id, guessed.order, guessed.asked_ms))

    def _answer_guess(self, page_id: str, order: bytes) -> list[Emitted]:
        """A guessed page's bound is reached (its marker read back): its askers are told its guess, marked so."""
        key = waiting_key(page_id, order)
        self.marked.discard(key)
        self.guessing.pop(key, None)
        guessed = self.guessed(page_id, order)
        if guessed is None or guessed.bounded:
            return []
        record, merged, mark = self.root_record(page_id), self.merges_of(page_id), self.digest_mark(page_id)
        replies: list[Emitted] = [_reply(asker, asker_order, page_id, order, record, guessed=True, merged=merged,
                                         mark=mark) for asker, asker_order in guessed.askers]
        guessed.told += guessed.askers
        guessed.askers = []
        guessed.bounded = True
        self.put(id_key(GUESSED, page_id), guessed.encode())
        return replies

    def _late(self, page_id: str, match: Match, bridging: bool) -> list[Emitted]:
        """The event of a late match of a page out (its `F` record naming it already), counted by how the page went out.

        `bridging` (`Match.bridges_marked`): a `late_match`, the page joins the match's story. Otherwise a match it
        supersedes joins the stories only as its part: the page went out in a story already, and a second whole
        story it holds (a digest's) would be merged into it; related, or a whole story it holds, the page keeps its
        story, which is related to the match's (a `late_related` event, file mode's `related_to`; a late_match
        merged stories file mode keeps apart: a feed review), none where the page is a duplicate."""
        finished = id_key(FINISHED, page_id)
        before = self.get(finished) or b""
        released = released_as(before)[0]
        cause = _LATE_CAUSE.get(released.lower(), RELEASED_EARLY)
        if bridging:
            if match.relation == DUPLICATE:  # file mode names no related page of a duplicate
                self.put(finished, as_duplicate(before))
            return [LateMatch(late_match_event(page_id, match), cause)]
        if released.isupper():  # related to a page that went out as a duplicate: file mode names none
            return []
        named = id_key(NAMED, page_id)
        count = (self.get(named) or b"\x00")[0]
        if count >= MAX_NAMED:  # as many as file mode's `related_to` names
            return [RelatedLeftOut(page_id, cause)]
        self.put(named, bytes([count + 1]))
        return [LateMatch(late_related_event(page_id, self._own_cluster(page_id), match), cause)]

    def _late_marked(self, reply: RootReply) -> list[Emitted]:
        """A late match that awaited its cluster's mark (`awaited`), judged now that its gather told it.

        By `engine.bridges` with the mark, as file mode judges it: a page held by one story's copy is no evidence
        that a digest's cluster is that story, so a copy of its site, or one most of a digest of overlapping stories,
        bridges it no more (as a copy on time). Where the page joined it when it asked (`_joins_late`), this reply
        names its cluster (`_late_merge`, called next); one that does not bridge is dropped from those joins, and
        the page's askers told its cluster without it. None: the reply was for no such match, or is a guess (the
        mark of a page out before its matches' clusters were named, which it may start its own cluster once they
        are: judged when its gather answers again, named, as `_late_merge` waits)."""
        if reply.guessed:
            return []
        match = self.awaited(reply.page_id, reply.of)
        if match is None:
            return []
        bridging = match.bridges_marked(reply.overlapping, reply.digest)
        late = self._late(reply.page_id, match, bridging)
        guessed = self.guessed(reply.page_id, reply.order)
        if bridging or guessed is None or guessed.matches.pop(match.page_id, None) is None:
            return late
        return late + self._named(reply.page_id, reply.order, guessed)  # joined when asked: its askers told without it

    def _joins_late(self, page_id: str, order: bytes, match: Match) -> bool:
        """Whether the page joins a late match it may bridge (`Match.bridges`): its cluster its own, or a guess.

        File mode puts the page in the match's cluster; only the match's gather names that cluster
        (the supplement's root is an index partition's): it is asked (True: the caller asks), and the
        page's cluster is a guess (`Guessed`, its askers kept) until it answers. Out in a story already:
        its cluster stands (the `late_match` event joins the two stories)."""
        guessed = self.guessed(page_id, order)
        if guessed is None:
            if self._own_cluster(page_id) != page_id:
                return False
            guessed = Guessed(order, False, {}, {}, page_id, [])
        if match.page_id in guessed.matches:
            return False
        guessed.matches[match.page_id] = match
        self.put(id_key(GUESSED, page_id), guessed.encode())
        return True

    def _late_merge(self, reply: RootReply) -> list[Emitted]:
        """A cluster named for a page out with a guessed one: once all are, the merges its verdict did not name.

        Its verdict named as merged no cluster only guessed (a stale one would make up a merge);
        with every joined match's cluster named by its gather, the page is decided again on the
        same matches: the merges it names that the verdict did not are a `merged` event (`"late":
        true`, with the cluster that decision joins), its `R` record names that cluster, and the
        askers kept (or told the guess) are answered with it. None: nothing was missed. A guess
        answered to it changes nothing: that page answers again once named."""
        guessed = self.guessed(reply.page_id, reply.order)
        if guessed is None or reply.guessed or reply.of not in guessed.matches:  # not: a late match bridging nothing
            return []
        guessed.roots[reply.of] = (reply.root_order, reply.root_id)
        if reply.merged:
            guessed.merges[reply.of] = list(reply.merged)
        (guessed.overlaps.add if reply.overlapping else guessed.overlaps.discard)(reply.of)
        (guessed.digests.add if reply.digest else guessed.digests.discard)(reply.of)
        return self._named(reply.page_id, reply.order, guessed)

    def _named(self, page_id: str, order: bytes, guessed: Guessed) -> list[Emitted]:
        """A guessed page's `G` record kept while a joined match's cluster is not named; once all are, decided again.

        The late merge and askers' answers of `_late_merge`."""
        key = id_key(GUESSED, page_id)
        if not guessed.named():
            self.put(key, guessed.encode())
            return []
        self.delete(key)
        self.guessing.pop(waiting_key(page_id, order), None)
        verdict, root, mark = decided(page_id, order, guessed.cut, guessed.matches, guessed.roots,
                                      merges=guessed.merges, overlaps=guessed.overlaps, digests=guessed.digests)
        self.mark_digest(page_id, mark)
        cluster = root[1]
        record = self.root_record(page_id)
        if cluster != guessed.cluster:  # not the one its index partitions knew: askers are told this one
            record = root_record(order, root)
            self.put(id_key(ROOT, page_id), record)
        late = [c for c in verdict.merged_clusters if c not in guessed.merged or cluster != guessed.cluster]
        if late:
            self.add_merges(page_id, verdict.merged_clusters)
        merged = self.merges_of(page_id)
        replies: list[Emitted] = [_reply(asker, asker_order, page_id, order, record, merged=merged,
                                         mark=self.digest_mark(page_id))
                                  for asker, asker_order in guessed.askers + guessed.told]
        if not late:
            return replies
        released = released_as(self.finished_record(page_id) or b"")[0].lower()
        cause = RELEASED_EARLY if guessed.early else _LATE_CAUSE.get(released, RELEASED_EARLY)
        return [LateMerge({"type": "merged", "page_id": page_id, "cluster_id": cluster,
                           "merged": list(verdict.merged_clusters), "late": True}, cause), *replies]

    def _own_cluster(self, page_id: str) -> str:
        """The cluster a page that is out joined (its `R` record; its own id where none is kept)."""
        record = self.root_record(page_id)
        root = None if record is None else root_of(record, record[:ORDER_BYTES])
        return page_id if root is None else root[1]

    # -- the runtime's side -----------------------------------------------------------------
    def discard(self) -> None:
        """The batch is to be consumed again: back to the committed state; markers are resent."""
        self._clear()
        self.marked.clear()
        self._load_state()


_LATE_CAUSE = {b"w": LATE_PAGE, b"i": AFTER_IDLE}  # else released early (or a record from before 2026-12-01)


def _reply(asker: str, asker_order: bytes, page_id: str, order: bytes, record: bytes | None,
           guessed: bool = False, merged: tuple[str, ...] = (), mark: bytes | None = None) -> RootReply:
    """The answer to a `RootAsk` for page `page_id` (`order`) from its `R` record (its `K`: `merged`, its `O`: `mark`).

    Its cluster's first page, or none if the record is another page's under that id (or missing)."""
    root = root_of(record, order)
    if root is None:
        return RootReply(asker, asker_order, page_id)
    return RootReply(asker, asker_order, page_id, *root, guessed=guessed, merged=merged,
                     overlapping=mark == OVERLAPPING_MARK, digest=mark is not None)
