"""The command line end to end, in a subprocess-free way (main(argv)), on generated inputs."""

import gzip
import io
import json

import pytest
from conftest import make_article, page, wrap_in_template, write_jsonl
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from streamdedup.cli import main
from streamdedup.fingerprints.registry import METHODS


def _crawl(tmp_path):
    story, other = make_article(41), make_article(42)
    records = [
        page("https://a.example/1", wrap_in_template(story, "Alpha"), "2024-01-01T00:00:00Z", cluster="s"),
        page("https://b.example/1", wrap_in_template(story, "Beta"), "2024-01-02T00:00:00Z", cluster="s"),
        page("https://a.example/2", wrap_in_template(other, "Alpha"), "2024-01-03T00:00:00Z", cluster="o"),
        b"this line is not json",
        {"url": "https://c.example/empty", "content": ""},
    ]
    return write_jsonl(tmp_path / "crawl.jsonl", records)


def _read(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_dedup_writes_every_record_once(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["dedup", str(_crawl(tmp_path)), "--out", str(out), "-q"]) == 0
    unique, dups, rejected = (_read(out / n) for n in ("unique.jsonl", "duplicates.jsonl", "rejected.jsonl"))
    assert [r["url"] for r in unique] == ["https://a.example/1", "https://a.example/2"]
    assert [r["url"] for r in dups] == ["https://b.example/1"]
    assert dups[0]["cluster"] == "s" and dups[0]["dedup"]["duplicate_of"] == unique[0]["dedup"]["id"]
    assert {r["dedup"]["reason"] for r in rejected} == {"invalid_json", "empty_content"}
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["records"], summary["unique"], summary["duplicates"], summary["rejected"]) == (5, 2, 1, 2)


