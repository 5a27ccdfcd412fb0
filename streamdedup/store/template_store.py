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


class SiteTemplates:
    """The site templates one batch reads and changes: each read once from the store (`read`), all
    written back with the batch. Both stores that keep templates stage them this way."""

    def __init__(self, read: Callable[[bytes], bytes | None]) -> None:
        self._read = read
        self._staged: dict[int, SiteTemplate] = {}

    def get(self, site_hash: int) -> SiteTemplate:
        template = self._staged.get(site_hash)
        if template is None:
            data = self._read(layout.template_key(site_hash))
            template = self._staged[site_hash] = SiteTemplate() if data is None else SiteTemplate.decode(data)
        return template

    def write(self, wb: WriteBatch) -> None:
        for site_hash, template in self._staged.items():
            wb.put(layout.template_key(site_hash), template.encode())

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
