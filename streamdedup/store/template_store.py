"""The template models of the sites one input partition carries.

Written with the partition's offset in one WriteBatch (the global topology's fingerprint step).

The pages topic is keyed by site (`streamdedup feed` does so), so a site's pages, in order, are
on one input partition: its template model is learned there from the same pages in the same
order as in file mode, whatever the number of workers. A worker that gets the partition without
its store rebuilds it by replaying the partition (the worker's replay, which emits nothing).
"""

from __future__ import annotations

from pathlib import Path

from rocksdict import Rdict, WriteBatch

from streamdedup.clean.learned_layout import SiteLayout
from streamdedup.clean.template import SiteTemplate, TemplateParams
from streamdedup.store import layout
from streamdedup.store.errors import check_iterator
from streamdedup.store.plain import open_plain_db
from streamdedup.store.process_memory import TEMPLATE_BYTES, Share

# What the cache's own entry for a site takes: its slot in the dict (at the dict's usual load),
# the site's key as a Python int, the (template, size) tuple and the size int
CACHE_ENTRY_BYTES = 200


class TemplateCache:
    """Site templates decoded, as the store last wrote them, within a byte budget.

    Site templates decoded, as the store last wrote them, so that a batch takes a site's model
    without reading and decoding it again (a RocksDB read of up to ~60 KB, ~10 µs to decode, and
    the URL set made again on the first page). A batch takes a template out (it owns and changes
    it) and puts it back once its WriteBatch is written: what is here is always what RocksDB holds;
    a batch that fails or is dropped puts nothing back, and the next reads the store. Bounded: at
    most `budget` bytes of templates (`SiteTemplate.nbytes`), the least recently written sites
    dropped first. By default the budget is the store's part of the process's 256 MiB
    (`process_memory.TEMPLATE_BYTES`, split among the stores open): alone, it holds ~1,950 sites
    with a full model (4,096 lines and 1,024 recent URLs: 66 KB of arrays, 70 KB of URL set) and
    tens of thousands of smaller ones. The part is taken at the first `put` (a store that keeps no
    templates, as the global topology's index partitions, takes none); `close` gives it back."""

    def __init__(self, budget: int | None = None) -> None:
        self._shared = budget is None  # else: a budget of its own
        self._share: Share | None = None
        self._budget = budget or 0
        self._templates: dict[int, tuple[SiteTemplate, int]] = {}
        self._size = 0

    @property
    def budget(self) -> int:
        """The bytes of templates this cache may hold now."""
        if not self._shared:
            return self._budget
        return self._share.limit() if self._share is not None else TEMPLATE_BYTES.each()

    def take(self, site_hash: int) -> SiteTemplate | None:
        """Take a site's template out of the cache (None: not there), giving back its bytes."""
        held = self._templates.pop(site_hash, None)
        if held is None:
            return None
        self._size -= held[1]
        return held[0]

    def put(self, site_hash: int, template: SiteTemplate) -> None:
        """Keep a site's template, dropping the oldest put while the cache is over its budget."""
        if site_hash in self._templates:  # (a batch took it out: not there, as a rule)
            self.take(site_hash)
        if self._shared and self._share is None:
            self._share = TEMPLATE_BYTES.join(self)
        size = template.nbytes + CACHE_ENTRY_BYTES
        self._templates[site_hash] = (template, size)
        self._size += size
        budget = self.budget
        while self._size > budget:
            oldest = next(iter(self._templates))
            self._size -= self._templates.pop(oldest)[1]

    def clear(self) -> None:
        """Drop every template held."""
        self._templates.clear()
        self._size = 0

    def close(self) -> None:
        """Emptied, and its part of the process's budget given back."""
        self.clear()
        if self._share is not None:
            self._share.leave()
            self._share = None
        self._shared = False  # closed: a late `put` takes no part again


# A site's model is written whole at most every this many batches that change it: in between, a
# batch writes only what it learned (a delta record beside the whole one, ~1 KB a page of 100
# lines against up to ~50 KB for the model), and reading the model replays the deltas.
MAX_DELTAS = 32


def read_template(db: Rdict, site_hash: int, params: TemplateParams) -> SiteTemplate:
    """A site's model as the store holds it.

    Its whole record (if any) and its delta records after it (`layout.template_delta_key`, in
    order), replayed. One iterator seek reads them all. A damaged block raises StoreCorrupt: the
    iterator would stop there and say so only in its status, and the model would be read without its
    later deltas."""
    key = layout.template_key(site_hash)
    it = db.iter()
    it.seek(key)
    template: SiteTemplate | None = None
    deltas: list[bytes] = []
    while it.valid():
        found = it.key()
        if found[: len(key)] != key:
            break
        if len(found) == len(key):
            template = SiteTemplate.decode(it.value())
        else:
            deltas.append(it.value())
        it.next()
    check_iterator(it, db.path())
    template = template or SiteTemplate()
    for delta in deltas:
        template.replay(delta, params)
    template.learned = []
    template.deltas, template.delta_bytes = len(deltas), sum(map(len, deltas))
    return template


