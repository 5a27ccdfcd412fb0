"""The configuration the guides show is the code's: each TOML block of README.md, docs/reference.md and
docs/template-model.md is one `DetectorConfig.from_mapping` takes, docs/reference.md's full table names
every top-level key it knows, and the [template] blocks every field of `TemplateParams`."""

from __future__ import annotations

import re
import tomllib
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from streamdedup.clean.template import TemplateParams
from streamdedup.config import CONFIG_KEYS, DetectorConfig

ROOT = Path(__file__).resolve().parent.parent
GUIDES = ("README.md", "docs/reference.md", "docs/template-model.md")


def toml_blocks(guide: str) -> list[dict[str, Any]]:
    """The ```toml blocks of a guide, each as the table it reads as."""
    return [tomllib.loads(block) for block in re.findall(r"```toml\n(.*?)```", (ROOT / guide).read_text(), flags=re.S)]


@pytest.mark.parametrize("guide", GUIDES)
def test_each_configuration_a_guide_shows_is_taken(guide: str) -> None:
    blocks = toml_blocks(guide)
    assert blocks, guide
    for block in blocks:
        DetectorConfig.from_mapping(block)  # an unknown key or a value of another kind raises, naming it


def test_the_reference_names_every_configuration_key() -> None:
    """docs/reference.md's block, "the full table" README.md sends a reader to, lacked max_new_share,
    max_new_pairs and min_new_paragraph_words, which README.md's own example sets."""
    (block,) = toml_blocks("docs/reference.md")
    assert sorted(CONFIG_KEYS - set(block)) == []


def test_the_template_blocks_name_every_template_field() -> None:
    shown = {key for guide in ("docs/reference.md", "docs/template-model.md")
             for block in toml_blocks(guide) for key in block.get("template", {})}
    assert sorted({f.name for f in fields(TemplateParams)} - shown) == []
