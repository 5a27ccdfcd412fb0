"""Stores built with a lexicon method (imatch, tfidf, ...) are maintained like any other, and
their lexicon is pinned by its version, not by the path it was given at (real stores, the CLI)."""

import json
import shutil
from pathlib import Path

from conftest import make_article, page, wrap_in_template, write_jsonl

from streamdedup.cli import main
from streamdedup.fingerprints.registry import create_method, method_from_description


def _crawl(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "crawl.jsonl", [
        page(f"https://s{i % 3}.example/{i}", wrap_in_template(make_article(200 + i // 2, paragraphs=4), f"S{i % 3}"),
             id=f"p{i}")
        for i in range(8)])


def _maintain(state: Path, capsys) -> None:
    capsys.readouterr()
    assert main(["store", "info", "--state", str(state)]) == 0
    assert json.loads(capsys.readouterr().out)["docs"] == 8
    assert main(["store", "delete", "--state", str(state), "p0"]) == 0
    assert main(["store", "expire", "--state", str(state), "--before", "2000-01-01T00:00:00Z"]) == 0
    capsys.readouterr()


def test_store_commands_work_on_a_store_of_lexicon_methods(tmp_path, capsys):
    crawl = _crawl(tmp_path)
    lexicon = tmp_path / "lexicon.json.gz"
    assert main(["lexicon", "build", str(crawl), "--out", str(lexicon)]) == 0
    for name, extra in (("wordfreq", []), ("corpus", ["--lexicon", str(lexicon)])):
        state = tmp_path / f"state-{name}"
        assert main(["dedup", str(crawl), "--out", str(tmp_path / name), "--state", str(state), "-q",
                     "--methods", "exact,imatch,tfidf", "--policy", "exact|imatch|tfidf", *extra]) == 0
        _maintain(state, capsys)


def test_a_lexicon_is_pinned_by_its_version_not_its_path(tmp_path, capsys):
    crawl = _crawl(tmp_path)
    lexicon = tmp_path / "a" / "lexicon.json.gz"
    lexicon.parent.mkdir()
    assert main(["lexicon", "build", str(crawl), "--out", str(lexicon)]) == 0
    state = tmp_path / "state"
    run = ["dedup", str(crawl), "--state", str(state), "-q", "--methods", "exact,imatch", "--policy", "exact|imatch"]
    assert main([*run, "--out", str(tmp_path / "1"), "--lexicon", str(lexicon)]) == 0
    moved = tmp_path / "b" / "same-lexicon.json.gz"
    moved.parent.mkdir()
    shutil.move(lexicon, moved)  # the same lexicon (same version) somewhere else
    capsys.readouterr()
    assert main([*run, "--out", str(tmp_path / "2"), "--lexicon", str(moved)]) == 0, capsys.readouterr().err
    # with the original file gone, the store's own copy (lexicon-<version>.json.gz) rebuilds the method
    moved.unlink()
    _maintain(state, capsys)


def test_method_descriptions_round_trip(tmp_path):
    for name, params in (("minhash", {"threshold": 0.6}), ("imatch", {}), ("tfidf", {"top": 5}), ("tf", {})):
        method = create_method(name, **params)
        rebuilt = method_from_description(method.describe())
        assert rebuilt.describe() == method.describe() and rebuilt.params == method.params


def test_another_lexicon_version_is_still_refused(tmp_path, capsys):
    crawl = _crawl(tmp_path)
    first, other = tmp_path / "first.json.gz", tmp_path / "other.json.gz"
    assert main(["lexicon", "build", str(crawl), "--out", str(first)]) == 0
    fewer = write_jsonl(tmp_path / "fewer.jsonl", [page("https://o.example/1", make_article(900, paragraphs=4))] * 2)
    assert main(["lexicon", "build", str(fewer), "--out", str(other)]) == 0
    run = ["dedup", str(crawl), "--state", str(tmp_path / "state"), "-q", "--methods", "exact,imatch",
           "--policy", "exact|imatch"]
    assert main([*run, "--out", str(tmp_path / "1"), "--lexicon", str(first)]) == 0
    capsys.readouterr()
    assert main([*run, "--out", str(tmp_path / "2"), "--lexicon", str(other)]) == 2
    assert "built with other parameters" in capsys.readouterr().err
