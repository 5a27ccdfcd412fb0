"""A newcomer's mistakes at the command line end in one line that names the fix: a typo'd option,
an argument no command takes, the same crawl given again to a kept store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import make_article, page, wrap_in_template, write_jsonl

from streamdedup.cli import main


def _crawl(tmp_path: Path) -> Path:
    story = make_article(41)
    return write_jsonl(tmp_path / "crawl.jsonl", [
        page("https://a.example/1", wrap_in_template(story, "Alpha"), "2024-01-01T00:00:00Z"),
        page("https://b.example/1", wrap_in_template(story, "Beta"), "2024-01-02T00:00:00Z"),
        {"content": "<p>a page without a url</p>"},
    ])


def _refused_saying(argv: list[str], said: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Run the command line on `argv`: it stops with code 2 and its last error line starts with `said`."""
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith(said), last


@pytest.mark.parametrize(("argv", "said"), [
    (["dedup", "crawl.jsonl", "--out", "o", "--fersh"],
     "streamdedup dedup: error: unrecognized arguments: --fersh (did you mean --fresh?); "
     "`streamdedup dedup --help` lists its options"),
    (["worker", "--metric-prot", "9108"],
     "streamdedup worker: error: unrecognized arguments: --metric-prot 9108 (did you mean --metrics-port?)"),
    (["store", "info", "--state", "s", "--stte", "t"],
     "streamdedup store info: error: unrecognized arguments: --stte t (did you mean --state?)"),
    (["clusters", "--out", "o", "stories"],
     "streamdedup clusters: error: unrecognized arguments: stories; `streamdedup clusters --help` lists its options"),
])
def test_an_unknown_option_names_the_command_and_the_option_meant(argv: list[str], said: str,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """argparse's own line gave the top-level usage and "unrecognized arguments: --fersh" only."""
    _refused_saying(argv, said, capsys)


@pytest.mark.parametrize(("argv", "said"), [
    (["dedup", "crawl.jsonl", "--otu", "o"],
     "streamdedup dedup: error: unrecognized arguments: --otu (did you mean --out?); "
     "`streamdedup dedup --help` lists its options"),
    (["store", "expire", "--state", "s", "--bfore", "2024-01-01"],
     "streamdedup store expire: error: unrecognized arguments: --bfore (did you mean --before?)"),
    (["clusters", "--bootstrap-sevrers", "k:9092"],
     "streamdedup clusters: error: unrecognized arguments: --bootstrap-sevrers (did you mean --bootstrap-servers?)"),
    (["dedup", "crawl.jsonl", "--frsh"],  # a typo of another option: the one missing is named too
     "streamdedup dedup: error: unrecognized arguments: --frsh (did you mean --fresh?); the following arguments "
     "are required: --out; `streamdedup dedup --help` lists its options"),
    (["dedup", "crawl.jsonl", "--fresh"],  # no typo: argparse's own line, which names the option missing
     "streamdedup dedup: error: the following arguments are required: --out"),
])
def test_a_typo_of_a_required_option_names_the_option_meant(argv: list[str], said: str,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """`dedup FILE --otu DIR` said "the following arguments are required: --out", not the typo that caused it."""
    _refused_saying(argv, said, capsys)


def test_the_same_crawl_on_a_kept_store_says_why_every_record_is_rejected(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """The summary line counted 3 rejected and no more; the reasons and one line on duplicate_id say what happened."""
    crawl, state = _crawl(tmp_path), tmp_path / "state"
    assert main(["dedup", str(crawl), "--out", str(tmp_path / "1"), "--state", str(state)]) == 0
    capsys.readouterr()
    assert main(["dedup", str(crawl), "--out", str(tmp_path / "2"), "--state", str(state)]) == 0
    printed = capsys.readouterr()
    summary = json.loads(printed.out.splitlines()[0])
    assert (summary["rejected"], summary["rejected_by_reason"]) == (3, {"duplicate_id": 2, "missing_url": 1})
    assert (f"2 records refused as duplicate_id: their id (or url and fetch time) came before, in these inputs or "
            f"in a run the store {state} holds; a new --state (or --fresh) starts from an empty store"
            in printed.err.splitlines())


@pytest.mark.parametrize(("lines", "said"), [
    (["url,content", "https://a.example/1,<p>a page</p>"],
     "no record was read as a page (2 of 2 rejected as invalid_json): give JSON Lines (a JSON object a line; "
     ".gz ok) or WARC files"),
    (['{"link": "https://a.example/1", "content": "<p>a page</p>"}'] * 2 + ["[1, 2]"],
     "no record was read as a page (2 of 3 rejected as missing_url): name each page's url one of: url, uri, URL"),
])
def test_inputs_of_which_no_record_is_a_page_say_what_to_give(lines: list[str], said: str, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """A CSV, or JSON Lines whose url is `link`: the summary counted every record rejected, no more."""
    crawl = tmp_path / "crawl.csv"
    crawl.write_text("\n".join(lines) + "\n")
    assert main(["dedup", str(crawl), "--out", str(tmp_path / "out")]) == 0
    (note,) = [line for line in capsys.readouterr().err.splitlines() if line.startswith("no record")]
    assert note.startswith(said), note


def test_inputs_on_both_sides_of_an_option_are_all_read(tmp_path: Path) -> None:
    """`streamdedup dedup a.jsonl --out o b.jsonl`: argparse took a.jsonl and refused b.jsonl as unrecognized."""
    first, second = _crawl(tmp_path), tmp_path / "more.jsonl"
    second.write_text('{"url": "https://c.example/1", "content": "<p>one more page of its own words</p>"}\n')
    assert main(["dedup", str(first), "--out", str(tmp_path / "out"), "-q", str(second)]) == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["runs"][0]["inputs"] == [str(first), str(second)] and summary["records"] == 4


def test_clusters_of_a_run_with_no_page_say_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`streamdedup clusters --out` of a run whose every record was rejected printed nothing and exited 0."""
    crawl = tmp_path / "crawl.txt"
    crawl.write_text("not a page\n")
    assert main(["dedup", str(crawl), "--out", str(tmp_path / "out"), "-q"]) == 0
    assert main(["clusters", "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr()
    assert printed.out == ""
    assert printed.err.strip() == (f"streamdedup: no stories: the run in {tmp_path / 'out'} filed no page "
                                   "(every record rejected: rejected.jsonl)")


def test_an_unknown_extractor_in_a_config_file_is_refused_before_any_page(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """`extractor = "fastt"` in --config ran the job: every HTML page a `processing_error` with a
    traceback logged, exit 0. It ends in one line naming the extractors, and no output is written."""
    crawl = _crawl(tmp_path)
    config = tmp_path / "typo.toml"
    config.write_text('extractor = "fastt"\n')
    assert main(["dedup", str(crawl), "--out", str(tmp_path / "out"), "--config", str(config)]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"streamdedup: error: {config}: extractor is one of trafilatura, fast, resiliparse, none; got 'fastt'"]
    assert not (tmp_path / "out" / "summary.json").exists()


@pytest.mark.parametrize(("toml", "said"), [
    ('retention = "30 days"\n',
     "streamdedup: error: {config}: retention '30 days' is not a duration: use a number and one of s, m, h, d, w "
     "(e.g. 7d)"),
    ('max_clock_skew = "1 day"\n',
     "streamdedup: error: {config}: max_clock_skew '1 day' is not a duration: use a number and one of s, m, h, d, w "
     "(e.g. 7d)"),
    ('max_new_share = "lots"\n', "streamdedup: error: {config}: max_new_share is a number (as 0.1), got 'lots'"),
])
def test_a_bad_value_in_a_config_file_names_the_file_and_the_key(toml: str, said: str, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """`retention = "30 days"` said only "bad duration '30 days'": not which key, nor that it was the file's."""
    config = tmp_path / "dedup.toml"
    config.write_text(toml)
    argv = ["dedup", str(_crawl(tmp_path)), "--out", str(tmp_path / "out"), "--config", str(config)]
    assert main(argv) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == said.format(config=config)
    assert not (tmp_path / "out" / "unique.jsonl").exists()


def test_a_bad_duration_flag_names_the_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--retention '30 days'` said only "bad duration '30 days'", the same as --max-clock-skew's."""
    argv = ["dedup", str(_crawl(tmp_path)), "--out", str(tmp_path / "out"), "--max-clock-skew", "a day"]
    assert main(argv) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "streamdedup: error: --max-clock-skew 'a day' is not a duration: use a number and one of s, m, h, d, w "
        "(e.g. 7d)")


def test_a_method_parameter_out_of_range_names_the_method(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--param minhash.threshold=1.5` said "threshold is a Jaccard similarity ...": not whose threshold."""
    argv = ["dedup", str(_crawl(tmp_path)), "--out", str(tmp_path / "out"), "--param", "minhash.threshold=1.5"]
    assert main(argv) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "streamdedup: error: minhash.threshold is a Jaccard similarity in (0, 1), got 1.5")
    assert not (tmp_path / "out" / "unique.jsonl").exists()