class SiteTemplates:
    """The site templates one batch reads and changes: each read once from the store, all written back with the batch.

    Both stores that keep templates stage them this way. With a `cache`, a template is taken from it
    if there, and put back by `written`.

    A site's learned layout (`SiteTemplate.layout`) is written whole when it changed (a few dozen
    bytes, `layout.layout_key`). A template that learned nothing is not written; one that did is
    written as a delta record (what it learned) until it has `MAX_DELTAS` of them or they hold
    half its bytes, then whole, its deltas deleted in the same WriteBatch. So a batch's write is
    about what it learned, and a read replays a bounded number of deltas."""

    def __init__(self, db: Rdict, params: TemplateParams | None, cache: TemplateCache | None = None) -> None:
        self._db = db
        self._params = params or TemplateParams()
        self._cache = cache
        self._staged: dict[int, SiteTemplate] = {}
        self._wrote: dict[int, tuple[int, int]] = {}  # site -> its deltas and their bytes once `write` is written

    def get(self, site_hash: int) -> SiteTemplate:
        """A site's template, staged for the batch: from the cache, else read from the store (empty if none)."""
        template = self._staged.get(site_hash)
        if template is None:
            template = None if self._cache is None else self._cache.take(site_hash)
            if template is None:
                template = read_template(self._db, site_hash, self._params)
                layout_record = self._db.get(layout.layout_key(site_hash))
                template.layout = None if layout_record is None else SiteLayout.decode(layout_record)
            self._staged[site_hash] = template
        return template

    def write(self, wb: WriteBatch) -> None:
        """Put the staged changes in the WriteBatch: each learned template as a delta or whole, changed layouts."""
        self._wrote.clear()
        for site_hash, template in self._staged.items():
            if template.layout_changed and template.layout is not None:  # small: written whole
                wb.put(layout.layout_key(site_hash), template.layout.encode())
            if not template.learned:
                continue
            delta = template.encode_learned()
            if template.deltas < MAX_DELTAS and 2 * (template.delta_bytes + len(delta)) < template.encoded_size:
                wb.put(layout.template_delta_key(site_hash, template.deltas), delta)
                self._wrote[site_hash] = (template.deltas + 1, template.delta_bytes + len(delta))
            else:
                wb.put(layout.template_key(site_hash), template.encode())
                for n in range(template.deltas):
                    wb.delete(layout.template_delta_key(site_hash, n))
                self._wrote[site_hash] = (0, 0)

    def written(self) -> None:
        """The WriteBatch `write` filled is written: the templates say so, and go back to the cache."""
        for site_hash, (deltas, delta_bytes) in self._wrote.items():
            template = self._staged[site_hash]
            template.learned, template.deltas, template.delta_bytes = [], deltas, delta_bytes
        self._wrote.clear()
        for template in self._staged.values():
            template.layout_changed = False
        if self._cache is not None:
            for site_hash, template in self._staged.items():
                self._cache.put(site_hash, template)

    def clear(self) -> None:
        """Drop the staged templates (the batch was discarded or written)."""
        self._staged.clear()


class TemplateStore:
    """The template models of one input partition's sites, in a RocksDB of their own (the global topology)."""

    def __init__(self, path: Path, params: TemplateParams | None = None) -> None:
        self.db = open_plain_db(path)
        self._cache = TemplateCache()
        self._templates = SiteTemplates(self.db, params, self._cache)
        self._meta: dict[str, bytes] = {}

    def template(self, site_hash: int) -> SiteTemplate:
        """A site's template model as of this batch (read once; written back at commit)."""
        return self._templates.get(site_hash)

    def get_meta(self, name: str) -> bytes | None:
        """A meta entry's value (None: not set)."""
        return self.db.get(layout.meta_key(name))

    def stage_meta(self, name: str, value: bytes) -> None:
        """Stage a meta entry (the partition's offset), written at commit."""
        self._meta[name] = value

    def commit(self) -> None:
        """Write the staged templates and meta entries in one WriteBatch."""
        wb = WriteBatch(raw_mode=True)
        self._templates.write(wb)
        for name, value in self._meta.items():
            wb.put(layout.meta_key(name), value)
        self.db.write(wb)
        self._templates.written()
        self.discard()

    def discard(self) -> None:
        """Drop what is staged."""
        self._templates.clear()
        self._meta.clear()

    def property_total(self, name: str) -> int:
        """A RocksDB integer property of the store (0: not known)."""
        return self.db.property_int_value(name) or 0

    def close(self) -> None:
        """Drop what is staged, give back the cache's budget and close RocksDB."""
        self.discard()
        self._cache.close()
        self.db.close()
