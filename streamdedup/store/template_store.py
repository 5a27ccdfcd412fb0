"""The template models of the sites one input partition carries (the global topology's
fingerprint step), written with the partition's offset in one WriteBatch.

The pages topic is keyed by site (`streamdedup feed` does so), so a site's pages, in order, are
on one input partition: its template model is learned there from the same pages in the same
order as in file mode, whatever the number of workers. A worker that gets the partition without
its store rebuilds it by replaying the partition (the worker's replay, which emits nothing).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rocksdict import WriteBatch

from streamdedup.clean.template import SiteTemplate
from streamdedup.store import layout
from streamdedup.store.plain import open_plain_db


class TemplateCache:
    """Site templates decoded, as the store last wrote them, so that a batch takes a site's model
    without reading and decoding it again (a RocksDB read of up to ~60 KB, ~10 µs to decode, and
    the URL set made again on the first page). A batch takes a template out (it owns and changes
    it) and puts it back once its WriteBatch is written: what is here is always what RocksDB holds;
    a batch that fails or is dropped puts nothing back, and the next reads the store. Bounded: at
    most `budget` bytes of templates (`SiteTemplate.nbytes`), the least recently written sites
    dropped first. The default, 256 MiB (twice RocksDB's block cache), holds ~1,950 sites with a
    full model (4,096 lines and 1,024 recent URLs: 66 KB of arrays, 70 KB of URL set) and tens of
    thousands of smaller ones; the former budget, 2^20 lines and URLs, held ~200 full models (~50
    MiB as dicts)."""

    def __init__(self, budget: int = 256 << 20) -> None:
        self.budget = budget
        self._templates: dict[int, tuple[SiteTemplate, int]] = {}
        self._size = 0

    def take(self, site_hash: int) -> SiteTemplate | None:
        held = self._templates.pop(site_hash, None)
        if held is None:
            return None
        self._size -= held[1]
        return held[0]

    def put(self, site_hash: int, template: SiteTemplate) -> None:
        self.take(site_hash)
        size = template.nbytes
        self._templates[site_hash] = (template, size)
        self._size += size
        while self._size > self.budget:
            oldest = next(iter(self._templates))
            self._size -= self._templates.pop(oldest)[1]

    def clear(self) -> None:
        self._templates.clear()
        self._size = 0


class SiteTemplates:
    """The site templates one batch reads and changes: each read once from the store (`read`), all
    written back with the batch. Both stores that keep templates stage them this way. With a
    `cache`, a template is taken from it if there, and put back by `written`."""

    def __init__(self, read: Callable[[bytes], bytes | None], cache: TemplateCache | None = None) -> None:
        self._read = read
        self._cache = cache
        self._staged: dict[int, SiteTemplate] = {}

    def get(self, site_hash: int) -> SiteTemplate:
        template = self._staged.get(site_hash)
        if template is None:
            template = None if self._cache is None else self._cache.take(site_hash)
            if template is None:
                data = self._read(layout.template_key(site_hash))
                template = SiteTemplate() if data is None else SiteTemplate.decode(data)
            self._staged[site_hash] = template
        return template

    def write(self, wb: WriteBatch) -> None:
        for site_hash, template in self._staged.items():
            wb.put(layout.template_key(site_hash), template.encode())

    def written(self) -> None:
        """The WriteBatch `write` filled is written: the templates go back to the cache."""
        if self._cache is not None:
            for site_hash, template in self._staged.items():
                self._cache.put(site_hash, template)

    def clear(self) -> None:
        self._staged.clear()


class TemplateStore:
    def __init__(self, path: Path) -> None:
        self.db = open_plain_db(path)
        self._templates = SiteTemplates(self.db.get)
        self._meta: dict[str, bytes] = {}

    def template(self, site_hash: int) -> SiteTemplate:
        """A site's template model as of this batch (read once; written back at commit)."""
        return self._templates.get(site_hash)

    def get_meta(self, name: str) -> bytes | None:
        return self.db.get(layout.meta_key(name))

    def stage_meta(self, name: str, value: bytes) -> None:
        self._meta[name] = value

    def commit(self) -> None:
        wb = WriteBatch(raw_mode=True)
        self._templates.write(wb)
        for name, value in self._meta.items():
            wb.put(layout.meta_key(name), value)
        self.db.write(wb)
        self.discard()

    def discard(self) -> None:
        self._templates.clear()
        self._meta.clear()

    def property_total(self, name: str) -> int:
        return self.db.property_int_value(name) or 0

    def close(self) -> None:
        self.discard()
        self.db.close()