def test_a_store_outgrowing_its_memory_stops_in_one_line_and_the_rerun_doubles_nothing(tmp_path, capsys,
                                                                                       monkeypatch):
    """A crawl whose index outgrows the memory left: `dedup` stops before the batch is written, in
    one line naming the fix (not the kernel's kill mid-growth), and with memory the same command
    finishes the job, every record once."""
    import random

    from streamdedup.store import signature_store

    rng = random.Random(3)
    words = [f"w{i}" for i in range(3000)]
    # enough pages (~50 postings each) to grow the index past its 64 empty segments (~13,000)
    texts = [" ".join(rng.choice(words) for _ in range(60)) for _ in range(400)]
    records = [{"url": f"https://s{i % 7}.example/{i}", "content": text, "content_type": "text/plain"}
               for i, text in enumerate(texts)]
    records += [{**records[5], "url": "https://copy.example/5"}]
    crawl, out = write_jsonl(tmp_path / "crawl.jsonl", records), tmp_path / "out"
    monkeypatch.setattr(signature_store, "available_bytes", lambda: 1000)
    assert main(["dedup", str(crawl), "--out", str(out), "-q"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nothing of the batch was written" in err and "run it where it has more memory" in err
    monkeypatch.setattr(signature_store, "available_bytes", lambda: None)
    assert main(["dedup", str(crawl), "--out", str(out), "-q"]) == 0
    unique, dups = _read(out / "unique.jsonl"), _read(out / "duplicates.jsonl")
    assert sorted(r["url"] for r in unique + dups) == sorted(r["url"] for r in records)
    assert [r["url"] for r in dups] == ["https://copy.example/5"]



def test_the_summary_tells_where_the_stateful_stage_spent_its_time(tmp_path):
    """summary.json's `store_us_per_page`: each step of the stateful stage (`Detector.STEPS`), µs a
    judged page, every one measured (each runs once a batch), and together no more than the run."""
    from streamdedup.detector import Detector

    out = tmp_path / "out"
    assert main(["dedup", str(_crawl(tmp_path)), "--out", str(out), "-q", "--batch-size", "2"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    steps, judged = summary["store_us_per_page"], summary["work_per_page"]["pages"]
    assert list(steps) == list(Detector.STEPS) and judged == 3
    assert all(us > 0 for us in steps.values()), steps
    assert sum(steps.values()) * judged <= summary["elapsed_s"] * 1e6

def test_second_run_on_same_state_continues(tmp_path):
    crawl = _crawl(tmp_path)
    state = tmp_path / "state"
    assert main(["dedup", str(crawl), "--out", str(tmp_path / "1"), "--state", str(state), "-q"]) == 0
    copy = write_jsonl(tmp_path / "more.jsonl", [page("https://z.example/9", wrap_in_template(make_article(41), "Zeta"))])
    assert main(["dedup", str(copy), "--out", str(tmp_path / "2"), "--state", str(state), "-q"]) == 0
    assert _read(tmp_path / "2" / "duplicates.jsonl")[0]["url"] == "https://z.example/9"


def test_other_parameters_on_an_existing_store_are_refused(tmp_path, capsys):
    crawl, state = _crawl(tmp_path), tmp_path / "state"
    main(["dedup", str(crawl), "--out", str(tmp_path / "1"), "--state", str(state), "-q"])
    code = main(["dedup", str(crawl), "--out", str(tmp_path / "2"), "--state", str(state), "-q",
                 "--param", "minhash.num_perm=64"])
    assert code == 2
    assert "built with other parameters" in capsys.readouterr().err


def test_a_store_from_before_paragraph_keys_names_the_param_that_keeps_it(tmp_path, capsys, monkeypatch):
    """A store of 0.8 files no paragraph keys and its description names neither `paragraph_keys` nor
    `key_words`: the default refuses it with the flag that keeps it, and with it the store opens and
    its pages are still found."""
    from streamdedup.fingerprints.base import Params
    from streamdedup.fingerprints.wordpairs import WordPairsParams

    crawl, state = _crawl(tmp_path), tmp_path / "state"
    kept = ["--param", "wordpairs.paragraph_keys=0", "--param", "wordpairs.paragraph_length=tokens",
            "--param", "wordpairs.line_blocks=0"]
    monkeypatch.setattr(WordPairsParams, "__str__", lambda self: Params.__str__(self).replace(
        ",paragraph_keys=0,key_words=20,paragraph_length=tokens,line_blocks=0", ""))
    assert main(["dedup", str(crawl), "--out", str(tmp_path / "1"), "--state", str(state), "-q", *kept]) == 0
    monkeypatch.undo()
    assert main(["dedup", str(crawl), "--out", str(tmp_path / "2"), "--state", str(state), "-q"]) == 2
    assert ("(--param wordpairs.paragraph_keys=0 --param wordpairs.paragraph_length=tokens "
            "--param wordpairs.line_blocks=0, or") in capsys.readouterr().err
    copy = write_jsonl(tmp_path / "more.jsonl", [page("https://z.example/9", wrap_in_template(make_article(41), "Zeta"))])
    assert main(["dedup", str(copy), "--out", str(tmp_path / "3"), "--state", str(state), "-q", *kept]) == 0
    assert _read(tmp_path / "3" / "duplicates.jsonl")[0]["url"] == "https://z.example/9"


def test_a_store_of_eight_paragraph_keys_names_the_param_that_keeps_it(tmp_path, capsys):
    """A store of 0.27.0 filed each page under its 8 longest paragraphs (16 since issue 57): its pages'
    keys are not the ones this run would look up, so the default refuses it with the flag that keeps it."""
    crawl, state = _crawl(tmp_path), tmp_path / "state"
    kept = ["--param", "wordpairs.paragraph_keys=8"]
    assert main(["dedup", str(crawl), "--out", str(tmp_path / "1"), "--state", str(state), "-q", *kept]) == 0
    assert main(["dedup", str(crawl), "--out", str(tmp_path / "2"), "--state", str(state), "-q"]) == 2
    assert "(--param wordpairs.paragraph_keys=8, or" in capsys.readouterr().err
    copy = write_jsonl(tmp_path / "more.jsonl", [page("https://z.example/9", wrap_in_template(make_article(41), "Zeta"))])
    assert main(["dedup", str(copy), "--out", str(tmp_path / "3"), "--state", str(state), "-q", *kept]) == 0
    assert _read(tmp_path / "3" / "duplicates.jsonl")[0]["url"] == "https://z.example/9"


def test_a_store_from_before_short_units_names_the_param_that_keeps_it(tmp_path, capsys, monkeypatch):
    """A store of 0.27.0 or before keeps no short unit (`WordPairsParams.short_lines`) and its description
    does not name it: the default refuses it with the flag that keeps it, and with it the store opens."""
    from streamdedup.fingerprints.base import Params
    from streamdedup.fingerprints.wordpairs import WordPairsParams

    crawl, state = _crawl(tmp_path), tmp_path / "state"
    kept = ["--param", "wordpairs.short_lines=0"]
    monkeypatch.setattr(WordPairsParams, "__str__", lambda self: Params.__str__(self).replace(",short_lines=0", ""))
    assert main(["dedup", str(crawl), "--out", str(tmp_path / "1"), "--state", str(state), "-q", *kept]) == 0
    monkeypatch.undo()
    assert main(["dedup", str(crawl), "--out", str(tmp_path / "2"), "--state", str(state), "-q"]) == 2
    assert "(--param wordpairs.short_lines=0, or" in capsys.readouterr().err
    assert main(["dedup", str(crawl), "--out", str(tmp_path / "3"), "--state", str(state), "-q", *kept]) == 0


def test_a_store_of_token_lengths_names_the_param_that_keeps_it(tmp_path, capsys, monkeypatch):
    """A store of 0.14.0 or before keeps its paragraphs' lengths in tokens and its description does
    not name `paragraph_length`: the default (word-equivalents) refuses it with the flag that keeps it."""
    from streamdedup.fingerprints.base import Params
    from streamdedup.fingerprints.wordpairs import WordPairsParams

    crawl, state = _crawl(tmp_path), tmp_path / "state"
    kept = ["--param", "wordpairs.paragraph_length=tokens", "--param", "wordpairs.line_blocks=0"]
    monkeypatch.setattr(WordPairsParams, "__str__",
                        lambda self: Params.__str__(self).replace(",paragraph_length=tokens,line_blocks=0", ""))
    assert main(["dedup", str(crawl), "--out", str(tmp_path / "1"), "--state", str(state), "-q", *kept]) == 0
    monkeypatch.undo()
    assert main(["dedup", str(crawl), "--out", str(tmp_path / "2"), "--state", str(state), "-q"]) == 2
    assert "(--param wordpairs.paragraph_length=tokens --param wordpairs.line_blocks=0, or" in capsys.readouterr().err
    assert main(["dedup", str(crawl), "--out", str(tmp_path / "3"), "--state", str(state), "-q", *kept]) == 0


def test_a_store_without_line_blocks_names_the_param_that_keeps_it(tmp_path, capsys, monkeypatch):
    """A store of 0.22.0 or before sketched no block of short lines and its description does not name
    `line_blocks`: the default (blocks of 2 lines or more) refuses it in one line naming the flag
    that keeps it, and with that flag it opens."""
    from streamdedup.fingerprints.base import Params
    from streamdedup.fingerprints.wordpairs import WordPairsParams

    crawl, state = _crawl(tmp_path), tmp_path / "state"
    kept = ["--param", "wordpairs.line_blocks=0"]
    monkeypatch.setattr(WordPairsParams, "__str__",
                        lambda self: Params.__str__(self).replace(",line_blocks=0", ""))
    assert main(["dedup", str(crawl), "--out", str(tmp_path / "1"), "--state", str(state), "-q", *kept]) == 0
    monkeypatch.undo()
    assert main(["dedup", str(crawl), "--out", str(tmp_path / "2"), "--state", str(state), "-q"]) == 2
    assert "(--param wordpairs.line_blocks=0, or" in capsys.readouterr().err
    assert main(["dedup", str(crawl), "--out", str(tmp_path / "3"), "--state", str(state), "-q", *kept]) == 0


def test_a_store_from_before_band_checks_names_the_params_that_keep_it(tmp_path, capsys, monkeypatch):
    """A store built before 2026-12-02 has 16-bit MinHash values and no band checks, and 64-bit
    A12 word signatures; its description names neither band_check_bits nor word_bits. The default
    refuses it with the flags that keep it; with them, and for maintenance (`open_existing`), it
    opens, and its pages are still found."""
    from streamdedup.fingerprints.a12 import A12Params
    from streamdedup.fingerprints.base import Params
    from streamdedup.fingerprints.minhash import MinHashParams
    from streamdedup.store.signature_store import SignatureStore

    crawl, state = _crawl(tmp_path), tmp_path / "state"
    kept = ["--param", "minhash.value_bits=16", "--param", "minhash.band_check_bits=0", "--param", "a12.word_bits=64"]
    monkeypatch.setattr(MinHashParams, "__str__", lambda self: Params.__str__(self).replace(",band_check_bits=0", ""))
    monkeypatch.setattr(A12Params, "__str__", lambda self: Params.__str__(self).replace(",word_bits=64", ""))
    assert main(["dedup", str(crawl), "--out", str(tmp_path / "1"), "--state", str(state), "-q", *kept]) == 0
    monkeypatch.undo()
    assert main(["dedup", str(crawl), "--out", str(tmp_path / "2"), "--state", str(state), "-q"]) == 2
    assert ("(--param a12.word_bits=64 --param minhash.value_bits=16 --param minhash.band_check_bits=0, or"
            in capsys.readouterr().err)
    store = SignatureStore.open_existing(state)
    assert store.methods["minhash"].params == MinHashParams(value_bits=16, band_check_bits=0)
    assert store.methods["a12"].params == A12Params(word_bits=64)
    store.close()
    copy = write_jsonl(tmp_path / "more.jsonl", [page("https://z.example/9", wrap_in_template(make_article(41), "Zeta"))])
    assert main(["dedup", str(copy), "--out", str(tmp_path / "3"), "--state", str(state), "-q", *kept]) == 0
    assert _read(tmp_path / "3" / "duplicates.jsonl")[0]["url"] == "https://z.example/9"


def test_a_store_read_by_earlier_fast_rules_is_refused(tmp_path, capsys, monkeypatch):
    """What `fast` keeps is part of what a store records: its pages are not compared with pages
    read by other rules (here a store as the rules before teaser cards left it)."""
    import streamdedup.clean.pipeline as pipeline

    crawl, state = _crawl(tmp_path), tmp_path / "state"
    monkeypatch.setattr(pipeline, "RULES_VERSION", pipeline.RULES_VERSION - 1)
    assert main(["dedup", str(crawl), "--out", str(tmp_path / "1"), "--state", str(state), "-q"]) == 0
    monkeypatch.undo()
    assert main(["dedup", str(crawl), "--out", str(tmp_path / "2"), "--state", str(state), "-q"]) == 2
    err = capsys.readouterr().err
    assert "built with other parameters" in err and f"fast@{pipeline.RULES_VERSION}" in err


def test_a_store_of_earlier_fast_rules_names_no_flag_as_keeping_it(tmp_path, capsys, monkeypatch):
    """A store of 0.27.0 (fast@9, 8 paragraph keys) was refused naming `--param wordpairs.paragraph_keys=8
    --param wordpairs.short_lines=0` as what keeps it; run with them, it was refused again for its fast
    rules, which no flag gives back. The message now says a new --state is the fix."""
    import streamdedup.clean.pipeline as pipeline

    crawl, state = _crawl(tmp_path), tmp_path / "state"
    monkeypatch.setattr(pipeline, "RULES_VERSION", pipeline.RULES_VERSION - 1)
    assert main(["dedup", str(crawl), "--out", str(tmp_path / "1"), "--state", str(state), "-q",
                 "--param", "minhash.num_perm=64"]) == 0
    monkeypatch.undo()
    assert main(["dedup", str(crawl), "--out", str(tmp_path / "2"), "--state", str(state), "-q"]) == 2
    err = capsys.readouterr().err
    assert "--param minhash.num_perm=64" not in err, err
    assert (f"No flag keeps this store: its pages were read by fast@{pipeline.RULES_VERSION - 1}, this version "
            f"reads fast@{pipeline.RULES_VERSION}; use a new --state directory") in err, err


def test_a_batch_of_no_pages_is_refused_in_one_line(tmp_path, capsys):
    """`--batch-size 0` used to take no page and report a finished run of 0 records."""
    crawl = _crawl(tmp_path)
    for flag in ("--batch-size", "--batch-bytes"):
        assert main(["dedup", str(crawl), "--out", str(tmp_path / flag), "-q", flag, "0"]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "each at least 1" in err, err
        assert not (tmp_path / flag / "summary.json").exists()
    assert main(["dedup", str(crawl), "--out", str(tmp_path / "huge"), "-q", "--batch-size", "131073"]) == 2
    err = capsys.readouterr().err.strip()  # more pages than the store numbers in a batch (`MAX_BATCH_PAGES`)
    assert len(err.splitlines()) == 1 and "at most 131,072" in err, err
    assert main(["dedup", str(crawl), "--out", str(tmp_path / "small"), "-q", "--batch-bytes", "1"]) == 0
    assert sum(len(_read(tmp_path / "small" / f"{name}.jsonl")) for name in ("unique", "duplicates", "rejected")) == 5


def test_gzip_jsonl_and_warc_inputs(tmp_path):
    gz = tmp_path / "crawl.jsonl.gz"
    gz.write_bytes(gzip.compress(_crawl(tmp_path).read_bytes()))
    buffer = io.BytesIO()
    writer = WARCWriter(buffer, gzip=True)
    http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
    body = wrap_in_template(make_article(41), "Gamma").encode()
    writer.write_record(writer.create_warc_record("https://g.example/1", "response",
                                                  payload=io.BytesIO(body), http_headers=http))
    warc = tmp_path / "crawl.warc.gz"
    warc.write_bytes(buffer.getvalue())
    out = tmp_path / "out"
    assert main(["dedup", str(gz), str(warc), "--out", str(out), "-q"]) == 0
    dups = _read(out / "duplicates.jsonl")
    assert [d["url"] for d in dups] == ["https://b.example/1", "https://g.example/1"]
    assert "content_base64" in dups[1]  # WARC bytes are kept, JSON-safe


def test_store_commands(tmp_path, capsys):
    state = tmp_path / "state"
    main(["dedup", str(_crawl(tmp_path)), "--out", str(tmp_path / "o"), "--state", str(state), "-q"])
    capsys.readouterr()
    assert main(["store", "info", "--state", str(state)]) == 0
    assert json.loads(capsys.readouterr().out)["docs"] == 3
    assert main(["store", "expire", "--state", str(state), "--before", "2024-01-02T12:00:00Z"]) == 0
    assert "expired 2 page(s)" in capsys.readouterr().out


def test_eval_writes_metrics_and_report(tmp_path):
    """Without --methods every method that can match is scored. (The console's figures, the report
    and --methods: `test_eval_reports_the_papers_protocol`, on one run.)"""
    assert main(["eval", str(_crawl(tmp_path)), "--out", str(tmp_path / "all"), "-q"]) == 0
    every = json.loads((tmp_path / "all" / "metrics.json").read_text())
    assert set(every["methods"]) == {"default"} | {m for m, cls in METHODS.items() if cls.can_match}
    assert every["methods"]["default"]["f1"] == 1.0


def test_eval_of_a_crawl_without_labels_names_what_it_needs(tmp_path, capsys):
    crawl = tmp_path / "crawl.jsonl"
    crawl.write_text(json.dumps({"url": "https://a.example/1", "content": "<p>some words of a page</p>"}) + "\n")
    assert main(["eval", str(crawl), "--out", str(tmp_path / "eval"), "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no labelled page" in err and "streamdedup devset" in err


def test_methods_without_their_policy_names_the_flag(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["dedup", str(_crawl(tmp_path)), "--out", str(out), "-q", "--methods", "exact"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--policy 'exact'" in err
    assert main(["dedup", str(_crawl(tmp_path)), "--out", str(out), "-q", "--methods", "exact",
                 "--policy", "exact"]) == 0


@pytest.mark.parametrize(("given", "said"), [
    (["--methods", ""], "--methods '' names an empty method"),
    (["--methods", "exact,,minhash"], "--methods 'exact,,minhash' names an empty method"),
    (["--policy", "exact||minhash"], "bad policy 'exact||minhash': a '|' or '+' with no method on one side"),
    (["--policy", "exact+"], "bad policy 'exact+'"),
    (["--policy", "exact|lexrand"], "(--policy 'exact|minhash|simhash+a12')")])
def test_a_malformed_methods_or_policy_is_refused_in_one_line(tmp_path, capsys, given, said):
    """--methods '' ran the default methods, 'exact||minhash' ran as 'exact|minhash', 'exact+' as
    'exact'; a policy of methods not enabled was told --policy 'exact|minhash|simhash|a12', not the default."""
    assert main(["dedup", str(_crawl(tmp_path)), "--out", str(tmp_path / "out"), "-q", *given]) == 2
    err = _one_error_line(capsys)
    assert err.startswith("streamdedup: error: ") and said in err, err


@pytest.mark.parametrize(("table", "named"), [
    ('[template]\nmin_shares = 0.3', "min_shares"), ('[template]\nmin_share = "x"', "min_share"),
    ("[params]\nminhash = 3", "params"), ('max_new_share = "lots"', "max_new_share"),
    ('methods = "exact,minhash"', "methods"), ('[worker]\nbatch_size = "ten"', "batch_size"),
    ("retention = 30", "retention"), ("max_clock_skew = 5", "max_clock_skew"), ("policy = 5", "policy"),
    ("methods = 3", "methods"), ('learned_extraction = "no"', "learned_extraction"),
    ("[worker]\npartitions = 0", "partitions"), ("[worker]\nverdict_wait_s = -1", "verdict_wait_s"),
    ("[worker]\nreplication_factor = 0", "replication_factor")])
def test_a_config_value_of_the_wrong_kind_ends_in_one_line_naming_it(tmp_path, capsys, table, named):
    config = tmp_path / "config.toml"
    config.write_text(table + "\n")
    command = "worker" if table.startswith("[worker]") else "dedup"
    args = (["worker", "--bootstrap-servers", "127.0.0.1:1", "--config", str(config)] if command == "worker"
            else ["dedup", str(_crawl(tmp_path)), "--out", str(tmp_path / "out"), "-q", "--config", str(config)])
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and named in err and "Traceback" not in err, err


def test_a_worker_setting_of_the_wrong_kind_is_named_in_words(tmp_path, capsys):
    """It said "batch_size is a int"."""
    config = tmp_path / "config.toml"
    config.write_text('[worker]\nbatch_size = "ten"\n')
    assert main(["worker", "--bootstrap-servers", "127.0.0.1:1", "--config", str(config)]) == 2
    assert "worker setting batch_size is a whole number (as 256), got 'ten'" in _one_error_line(capsys)


def test_store_delete_help_shows_delete(capsys):
    """`store delete --help` showed the examples of info and expire only."""
    with pytest.raises(SystemExit):
        main(["store", "delete", "--help"])
    assert "  streamdedup store delete --state out/crawl/state PAGE_ID" in capsys.readouterr().out


def test_stdin_input(tmp_path):
    import subprocess
    import sys

    crawl = _crawl(tmp_path)
    out = tmp_path / "out"
    result = subprocess.run([sys.executable, "-m", "streamdedup", "dedup", "-", "--out", str(out), "-q"],
                            input=crawl.read_bytes(), capture_output=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert json.loads((out / "summary.json").read_text())["records"] == 5


def test_lexicon_build_and_use_keeps_it_with_the_state(tmp_path, capsys):
    crawl = _crawl(tmp_path)
    lexicon = tmp_path / "lexicon.json.gz"
    assert main(["lexicon", "build", str(crawl), "--out", str(lexicon), "--min-df", "1"]) == 0
    version = json.loads(capsys.readouterr().out.splitlines()[0])["version"]
    state = tmp_path / "state"
    args = ["dedup", str(crawl), "--out", str(tmp_path / "o"), "--state", str(state), "-q",
            "--methods", "exact,tfidf", "--policy", "exact|tfidf", "--lexicon", str(lexicon)]
    assert main(args) == 0
    assert (state / f"lexicon-{version}.json.gz").exists()
    # the same store with the default statistics is refused: its tfidf signatures differ
    assert main(args[:-2] + ["--out", str(tmp_path / "o2")]) == 2
    assert "tfidf" in capsys.readouterr().err


def test_eval_reports_the_papers_protocol(tmp_path, capsys):
    """The methods named and the default scored, the paper's pool and Dice, the report's charts; the
    console gives the default's directional figures too (the README's Results: edges, content-loss
    edges, edge precision and recall), not only pairwise P/R/F1/ARI. (One run: these were two.)"""
    out = tmp_path / "eval"
    assert main(["eval", str(_crawl(tmp_path)), "--out", str(out), "--methods", "minhash,tf,longsent"]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert set(metrics["methods"]) == {"default", "minhash", "tf", "longsent"}
    assert metrics["methods"]["default"]["f1"] == 1.0
    assert "<svg" in (out / "report.html").read_text()
    lines = capsys.readouterr().out.splitlines()
    default = lines.index(next(line for line in lines if line.strip().startswith("default  P=")))
    assert lines[default + 1].strip() == "edges=1 (content-loss 0)  edge precision=1.000  edge recall=1.000"
    assert metrics["pool"]["verified"] >= 1
    assert {"pool_recall", "verified_precision", "pairs_found"} <= set(metrics["methods"]["tf"])
    assert set(metrics["dice"]) == {"minhash", "tf", "longsent"}
    assert "Dice" in (out / "report.html").read_text()


# -- the command line itself (issue 16) --------------------------------------------------------
def _commands():
    """Every (name, parser) pair of build_parser, store's actions included."""
    import argparse

    from streamdedup.cli import build_parser

    def walk(parser, prefix):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    yield f"{prefix} {name}".strip(), child
                    yield from walk(child, f"{prefix} {name}")

    return list(walk(build_parser(), ""))


def test_version(capsys):
    import pytest

    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == "streamdedup 0.31.0"


def test_every_option_has_help_and_every_command_an_example():
    import argparse

    for name, parser in _commands():
        if name == "devset":  # its own parser: see test_devset_help_names_the_command
            continue
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction) or action.help == argparse.SUPPRESS:
                continue
            assert action.help, f"streamdedup {name}: {action.option_strings or action.dest} has no help"
        top = name.split()[0]
        assert f"streamdedup {top} " in (parser.epilog or ""), f"streamdedup {name} --help shows no example"


def test_devset_help_names_the_command(capsys):
    import pytest

    with pytest.raises(SystemExit):
        main(["devset", "--help"])
    out = capsys.readouterr().out
    assert "usage: streamdedup devset" in out and "    streamdedup devset --pages" in out
    assert "python -m" not in out
    lines = out[out.index("options:"):].splitlines()[1:]
    for n, line in enumerate(lines):  # an option's help is on its line or indented on the next
        if line.startswith("  -"):
            has_help = "  " in line.strip() or (n + 1 < len(lines) and lines[n + 1].startswith(" " * 8))
            assert has_help, f"streamdedup devset: {line.strip()} has no help"


def test_devset_help_describes_every_family(capsys):
    """`--family` offers cold and reuse (the README's results name both), but the description above
    the options listed web, feed, site, multilingual and story only."""
    import re

    from streamdedup.evaluate.construct import FAMILIES, OTHER_FAMILIES

    with pytest.raises(SystemExit):
        main(["devset", "--help"])
    described = re.findall(r"^- ([a-z]+):", capsys.readouterr().out, flags=re.M)
    assert sorted(described) == sorted(FAMILIES + OTHER_FAMILIES)


def test_one_name_for_one_thing_and_verbose_anywhere(tmp_path):
    from pathlib import Path

    from streamdedup.cli import build_parser

    parse = build_parser().parse_args
    for command in ("worker", "faust"):
        assert parse([command, "--state", "s"]).state == Path("s")
        assert parse([command, "--state-dir", "s"]).state == Path("s")  # the deprecated name still works
        assert parse([command, "--config", "c.toml"]).config == Path("c.toml")
        assert parse([command, "--worker-config", "w.toml"]).worker_config == Path("w.toml")
    assert parse(["feed", "x", "--config", "c.toml"]).config == Path("c.toml")
    for name, parser in _commands():
        shown = parser.format_help()
        assert "--state-dir" not in shown and "--worker-config" not in shown, name
    assert parse(["dedup", "x", "--out", "o", "-v"]).verbose is True
    assert parse(["-v", "dedup", "x", "--out", "o"]).verbose is True
    assert parse(["dedup", "x", "--out", "o"]).verbose is False
    assert parse(["store", "info", "--state", "s", "--verbose"]).verbose is True


def test_one_config_file_for_the_detector_and_the_worker(tmp_path):
    from streamdedup.cli import build_parser, detector_config
    from streamdedup.cli_kafka import worker_settings

    config = tmp_path / "dedup.toml"
    config.write_text('policy = "exact"\n[worker]\ngroup_id = "g7"\n[kafka]\n"client.id" = "me"\n')
    args = build_parser().parse_args(["worker", "--config", str(config)])
    assert detector_config(args).policy == "exact"
    settings = worker_settings(args)
    assert settings.group_id == "g7" and settings.kafka["client.id"] == "me"


def test_the_worker_takes_its_topology_as_a_flag_over_the_environment_and_the_config_file(tmp_path, monkeypatch):
    """`streamdedup worker --topology local` (before: only STREAMDEDUP_TOPOLOGY or the config file):
    the config file < the environment < the flag, as the worker's other settings."""
    from streamdedup.cli import build_parser
    from streamdedup.cli_kafka import worker_command_settings
    from streamdedup.runtime.settings import TOPOLOGIES

    config = tmp_path / "dedup.toml"
    config.write_text('[worker]\ntopology = "local"\n')
    worker = ["worker", "--config", str(config)]
    monkeypatch.delenv("STREAMDEDUP_TOPOLOGY", raising=False)
    assert worker_command_settings(build_parser().parse_args(worker)).topology == "local"
    monkeypatch.setenv("STREAMDEDUP_TOPOLOGY", "global")
    assert worker_command_settings(build_parser().parse_args(worker)).topology == "global"
    monkeypatch.setenv("STREAMDEDUP_TOPOLOGY", "local")
    assert worker_command_settings(build_parser().parse_args([*worker, "--topology", "global"])).topology == "global"
    assert worker_command_settings(build_parser().parse_args(["worker", "--topology", "local"])).topology == "local"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["worker", "--topology", "both"])
    assert set(TOPOLOGIES) == {"global", "local"}  # the flag's choices


def _closed_port():
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # nothing listens once it is closed


def test_unreachable_broker_ends_worker_and_feed_in_one_line(tmp_path):
    import subprocess
    import sys

    crawl = _crawl(tmp_path)
    address = f"127.0.0.1:{_closed_port()}"
    for argv in (["worker", "--state", str(tmp_path / "s")], ["feed", str(crawl)], ["topics", "create"]):
        result = subprocess.run([sys.executable, "-m", "streamdedup", *argv, "--bootstrap-servers", address,
                                 "--connect-timeout", "2"], capture_output=True, text=True, timeout=120)
        err = result.stderr.strip()
        assert result.returncode == 2, err
        assert len(err.splitlines()) == 1 and "Traceback" not in err, err
        assert err.startswith("streamdedup: error: no Kafka broker answered at " + address), err


def _snapshot(out):
    return {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.is_file()}


def test_rerun_of_a_finished_job_says_so_and_changes_nothing(tmp_path, capsys):
    crawl, out = _crawl(tmp_path), tmp_path / "out"
    assert main(["dedup", str(crawl), "--out", str(out), "-q"]) == 0
    before = _snapshot(out)
    capsys.readouterr()
    assert main(["dedup", str(crawl), "--out", str(out)]) == 0
    printed = capsys.readouterr()
    assert printed.out.strip() == f"{out} already holds this finished run (5 records): nothing to do (--fresh starts over)"
    assert printed.err == ""
    assert _snapshot(out) == before  # summary.json included
    assert not any(r["dedup"]["reason"] == "duplicate_id" for r in _read(out / "rejected.jsonl"))


def test_rerun_of_a_finished_job_under_other_verdict_settings_names_them(tmp_path, capsys):
    """A newcomer's review: rerun with `--max-new-share 0.5` (or a config's retention), a finished job
    said "nothing to do" as for the same command, and its outputs read as judged with the new
    settings. It now names the settings its records were judged with and those given, and --fresh;
    a file grown since is judged on, its earlier part saying so."""
    crawl, out = _crawl(tmp_path), tmp_path / "out"
    assert main(["dedup", str(crawl), "--out", str(out), "-q"]) == 0
    before = _snapshot(out)
    capsys.readouterr()
    assert main(["dedup", str(crawl), "--out", str(out), "--max-new-share", "0.5"]) == 0
    printed = capsys.readouterr().out.strip()
    assert printed == (f"{out} already holds this finished run (5 records): nothing to do; its records were judged "
                       "with max_new_share 0.1, these settings say 0.5 (--fresh judges them again)"), printed
    assert _snapshot(out) == before
    with crawl.open("a") as grown:
        grown.write(json.dumps({"url": "https://d.example/1", "content": "\n\n".join(make_article(43))}) + "\n")
    assert main(["dedup", str(crawl), "--out", str(out), "--max-new-share", "0.5"]) == 0
    err = capsys.readouterr().err
    assert "its 5 records are skipped, the rest is processed" in err, err
    assert "judged with max_new_share 0.1; the rest with 0.5" in err, err


def test_other_inputs_into_a_finished_out_are_refused_unless_appended(tmp_path, capsys):
    crawl, out = _crawl(tmp_path), tmp_path / "out"
    assert main(["dedup", str(crawl), "--out", str(out), "-q"]) == 0
    before = _snapshot(out)
    capsys.readouterr()
    more = write_jsonl(tmp_path / "more.jsonl", [page("https://z.example/9", wrap_in_template(make_article(43), "Zeta"))])
    assert main(["dedup", str(more), "--out", str(out), "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--fresh" in err and "new --out" in err and str(crawl) in err, err
    assert _snapshot(out) == before
    assert main(["dedup", str(more), "--out", str(out), "-q", "--append"]) == 0
    assert [r["url"] for r in _read(out / "unique.jsonl")][-1] == "https://z.example/9"
    assert json.loads((out / "summary.json").read_text())["records"] == 6


def test_trafilatura_log_lines_stay_out_of_ours(tmp_path, capfd):
    """trafilatura logs ERROR 'empty HTML tree' and WARNING 'discarding data' for a page it cannot
    read; the page's rejection says so already."""
    crawl = write_jsonl(tmp_path / "c.jsonl", [page("https://a.example/e", "<html><body></body></html>"),
                                               page("https://a.example/g", "<<<>>><html>\x00</html>")])
    out = tmp_path / "out"
    assert main(["dedup", str(crawl), "--out", str(out), "-q", "-v"]) == 0
    assert {r["dedup"]["reason"] for r in _read(out / "rejected.jsonl")} == {"no_text"}
    err = capfd.readouterr().err
    assert "trafilatura" not in err and "htmldate" not in err, err


def test_warc_responses_other_than_2xx_are_rejected_with_their_status(tmp_path):
    """A 404 or 500 page (an error template) or a redirect is no article: judged, it would
    match every other error page of its site."""
    buffer = io.BytesIO()
    writer = WARCWriter(buffer, gzip=True)
    statuses = ["200 OK", "404 Not Found", "500 Internal Server Error", "301 Moved Permanently",
                "203 Non-Authoritative Information"]
    for n, status in enumerate(statuses):
        http = StatusAndHeaders(status, [("Content-Type", "text/html")], protocol="HTTP/1.1")
        body = wrap_in_template(make_article(50 + n), "Delta").encode()
        writer.write_record(writer.create_warc_record(f"https://d.example/{n}", "response",
                                                      payload=io.BytesIO(body), http_headers=http))
    warc = tmp_path / "crawl.warc.gz"
    warc.write_bytes(buffer.getvalue())
    out = tmp_path / "out"
    assert main(["dedup", str(warc), "--out", str(out), "-q"]) == 0
    assert [r["url"] for r in _read(out / "unique.jsonl")] == ["https://d.example/0", "https://d.example/4"]
    rejected = {r["url"]: r for r in _read(out / "rejected.jsonl")}
    assert set(rejected) == {"https://d.example/1", "https://d.example/2", "https://d.example/3"}
    for n, status in enumerate(statuses[1:4], start=1):
        record = rejected[f"https://d.example/{n}"]
        assert record["dedup"]["reason"] == "http_status"
        assert record["dedup"]["detail"].startswith(status), record["dedup"]
        assert record["http_status"] == int(status[:3])


def test_warc_resource_records_are_pages_and_revisits_come_out_rejected(tmp_path):
    """A resource record (a page stored without its HTTP exchange) and a revisit record (the crawler's
    own duplicate of a capture, no payload) came out of no output before."""
    buffer = io.BytesIO()
    writer = WARCWriter(buffer, gzip=True)
    body = wrap_in_template(make_article(60), "Epsilon").encode()
    http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
    response = writer.create_warc_record("https://e.example/1", "response", payload=io.BytesIO(body),
                                         http_headers=http)
    writer.write_record(response)
    writer.write_record(writer.create_warc_record("https://e.example/1", "request", payload=io.BytesIO(b"GET /1")))
    other = wrap_in_template(make_article(61), "Epsilon").encode()
    writer.write_record(writer.create_warc_record("https://e.example/2", "resource", payload=io.BytesIO(other),
                                                  warc_content_type="text/html"))
    # WARC/1.0's grammar writes the URI in angle brackets: a page of its site all the same
    writer.write_record(writer.create_warc_record("<https://e.example/3>", "resource", warc_content_type="text/html",
                                                  payload=io.BytesIO(wrap_in_template(make_article(62), "Eps").encode())))
    # a browser crawler's extracted text of a page, and a crawler's log: resources of no site, no pages
    writer.write_record(writer.create_warc_record("urn:text:https://e.example/1", "resource",
                                                  payload=io.BytesIO(b"some text"), warc_content_type="text/plain"))
    writer.write_record(writer.create_warc_record("metadata://gnu.org/software/wget/warc/wget.log", "resource",
                                                  payload=io.BytesIO(b"wget log"), warc_content_type="text/plain"))
    writer.write_record(writer.create_revisit_record(
        "https://e.example/1", response.rec_headers.get_header("WARC-Payload-Digest"), "https://e.example/1",
        response.rec_headers.get_header("WARC-Date")))
    warc = tmp_path / "crawl.warc.gz"
    warc.write_bytes(buffer.getvalue())
    out = tmp_path / "out"
    assert main(["dedup", str(warc), "--out", str(out), "-q"]) == 0
    assert [r["url"] for r in _read(out / "unique.jsonl")] == ["https://e.example/1", "https://e.example/2",
                                                               "https://e.example/3"]
    [revisit] = _read(out / "rejected.jsonl")
    assert revisit["dedup"]["reason"] == "warc_revisit" and revisit["refers_to_url"] == "https://e.example/1"
    assert "https://e.example/1" in revisit["dedup"]["detail"]
    assert json.loads((out / "summary.json").read_text())["records"] == 4  # the request is no page


def _warc_with_a_revisit_between_responses(path):
    buffer = io.BytesIO()
    writer = WARCWriter(buffer, gzip=True)
    http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
    first = writer.create_warc_record("https://f.example/1", "response", http_headers=http,
                                      payload=io.BytesIO(wrap_in_template(make_article(70), "Zeta").encode()))
    writer.write_record(first)
    writer.write_record(writer.create_revisit_record(
        "https://f.example/1", first.rec_headers.get_header("WARC-Payload-Digest"), "https://f.example/1",
        first.rec_headers.get_header("WARC-Date")))
    for n in (2, 3):
        writer.write_record(writer.create_warc_record(
            f"https://f.example/{n}", "response", http_headers=http,
            payload=io.BytesIO(wrap_in_template(make_article(70 + n), "Zeta").encode())))
    path.write_bytes(buffer.getvalue())
    return path


def test_a_job_of_a_version_that_read_warc_responses_only_reruns_as_it_was(tmp_path, capsys, monkeypatch):
    """A finished job made when only responses were read: its rerun was refused ("the inputs changed
    since") though the file had not changed, and --append doubled its pages as duplicate_id."""
    warc = _warc_with_a_revisit_between_responses(tmp_path / "crawl.warc.gz")
    out = tmp_path / "out"
    with monkeypatch.context() as old_version:
        old_version.setattr("streamdedup.outputs.job.WARC_RECORDS", 1)
        assert main(["dedup", str(warc), "--out", str(out), "-q"]) == 0
    before = {name: (out / name).read_bytes() for name in ("unique.jsonl", "duplicates.jsonl", "rejected.jsonl")}
    assert main(["dedup", str(warc), "--out", str(out), "-q"]) == 0, capsys.readouterr().err
    assert {name: (out / name).read_bytes() for name in before} == before  # an unchanged rerun: nothing new
    assert json.loads((out / "summary.json").read_text())["records"] == 3
    # a new job over the same file reads the revisit too
    fresh = tmp_path / "fresh"
    assert main(["dedup", str(warc), "--out", str(fresh), "-q"]) == 0
    assert [r["dedup"]["reason"] for r in _read(fresh / "rejected.jsonl")] == ["warc_revisit"]


def test_a_ledger_reads_the_jobs_of_earlier_and_later_versions():
    from streamdedup.outputs.job import Ledger

    tally = {"counts": {}, "rejected_by_reason": {}, "duplicates_by_method": {}, "merges": 0}
    old = Ledger.decode(json.dumps({"version": 1, "lengths": {}, "tally": tally, "jobs": [
        {"inputs": ["/a"], "policy": ["p", "q"], "consumed": 2, "digest": "d", "done": True}]}).encode())
    assert old.jobs[0].warc_records == 1  # a job of a version that read WARC responses only
    assert old.jobs[0].number is None  # numbered by its place in its ledger, as it was
    later = Ledger.decode(json.dumps({"version": 1, "lengths": {}, "tally": tally, "jobs": [
        {"inputs": ["/a"], "policy": ["p", "q"], "warc_records": 2, "a_later_field": 1}]}).encode())
    assert later.jobs[0].warc_records == 2
    from streamdedup.outputs.job import JobRefused

    for newer in ({"version": 99, "jobs": []}, {"version": 2, "jobs": [{"inputs": [], "policy": [], "warc_records": 9}]}):
        with pytest.raises(JobRefused, match="written by a later streamdedup"):  # not read as if it were this one's
            Ledger.decode(json.dumps({"lengths": {}, "tally": tally, **newer}).encode())


def test_the_command_runs_one_blas_thread_unless_told(monkeypatch):
    """numpy's OpenBLAS would start a thread per core at import (CPU a process spends for nothing
    of ours): the command's entry point asks for one before numpy loads, and keeps a user's value."""
    import streamdedup.__main__ as entry
    import streamdedup.cli

    seen = []
    monkeypatch.setattr(streamdedup.cli, "main", lambda: seen.append(entry.os.environ.get("OPENBLAS_NUM_THREADS")) or 0)
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    assert entry.main() == 0
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "4")
    assert entry.main() == 0
    assert seen == ["1", "4"]


def test_the_command_imports_without_the_cyclic_collector_and_gives_it_back(monkeypatch):
    """Start-up's objects live as long as the process: imported with the collector off, then
    frozen out of its collections; the collector runs again for the command (and stays off if
    the caller had turned it off)."""
    import gc

    import streamdedup.__main__ as entry
    import streamdedup.cli

    seen = []
    threshold = gc.get_threshold()
    monkeypatch.setattr(streamdedup.cli, "main", lambda: seen.append(gc.isenabled()) or 0)
    try:
        assert entry.main() == 0 and gc.isenabled() and gc.get_freeze_count() > 0
        assert gc.get_threshold()[0] == entry.YOUNG_COLLECTION_ALLOCATIONS
        gc.disable()
        assert entry.main() == 0 and not gc.isenabled()
    finally:
        gc.enable()
        gc.unfreeze()
        gc.set_threshold(*threshold)
    assert seen == [True, False]


def test_ctrl_c_ends_dedup_in_one_line_and_the_same_command_resumes(tmp_path, capsys, monkeypatch):
    """Ctrl-C is the user's: one line that says the run can resume, not a KeyboardInterrupt
    traceback from whichever thread held the page; the same command then finishes the run, each
    record once."""
    from streamdedup.detector import Detector

    crawl, out = _crawl(tmp_path), tmp_path / "out"
    real, commits = Detector.commit, []

    def interrupted(self, batch):
        commits.append(1)
        if len(commits) == 2:
            raise KeyboardInterrupt
        return real(self, batch)

    monkeypatch.setattr(Detector, "commit", interrupted)
    assert main(["dedup", str(crawl), "--out", str(out), "-q", "--batch-size", "1"]) == 130
    err = capsys.readouterr().err
    assert err.splitlines() == [f"streamdedup: interrupted; run the same command again to finish it: the records "
                                f"written to {out} stand and the rest are decided once"]
    monkeypatch.undo()
    assert main(["dedup", str(crawl), "--out", str(out), "-q", "--batch-size", "1"]) == 0
    written = [r for n in ("unique.jsonl", "duplicates.jsonl", "rejected.jsonl") for r in _read(out / n)]
    assert len(written) == 5 and len({r["dedup"].get("id") or r["dedup"]["origin"] for r in written}) == 5


def test_a_time_the_store_cannot_read_is_refused_in_one_line_naming_the_forms(tmp_path, capsys):
    main(["dedup", str(_crawl(tmp_path)), "--out", str(tmp_path / "out"), "-q"])
    with pytest.raises(SystemExit) as stopped:
        main(["store", "expire", "--state", str(tmp_path / "out" / "state"), "--before", "yesterday"])
    assert stopped.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "'yesterday' is not a time" in err and "2024-01-01T00:00:00Z" in err
    assert main(["store", "expire", "--state", str(tmp_path / "out" / "state"), "--before", "2000-01-01"]) == 0


@pytest.mark.parametrize(("given", "said"), [
    (["--param", "minhash.num_perm=abc"], "minhash.num_perm takes a whole number (default 128), got 'abc'"),
    (["--param", "simhash.blocks=5.5"], "simhash.blocks takes a whole number (default 5), got 5.5"),
    (["--param", "minhash.threshold=high"], "minhash.threshold takes a number"),
])
def test_a_parameter_of_the_wrong_kind_is_named_with_its_kind(tmp_path, capsys, given, said):
    """It reached the method's own checks as a string: "'<' not supported between instances of
    'str' and 'int'"."""
    assert main(["dedup", str(_crawl(tmp_path)), "--out", str(tmp_path / "out"), "-q", *given]) == 2
    assert said in capsys.readouterr().err


def test_a_config_file_that_is_not_toml_is_named(tmp_path, capsys):
    bad = tmp_path / "streamdedup.toml"
    bad.write_text("[methods\nminhash = 1\n")
    assert main(["dedup", str(_crawl(tmp_path)), "--out", str(tmp_path / "out"), "-q", "--config", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad} is not valid TOML" in err and "line 1" in err


def _one_error_line(capsys):
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err and "[Errno" not in err, err
    return err


def test_a_bad_metrics_port_is_one_line_from_the_flag_or_the_variable(monkeypatch, capsys):
    """--metrics-port 99999 ended in OverflowError's traceback from the HTTP server's bind, and
    STREAMDEDUP_METRICS_PORT=abc in ValueError's while the parser was built: every command, even
    `dedup --help`, failed so."""
    with pytest.raises(SystemExit) as stop:
        main(["worker", "--metrics-port", "99999"])
    assert stop.value.code == 2
    assert "'99999' is not a port: give --metrics-port (STREAMDEDUP_METRICS_PORT)" in capsys.readouterr().err
    monkeypatch.setenv("STREAMDEDUP_METRICS_PORT", "abc")
    monkeypatch.setenv("STREAMDEDUP_CONNECT_TIMEOUT", "15s")
    with pytest.raises(SystemExit) as stop:
        main(["dedup", "--help"])  # a command that reads neither
    assert stop.value.code == 0
    monkeypatch.delenv("STREAMDEDUP_CONNECT_TIMEOUT")
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        main(["worker"])
    assert stop.value.code == 2 and "'abc' is not a port" in capsys.readouterr().err
    monkeypatch.delenv("STREAMDEDUP_METRICS_PORT")
    monkeypatch.setenv("STREAMDEDUP_CONNECT_TIMEOUT", "15s")
    with pytest.raises(SystemExit) as stop:
        main(["feed", "crawl.jsonl"])
    assert stop.value.code == 2 and "--connect-timeout: '15s' is not a number of seconds" in capsys.readouterr().err


def test_a_state_directory_that_cannot_be_made_is_one_line_naming_the_fix(tmp_path):
    """A read-only mount, or a parent that is a file, ended in the raw "[Errno 30] Read-only file
    system" or "[Errno 20] Not a directory" of the mkdir, after the broker was reached. (As root a
    chmod does not stop a write, so the test uses a file as the parent; main() prints the OSError's
    text as its one line.)"""
    from streamdedup.runtime.worker.state_lock import lock_state_dir

    (tmp_path / "file").write_text("x")
    with pytest.raises(OSError) as err:
        lock_state_dir(tmp_path / "file" / "state")
    assert str(err.value) == (f"the state directory {tmp_path / 'file' / 'state'} cannot be written (Not a directory):"
                              " give --state (STREAMDEDUP_STATE_DIR) a folder this worker can create and write")


def test_an_unknown_parameter_is_named_with_the_methods_parameters(tmp_path, capsys):
    """It named the dataclass's constructor (MinHashParams.__init__) and a class constant (ABSENT_MEANS)."""
    assert main(["dedup", str(_crawl(tmp_path)), "--out", str(tmp_path / "out"), "-q",
                 "--param", "minhash.thresh=0.6"]) == 2
    err = _one_error_line(capsys)
    assert "minhash has no parameter 'thresh'" in err and "threshold" in err, err
    assert "__init__" not in err and "ABSENT_MEANS" not in err, err


@pytest.mark.parametrize(("given", "said"), [
    (["--param", "minhsh.threshold=0.95"], "parameters for minhsh (no such method)"),
    (["--methods", "exact,minhash", "--policy", "exact|minhash", "--param", "simhash.max_distance=1"],
     "parameters for simhash (not enabled)"),
    (["--param", "threshold=0.5"], "--param 'threshold=0.5': expected METHOD.NAME=VALUE")])
def test_a_parameter_of_no_enabled_method_is_refused_in_one_line(tmp_path, capsys, given, said):
    """A misspelt or disabled method's --param ran with the method's default (exit 0); one without a
    method ended with exit 1 and no `streamdedup: error:`."""
    assert main(["dedup", str(_crawl(tmp_path)), "--out", str(tmp_path / "out"), "-q", *given]) == 2
    err = _one_error_line(capsys)
    assert err.startswith("streamdedup: error: ") and said in err, err


def test_eval_takes_the_parameters_of_the_methods_it_scores_alone(tmp_path, capsys):
    """`eval --methods spotsigs --param spotsigs.threshold=0.5` was refused (spotsigs not enabled): the
    default runs the configured methods, and each scored method runs alone with its own parameters."""
    from streamdedup.cli import build_parser
    from streamdedup.cli_options import scoring_config
    from streamdedup.config import DEFAULT_METHODS
    from streamdedup.evaluate.run import scenario_configs

    given = ["--methods", "spotsigs", "--param", "spotsigs.threshold=0.5"]
    assert main(["eval", str(_crawl(tmp_path)), "--out", str(tmp_path / "eval"), "-q", *given]) == 0
    config = tmp_path / "eval.toml"
    config.write_text('[params.spotsigs]\nthreshold = 0.5\n')
    for extra in ([], ["--config", str(config)]):
        args = build_parser().parse_args(["eval", "set.jsonl", "--out", "o", *given, *extra])
        wide, configured = scoring_config(args, ["spotsigs"])
        assert configured == DEFAULT_METHODS
        scenarios = scenario_configs(wide, ["spotsigs"])
        assert scenarios["spotsigs"].method_params == {"spotsigs": {"threshold": 0.5}}
    assert main(["eval", str(_crawl(tmp_path)), "--out", str(tmp_path / "e2"), "-q", "--methods", "minhash",
                 "--param", "spotsigs.threshold=0.5"]) == 2  # a method neither configured nor scored
    assert "parameters for spotsigs (not enabled)" in _one_error_line(capsys)


def test_eval_names_a_missing_set_and_an_out_that_is_a_file(tmp_path, capsys):
    """They said "[Errno 2] No such file or directory" and "[Errno 17] File exists"."""
    missing, out = tmp_path / "nope.jsonl", tmp_path / "eval"
    assert main(["eval", str(missing), "--out", str(out), "-q"]) == 2
    assert _one_error_line(capsys) == (f"streamdedup: error: input {missing} does not exist: give JSON Lines or "
                                       "WARC files (.gz ok), or - for stdin")
    assert not out.exists()
    out.write_text("")
    assert main(["eval", str(_crawl(tmp_path)), "--out", str(out), "-q"]) == 2
    assert _one_error_line(capsys) == f"streamdedup: error: --out {out} is a file: give --out a folder (it is " \
                                      "created if missing)"


def test_a_lexicon_that_is_not_one_is_named_with_what_a_lexicon_is(tmp_path, capsys):
    """`--lexicon readme.toml` said only "Expecting value: line 1 column 1 (char 0)"."""
    other = tmp_path / "readme.toml"
    other.write_text("a = 1\n")
    assert main(["dedup", str(_crawl(tmp_path)), "--out", str(tmp_path / "out"), "-q", "--lexicon", str(other)]) == 2
    err = _one_error_line(capsys)
    assert f"lexicon '{other}' is not a lexicon file" in err and "`streamdedup lexicon build`" in err, err


def test_a_store_of_another_extractor_names_the_flag_that_keeps_it(tmp_path, capsys):
    """It said "run with the parameters the store was built with" without naming --extractor."""
    crawl, state = _crawl(tmp_path), tmp_path / "state"
    assert main(["dedup", str(crawl), "--out", str(tmp_path / "1"), "--state", str(state), "-q",
                 "--extractor", "trafilatura"]) == 0
    assert main(["dedup", str(crawl), "--out", str(tmp_path / "2"), "--state", str(state), "-q",
                 "--param", "minhash.num_perm=64"]) == 2
    err = capsys.readouterr().err
    assert "built with (--extractor trafilatura --param minhash.num_perm=128, or the same in --config)." in err, err


def test_a_missing_config_file_is_named_with_the_fix(tmp_path, capsys):
    missing = tmp_path / "none.toml"
    assert main(["dedup", str(_crawl(tmp_path)), "--out", str(tmp_path / "out"), "--config", str(missing)]) == 2
    assert _one_error_line(capsys) == (f"streamdedup: error: configuration file {missing} does not exist: give "
                                       "--config the path of a TOML file")


def test_a_missing_input_leaves_no_store_behind(tmp_path, capsys):
    out = tmp_path / "o1"
    assert main(["dedup", str(tmp_path / "nofile"), "--out", str(out)]) == 2
    assert not (out / "state").exists()
    assert f"input {tmp_path / 'nofile'} does not exist" in _one_error_line(capsys)


def test_feed_names_a_missing_input_before_asking_the_broker(tmp_path, capsys):
    """It asked the broker first (15 s by default), then printed a raw [Errno 2]."""
    pytest.importorskip("confluent_kafka")
    assert main(["feed", str(tmp_path / "nofile"), "--bootstrap-servers", "127.0.0.1:9",
                 "--connect-timeout", "1"]) == 2
    err = _one_error_line(capsys)
    assert f"input {tmp_path / 'nofile'} does not exist" in err and "- for stdin" in err, err


def test_demo_names_a_missing_crawl_before_starting_a_broker(tmp_path, capsys):
    """`demo --crawl nofile` started a broker, made its topics, then printed a raw [Errno 2]."""
    assert main(["demo", "--crawl", str(tmp_path / "nofile"), "--workdir", str(tmp_path / "work")]) == 2
    assert f"input {tmp_path / 'nofile'} does not exist" in _one_error_line(capsys)
    assert not (tmp_path / "work").exists()


def test_a_demo_workdir_of_an_earlier_run_is_refused_before_a_broker_starts(tmp_path, capsys):
    """`demo --workdir W` run again fed the sample into the earlier run's topics: "4/5 worker decided
    71 pages", 49 of the 52 rejected as `duplicate_id`, and the earlier run's verdicts shown."""
    (tmp_path / "work" / "broker").mkdir(parents=True)
    assert main(["demo", "--workdir", str(tmp_path / "work")]) == 2
    line = _one_error_line(capsys)
    assert f"--workdir {tmp_path / 'work'} holds an earlier demo run" in line and "give a new --workdir" in line
    assert list((tmp_path / "work").iterdir()) == [tmp_path / "work" / "broker"]


def test_an_out_folder_that_cannot_be_made_is_one_line_naming_the_fix(tmp_path, capsys):
    """Before: the raw "[Errno 20] Not a directory" of the mkdir."""
    crawl = write_jsonl(tmp_path / "c.jsonl", [page("https://a.example/1", "some words here")])
    (tmp_path / "file").write_text("x")
    assert main(["dedup", str(crawl), "--out", str(tmp_path / "file" / "out")]) == 2
    assert "cannot be made" in (line := _one_error_line(capsys)) and "a place you can write" in line


def test_feed_refuses_a_rate_not_above_zero(capsys):
    """Before: --rate -5 was taken as "as fast as possible", without a word."""
    with pytest.raises(SystemExit) as ended:
        main(["feed", "--rate", "-5", "x.jsonl"])
    assert ended.value.code == 2 and "pages a second above 0" in capsys.readouterr().err


def test_a_reader_that_stops_reading_ends_the_command_quietly(tmp_path, capsys, monkeypatch):
    """`streamdedup clusters --out o | head -1` ended in "streamdedup: error: [Errno 32] Broken pipe"."""
    crawl = write_jsonl(tmp_path / "c.jsonl", [page(f"https://a.example/{n}", f"words of page number {n} here")
                                               for n in range(3)])
    assert main(["dedup", str(crawl), "--out", str(tmp_path / "out"), "-q"]) == 0
    capsys.readouterr()

    class ClosedPipe(io.StringIO):
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr("sys.stdout", ClosedPipe())
    assert main(["clusters", "--out", str(tmp_path / "out")]) == 0
    assert capsys.readouterr().err == ""


def test_a_state_folder_that_is_a_file_is_named_as_one(tmp_path):
    """`faust --state FILE` (and the worker) said only "[Errno 17] File exists"."""
    from streamdedup.runtime.worker.state_lock import lock_state_dir

    (tmp_path / "state").write_text("x")
    with pytest.raises(NotADirectoryError, match="is a file: give --state a folder"):
        lock_state_dir(tmp_path / "state")


def test_store_commands_on_a_workers_state_folder(tmp_path, capsys):
    """A worker keeps a store a partition (pages-0: a page store; pages-1: a fingerprint stage's site
    templates); `store info` on the folder read none of them."""
    from streamdedup.store.template_store import TemplateStore

    state = tmp_path / "state"
    assert main(["dedup", str(_crawl(tmp_path)), "--out", str(tmp_path / "o"), "--state", str(state / "pages-0"),
                 "-q"]) == 0
    TemplateStore(state / "pages-1").close()
    (state / "producer-w1.json").write_text("{}")
    capsys.readouterr()
    assert main(["store", "info", "--state", str(state)]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["partitions"]["pages-0"]["docs"] == 3
    assert "not a streamdedup store" in info["partitions"]["pages-1"]["not_read"]
    assert main(["store", "delete", "--state", str(state), "some-id"]) == 2
    err = _one_error_line(capsys)
    assert "a worker's state folder" in err and f"--state {state / 'pages-0'}" in err, err


@pytest.mark.parametrize("older", [
    "wordpairs(num_perm=256,shingle_size=2,seed=2)",  # before the paragraph sketch
    "wordpairs(num_perm=256,shingle_size=2,seed=2,paragraph_words=12,max_paragraphs=16)[paragraphs]",  # 0.6.0
])
def test_a_store_of_word_pairs_of_an_older_paragraph_sketch_is_refused(tmp_path, capsys, monkeypatch, older):
    """Word-pair signatures before the paragraph sketch measure no new paragraph, and those of 0.6.0's
    (16 paragraphs, common pairs kept) give other values: a store of either is refused, naming the
    method, not judged with another measure."""
    from streamdedup.fingerprints.wordpairs import WordPairsMethod

    crawl, state = _crawl(tmp_path), tmp_path / "state"
    monkeypatch.setattr(WordPairsMethod, "describe", lambda self: older)
    assert main(["dedup", str(crawl), "--out", str(tmp_path / "1"), "--state", str(state), "-q"]) == 0
    monkeypatch.undo()
    assert main(["dedup", str(crawl), "--out", str(tmp_path / "2"), "--state", str(state), "-q"]) == 2
    err = capsys.readouterr().err
    assert "built with other parameters" in err and "[paragraphs 4x10 common_words-1.txt]" in err, err


@pytest.mark.parametrize("flag", ["--exit-when-idle", "--connect-timeout"])
def test_a_negative_number_of_seconds_is_refused_naming_the_form(capsys, flag):
    with pytest.raises(SystemExit) as stopped:
        main(["worker", "--bootstrap-servers", "127.0.0.1:1", flag, "-1"])
    assert stopped.value.code == 2 and "not a number of seconds above 0" in capsys.readouterr().err


def test_faust_takes_its_worker_id_as_its_static_member_id(tmp_path, monkeypatch):
    """`streamdedup faust --worker-id w7` runs as streamdedup-faust-w7 (before: no such flag); without it, two apps
    on one host with their own state folders get their own ids."""
    import streamdedup.cli as cli
    import streamdedup.cli_kafka as cli_kafka
    import streamdedup.runtime.faust_app as faust_app
    import streamdedup.runtime.group_settings as group_settings
    import streamdedup.runtime.topics as topics

    member_ids = []

    def create_app(settings, config, **kwargs):
        app = real_create_app(settings, config, **kwargs)
        member_ids.append(app.conf.consumer_group_instance_id)
        return type("NotRun", (), {"main": lambda self: None})()

    real_create_app = faust_app.create_app
    monkeypatch.delenv("STREAMDEDUP_WORKER_ID", raising=False)
    monkeypatch.setattr(cli, "check_extra", lambda command: None)  # faust, once imported, has no __spec__
    monkeypatch.setattr(cli_kafka, "reach_broker", lambda settings, timeout: None)
    monkeypatch.setattr(topics, "ensure_topics", lambda settings, timeout=None: {})
    monkeypatch.setattr(faust_app, "partitions_started_over", lambda settings, group_id, timeout=None: {})
    monkeypatch.setattr(group_settings, "agree_on_settings", lambda settings, config: None)  # no broker here
    monkeypatch.setattr(faust_app, "create_app", create_app)
    for state in ("a", "b"):
        assert main(["faust", "--state", str(tmp_path / state)]) == 0
    assert main(["faust", "--state", str(tmp_path / "a"), "--worker-id", "w7"]) == 0
    first, second, given = member_ids
    assert first != second and first.startswith("streamdedup-faust-") and given == "streamdedup-faust-w7"
