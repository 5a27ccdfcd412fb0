"""The template models of the sites one input partition carries (the global topology's
fingerprint step), written with the partition's offset in one WriteBatch.

The pages topic is keyed by site (`streamdedup feed` does so), so a site's pages, in order, are
on one input partition: its template model is learned there from the same pages in the same
order as in file mode, whatever the number of workers. A worker that gets the partition without
its store rebuilds it by replaying the partition (the worker's replay, which emits nothing).
"""

from __future__ import annotations

from pathlib import Path

from rocksdict import WriteBatch

from streamdedup.clean.template import SiteTemplate
from streamdedup.store import layout
from streamdedup.store.plain import open_plain_db


class TemplateStore:
    def __init__(self, path: Path) -> None:
        self.db = open_plain_db(path)
        self._templates: dict[int, SiteTemplate] = {}
        self._meta: dict[str, bytes] = {}

    def template(self, site_hash: int) -> SiteTemplate:
        """A site's template model as of this batch (read once; written back at commit)."""
        template = self._templates.get(site_hash)
        if template is None:
            data = self.db.get(layout.template_key(site_hash))
            template = self._templates[site_hash] = SiteTemplate() if data is None else SiteTemplate.decode(data)
        return template

    def get_meta(self, name: str) -> bytes | None:
        return self.db.get(layout.meta_key(name))

    def stage_meta(self, name: str, value: bytes) -> None:
        self._meta[name] = value

    def commit(self) -> None:
        wb = WriteBatch(raw_mode=True)
        for site_hash, template in self._templates.items():
            wb.put(layout.template_key(site_hash), template.encode())
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
