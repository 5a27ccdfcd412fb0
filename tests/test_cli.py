"""The command line end to end, in a subprocess-free way (main(argv)), on generated inputs."""

import gzip
import io
import json

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
    out = tmp_path / "eval"
    assert main(["eval", str(_crawl(tmp_path)), "--out", str(out), "-q"]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert set(metrics["methods"]) == {"default"} | set(METHODS)
    assert metrics["methods"]["default"]["f1"] == 1.0
    assert "<svg" in (out / "report.html").read_text()


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


def test_eval_reports_the_papers_protocol(tmp_path):
    out = tmp_path / "eval"
    assert main(["eval", str(_crawl(tmp_path)), "--out", str(out), "-q", "--methods", "minhash,tf,longsent"]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["pool"]["verified"] >= 1
    assert {"pool_recall", "verified_precision", "pairs_found"} <= set(metrics["methods"]["tf"])
    assert set(metrics["dice"]) == {"minhash", "tf", "longsent"}
    assert "Dice" in (out / "report.html").read_text()
