import dataclasses
import os
from pathlib import Path

import pytest
from conftest import make_article, page, wrap_in_template, write_jsonl, write_warc

from streamdedup.config import DetectorConfig
from streamdedup.runtime.demo import commands_hint, run_demo, story_counts, verdict_lines
from streamdedup.runtime.settings import WORKER_ID_FILE, WorkerSettings, keep_worker_id, mask


def test_precedence_file_then_environment_then_flags(tmp_path):
    config = tmp_path / "worker.toml"
    config.write_text('[worker]\ngroup_id = "from-file"\nbatch_size = 10\n'
                      '[kafka]\n"security.protocol" = "SASL_SSL"\n"sasl.password" = "hunter2"\n')
    env = {"STREAMDEDUP_BATCH_SIZE": "20", "STREAMDEDUP_KAFKA_SASL_MECHANISM": "PLAIN",
           "STREAMDEDUP_TOPIC_PAGES": "crawl.pages"}
    settings = WorkerSettings.load(config, env=env, bootstrap_servers="b:9092")
    assert (settings.group_id, settings.batch_size, settings.bootstrap_servers) == ("from-file", 20, "b:9092")
    assert settings.topics.pages == "crawl.pages"
    client = settings.client()
    assert client["sasl.mechanism"] == "PLAIN" and client["security.protocol"] == "SASL_SSL"
    assert "hunter2" not in repr(settings)
    assert mask({"ssl.key.password": "x", "ssl.ca.location": "/ca.pem"}) == {"ssl.key.password": "*****",
                                                                           "ssl.ca.location": "/ca.pem"}


def test_a_misspelt_variable_is_refused_naming_the_one_meant():
    """STREAMDEDUP_BATCH_SIZ=10 (or STREAMDEDUP_GROUPID, STREAMDEDUP_METRIC_PORT) was not applied
    and not mentioned: the worker ran at the default. Names far from any (the tests') still pass."""
    for wrong, meant in (("STREAMDEDUP_BATCH_SIZ", "STREAMDEDUP_BATCH_SIZE"), ("STREAMDEDUP_GROUPID", "STREAMDEDUP_GROUP_ID"),
                         ("STREAMDEDUP_METRIC_PORT", "STREAMDEDUP_METRICS_PORT")):
        with pytest.raises(ValueError, match=f"unknown variable {wrong}: did you mean {meant}\\?"):
            WorkerSettings.load(env={wrong: "10"})
    assert WorkerSettings.load(env={"STREAMDEDUP_TEST_BROKER": "tansu", "STREAMDEDUP_BATCH_SIZE": "10"}).batch_size == 10


def test_the_demo_says_how_to_reach_its_commands_when_they_are_not_on_the_path(tmp_path, monkeypatch):
    """`make run` runs .venv/bin/streamdedup; the demo's last line sent a newcomer to `streamdedup broker`,
    which a shell without the venv answers with "command not found"."""
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "activate").write_text("")
    command = bin_dir / "streamdedup"
    command.write_text("#!/bin/sh\n")
    command.chmod(0o755)
    monkeypatch.setattr("sys.executable", str(bin_dir / "python"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "elsewhere"))
    assert commands_hint() == "; these commands are in venv/bin: `. venv/bin/activate` puts them on your PATH"
    monkeypatch.setenv("PATH", str(bin_dir))
    assert commands_hint() == ""


def test_demo_end_to_end(tmp_path, capfd):
    story = make_article(77, paragraphs=4)
    crawl = write_jsonl(tmp_path / "crawl.jsonl", [
        page("https://a.example/1", wrap_in_template(story, "A")),
        page("https://b.example/1", wrap_in_template(story, "B")),
        page("https://a.example/2", wrap_in_template(make_article(78, paragraphs=4), "A")),
        b"broken line"])
    summary = run_demo(Path(crawl), tmp_path / "demo", DetectorConfig())
    assert (summary["pages_in"], summary["unique"], summary["duplicates"], summary["rejected"]) == (4, 2, 1, 1)
    assert summary["clusters"] == 2 and summary["largest_cluster"] == 2
    assert (summary["late_matches"], summary["late_related"]) == (0, 0)  # one partition, in order: nothing late
    out, err = capfd.readouterr()
    assert "Where to look next:\n  - every verdict of the sample crawl" in out  # a list, not one 400-character line
    assert "topics: pages (1 partition), pages.unique (1 partition)" in out, out  # not a Python dict
    # verdicts a newcomer can read, named by url; the summary alone gave counts only
    assert "  duplicate  https://b.example/1  of https://a.example/1 (" in out
    assert "  rejected   pages[0]@3  invalid_json: not JSON" in out
    # the first step says it may take minutes before it does (a first run compiles the kernels)
    assert out.index("1/5 loading the compiled kernels") < out.index("kernels ready in")
    # every client is closed before the broker stops: librdkafka, which writes to the process's
    # stderr itself, has no lost connection to report at the end of a run that went well
    assert "|FAIL|" not in err and "Connection refused" not in err


def test_verdict_lines_name_pages_by_url_and_show_unique_pages_that_name_others_first():
    verdicts = [
        {"id": "a", "url": "https://a.example/1", "dedup": {"status": "unique"}},
        {"id": "b", "url": "https://b.example/1", "dedup": {"status": "duplicate", "duplicate_of": "a",
                                                           "similarity": 0.93, "method": "minhash", "new_share": 0.02}},
        {"id": "c", "url": "https://c.example/1", "dedup": {"status": "unique", "supersedes": ["a"],
                                                           "related_to": ["x"]}},
        {"id": None, "url": None, "dedup": {"status": "rejected", "reason": "invalid_json", "detail": "not JSON",
                                            "origin": "pages[0]@3"}}]
    assert verdict_lines(verdicts, per_kind=1) == [
        "  duplicate  https://b.example/1  of https://a.example/1 (minhash similarity 0.93, 2% of its text new)",
        "  unique     https://c.example/1  supersedes https://a.example/1; related to x",
        "  rejected   pages[0]@3  invalid_json: not JSON"]


def test_the_demos_summary_counts_late_related_events_as_well_as_late_matches():
    """The global topology's corrections after a page's verdict: a `late_match` (L joined A's story) and two
    `late_related` (F's story is related to A's and B's). Before: `late_matches` 1, `late_related` not counted."""
    events = [{"type": "created", "page_id": "A", "cluster_id": "A"},
              {"type": "joined", "page_id": "A2", "cluster_id": "A", "duplicate_of": "A"},
              {"type": "created", "page_id": "B", "cluster_id": "B"},
              {"type": "created", "page_id": "F", "cluster_id": "F"},
              {"type": "created", "page_id": "L", "cluster_id": "L"},
              {"type": "late_match", "page_id": "L", "cluster_id": "A", "duplicate_of": "A"},
              {"type": "late_related", "page_id": "F", "cluster_id": "F", "related_to": ["A"]},
              {"type": "late_related", "page_id": "F", "cluster_id": "F", "related_to": ["B"]}]
    assert story_counts(events) == {"clusters": 4, "clusters_created": 4, "clusters_with_duplicates": 1,
                                    "largest_cluster": 2, "merges": 0, "late_matches": 1, "late_related": 2}


def test_ctrl_c_while_the_demos_worker_runs_says_interrupted_not_a_summary(tmp_path):
    """Ctrl-C stopped the demo's worker after its batch, and the demo then printed "5/5" with the
    pages decided so far (0 of 52) and exited 0, as if the run had gone well."""
    import signal
    import subprocess
    import sys

    demo = subprocess.Popen([sys.executable, "-m", "streamdedup", "demo", "-v", "--workdir", str(tmp_path / "demo")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    try:
        assert demo.stderr is not None
        for line in demo.stderr:  # the worker's loop has its partitions: it holds Ctrl-C now
            if '"assigned ' in line:
                demo.send_signal(signal.SIGINT)
                break
        out, err = demo.communicate(timeout=120)
    finally:
        demo.kill()
    assert demo.returncode == 130, out + err
    assert "streamdedup: interrupted" in err and "5/5" not in out


def test_the_demo_without_a_workdir_removes_its_temporary_folder(tmp_path, monkeypatch, capfd):
    """`make run` / `streamdedup demo` left /tmp/streamdedup-demo-XXXX (19 MB: broker data, stores)
    behind every run; --workdir keeps them, as its help says."""
    import tempfile

    crawl = write_jsonl(tmp_path / "crawl.jsonl", [page("https://a.example/1", wrap_in_template(make_article(79), "A"))])
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    assert run_demo(Path(crawl), None, DetectorConfig())["unique"] == 1
    assert list(temporary.iterdir()) == []
    assert "the stores go with the demo's temporary folder (--workdir keeps them)" in capfd.readouterr().out


def test_the_demo_counts_a_warc_crawls_reader_rejections_and_waits_for_its_pages_only(tmp_path, capfd):
    """A WARC crawl's 404 went to the worker as a page without content (`missing_content`), and the
    worker waited for it; it is now sent to the rejected topic as `feed` sends it, `http_status`."""
    crawl = write_warc(tmp_path / "crawl.warc.gz", [
        (f"https://w.example/{n}", status, wrap_in_template(make_article(90 + n, paragraphs=4), "W").encode())
        for n, status in enumerate(["200 OK", "404 Not Found"])])
    summary = run_demo(crawl, tmp_path / "demo", DetectorConfig())
    assert (summary["pages_in"], summary["unique"], summary["rejected"]) == (2, 1, 1)
    assert summary["rejected_by_reason"] == {"http_status": 1}
    assert "1 the reader rejected" in capfd.readouterr().out


def test_every_secret_bearing_setting_is_masked_in_the_start_up_line(tmp_path):
    secrets = {"sasl.oauthbearer.config": "principal=svc clientSecret=s3cret-1",
               "sasl.jaas.config": 'org.apache...PlainLoginModule required password="s3cret-2";',
               "sasl.oauthbearer.client.secret": "s3cret-3", "ssl.keystore.password": "s3cret-4",
               "ssl.key.pem": "-----BEGIN PRIVATE KEY----- s3cret-5", "ssl.key.password": "s3cret-6",
               "sasl.password": "s3cret-7"}
    harmless = {"ssl.ca.location": "/etc/ca.pem", "ssl.key.location": "/etc/client.key",
                "sasl.mechanism": "OAUTHBEARER", "security.protocol": "SASL_SSL", "sasl.username": "svc-user"}
    config = tmp_path / "worker.toml"
    config.write_text("[kafka]\n" + "".join(f"\"{k}\" = '{v}'\n" for k, v in {**secrets, **harmless}.items()))
    env = {"STREAMDEDUP_KAFKA_SASL_OAUTHBEARER_CONFIG": "principal=svc clientSecret=s3cret-8"}
    settings = WorkerSettings.load(config, env=env)
    assert settings.client()["sasl.oauthbearer.config"].endswith("s3cret-8")  # passed to the client intact
    shown = repr(settings)  # what the worker logs at start-up
    assert "s3cret" not in shown
    assert all(value in shown for value in harmless.values())


def test_the_metrics_endpoint_binds_loopback_unless_told(monkeypatch):
    import urllib.request

    from streamdedup.cli import build_parser
    from streamdedup.runtime.metrics import WorkerMetrics

    metrics = WorkerMetrics()
    host, port = metrics.serve(0)
    assert host == "127.0.0.1"
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        assert b"streamdedup_pages_total" in response.read()
    assert build_parser().parse_args(["worker"]).metrics_host == "127.0.0.1"
    assert build_parser().parse_args(["worker", "--metrics-host", "0.0.0.0"]).metrics_host == "0.0.0.0"
    monkeypatch.setenv("STREAMDEDUP_METRICS_HOST", "0.0.0.0")
    assert build_parser().parse_args(["worker"]).metrics_host == "0.0.0.0"
    with pytest.raises(OSError) as taken:  # a port in use: one line naming the port and the fix
        WorkerMetrics().serve(port)
    assert f"127.0.0.1:{port}" in str(taken.value) and "--metrics-port" in str(taken.value)
    metrics.close()


def test_a_worker_config_that_is_not_toml_is_named(tmp_path):
    bad = tmp_path / "worker.toml"
    bad.write_text("[worker\ngroup_id = 'x'\n")
    with pytest.raises(ValueError, match=r"worker\.toml is not valid TOML: .*line 1"):
        WorkerSettings.load(bad)


def test_an_idle_interval_shorter_than_a_fetch_is_named_with_its_fix():
    """The global topology holds verdicts for the watermarks: an idle claim sent before another
    worker can even fetch its part of a burst releases pages early. The default is not named;
    the local topology and no holding have no watermarks to claim with."""
    assert WorkerSettings().risks() == []
    short = WorkerSettings.load(env={"STREAMDEDUP_WATERMARK_INTERVAL_S": "0.2"})
    [line] = short.risks()
    assert "watermark_interval_s 0.2" in line and "STREAMDEDUP_WATERMARK_INTERVAL_S to 2" in line
    assert WorkerSettings.load(env={"STREAMDEDUP_WATERMARK_INTERVAL_S": "0.2", "STREAMDEDUP_TOPOLOGY": "local"}).risks() == []
    assert WorkerSettings.load(env={"STREAMDEDUP_WATERMARK_INTERVAL_S": "0.2", "STREAMDEDUP_VERDICT_WAIT_S": "0"}).risks() == []


def test_replication_and_changelog_retention_are_settings_the_created_topics_take(settings):
    """The topics the worker creates take `replication_factor` (was hard-coded 1) and the internal
    changelogs `changelog_retention_ms` (was for ever, hard-coded); both from env, file or flag,
    and a replication of 3 asks min.insync.replicas 2. On the real broker: the created changelog's
    retention.ms is the one set."""
    from confluent_kafka.admin import AdminClient, ConfigResource

    from streamdedup.cli import build_parser
    from streamdedup.runtime.topics import ensure_topics, topic_config

    env = {"STREAMDEDUP_REPLICATION_FACTOR": "3", "STREAMDEDUP_CHANGELOG_RETENTION_MS": "2764800000"}
    loaded = WorkerSettings.load(env=env)
    assert (loaded.replication_factor, loaded.changelog_retention_ms) == (3, 2764800000)
    internal = topic_config(loaded.topics.internal[0], loaded)
    assert internal["retention.ms"] == "2764800000" and internal["min.insync.replicas"] == "2"
    assert "retention.ms" not in topic_config(loaded.topics.pages, loaded)
    args = build_parser().parse_args(["topics", "create", "--replication-factor", "2"])
    assert WorkerSettings.load(env={}, replication_factor=args.replication_factor).replication_factor == 2
    with pytest.raises(ValueError, match="replication_factor must be 1 or more"):
        WorkerSettings.load(env={"STREAMDEDUP_REPLICATION_FACTOR": "0"})
    from dataclasses import replace

    ours = replace(settings, changelog_retention_ms=2764800000, topology="global")
    ensure_topics(ours)
    admin = AdminClient(ours.client())
    resource = ConfigResource("topic", ours.topics.internal[0])
    described = admin.describe_configs([resource])[resource].result(15)
    assert described["retention.ms"].value == "2764800000"


def test_feeding_a_topic_that_does_not_exist_is_refused_with_its_fix(settings, tmp_path, monkeypatch, capsys):
    """`feed --topic` with a typo: before, the broker made the topic on first use (1 partition, its
    default record size) and printed "sent", and no worker ever read the crawl. Now: exit 2, one
    line naming the workers' topic, and no topic made. An existing topic is fed as before."""
    from streamdedup.cli import main
    from streamdedup.runtime.topics import topic_exists

    for name in settings.topics.__dataclass_fields__:
        monkeypatch.setenv(f"STREAMDEDUP_TOPIC_{name.upper()}", getattr(settings.topics, name))
    crawl = write_jsonl(tmp_path / "crawl.jsonl", [page("https://a.example/1", " ".join(make_article(5)))])
    typo = settings.topics.pages + "z"
    assert main(["feed", str(crawl), "--bootstrap-servers", settings.bootstrap_servers, "--topic", typo]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"topic {typo!r} does not exist" in err and "leave out --topic" in err
    assert not topic_exists(settings, typo)
    assert main(["feed", str(crawl), "--bootstrap-servers", settings.bootstrap_servers,
                 "--topic", settings.topics.pages]) == 0
    assert f"sent 1 pages to {settings.topics.pages}" in capsys.readouterr().out


def test_the_default_worker_id_is_its_own_for_each_state_directory_and_stable(tmp_path, monkeypatch):
    """Without a worker id, two workers (or Faust apps) on one host with their own state directories get their own
    static member ids, and a restart on the same directory gets the same one; a given id is kept as it is. Before:
    both took the host name, and the group fenced the workers and rebalanced the Faust apps for ever."""
    monkeypatch.delenv("STREAMDEDUP_WORKER_ID", raising=False)
    host = os.uname().nodename
    a, b = WorkerSettings(state_dir=tmp_path / "a"), WorkerSettings(state_dir=tmp_path / "b")
    assert a.worker_id != b.worker_id and a.worker_id.startswith(f"{host}-") and b.worker_id.startswith(f"{host}-")
    monkeypatch.chdir(tmp_path)  # the same directory, named another way: the same id
    assert WorkerSettings(state_dir=Path("a")).worker_id == a.worker_id
    assert WorkerSettings.load(env={}, state_dir=tmp_path / "a").worker_id == a.worker_id  # flags after defaults
    config = tmp_path / "worker.toml"
    config.write_text(f'[worker]\nstate_dir = "{tmp_path / "b"}"\n')
    assert WorkerSettings.load(config, env={}).worker_id == b.worker_id
    assert WorkerSettings.load(env={"STREAMDEDUP_WORKER_ID": "w7"}, state_dir=tmp_path / "a").worker_id == "w7"
    assert WorkerSettings(worker_id="w7", state_dir=tmp_path / "b").worker_id == "w7"
    # a state directory of a worker (or Faust app) of 0.11.0 keeps the host name: its static member's place
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / f"producer-{host}.json").write_text("streamdedup-streamdedup-x")
    (tmp_path / "old-faust" / "faust-data").mkdir(parents=True)
    assert WorkerSettings(state_dir=tmp_path / "old").worker_id == host
    assert WorkerSettings(state_dir=tmp_path / "old-faust").worker_id == host
    # a default id is kept in its state directory: the same after the app wrote its faust-data
    fresh = WorkerSettings(state_dir=tmp_path / "fresh")
    keep_worker_id(fresh)
    (tmp_path / "fresh" / "faust-data").mkdir()
    assert WorkerSettings(state_dir=tmp_path / "fresh").worker_id == fresh.worker_id != host
    keep_worker_id(WorkerSettings(worker_id="given", state_dir=tmp_path / "given"))  # a given id is not kept
    assert not (tmp_path / "given" / WORKER_ID_FILE).exists()


def test_settings_replaced_with_another_state_directory_take_its_default_worker_id(tmp_path, monkeypatch):
    """A library user's `dataclasses.replace(settings, state_dir=...)` gets the new directory's default id (the
    old one's kept the id of another worker's directory: two workers fenced each other); a given id stays."""
    monkeypatch.delenv("STREAMDEDUP_WORKER_ID", raising=False)
    first = WorkerSettings(state_dir=tmp_path / "a")
    moved = dataclasses.replace(first, state_dir=tmp_path / "b")
    assert moved.worker_id == WorkerSettings(state_dir=tmp_path / "b").worker_id != first.worker_id
    assert dataclasses.replace(moved, batch_size=8).worker_id == moved.worker_id
    assert moved == WorkerSettings(state_dir=tmp_path / "b")  # equal settings, however made
    given = dataclasses.replace(first, worker_id="w7")
    assert dataclasses.replace(given, state_dir=tmp_path / "b").worker_id == "w7"
    assert dataclasses.replace(first, worker_id="w8", state_dir=tmp_path / "c").worker_id == "w8"
    monkeypatch.chdir(tmp_path)  # a relative state directory: the directory it names where it is used
    here = WorkerSettings(state_dir=Path("rel"))
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert dataclasses.replace(here, batch_size=8).worker_id == WorkerSettings(state_dir=Path("rel")).worker_id
    assert "_worker_id_of" not in repr(first)
    with pytest.raises(ValueError, match="unknown worker settings"):
        WorkerSettings.load(env={}, _worker_id_of=tmp_path)  # not a setting


def test_feed_counts_what_the_reader_rejected_apart_from_the_pages_it_sent(settings, tmp_path, monkeypatch, capsys):
    """A WARC with a 200 and a 404 response: `feed` printed "sent 2 pages to pages" while one page
    reached the pages topic and the 404 went to the rejected topic (with `--topic`, the default
    rejected topic: a user counting the topic found one missing). Now each is counted where it went."""
    import io

    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    from streamdedup.cli import main

    for name in settings.topics.__dataclass_fields__:
        monkeypatch.setenv(f"STREAMDEDUP_TOPIC_{name.upper()}", getattr(settings.topics, name))
    buffer = io.BytesIO()
    writer = WARCWriter(buffer, gzip=False)
    for status in ("200 OK", "404 Not Found"):
        http = StatusAndHeaders(status, [("Content-Type", "text/html")], protocol="HTTP/1.1")
        body = f"<html><body><p>{status} page body with some words</p></body></html>".encode()
        writer.write_record(writer.create_warc_record(f"https://warc.example/{status[:3]}", "response",
                                                      payload=io.BytesIO(body), http_headers=http))
    crawl = tmp_path / "crawl.warc"
    crawl.write_bytes(buffer.getvalue())
    assert main(["feed", str(crawl), "--bootstrap-servers", settings.bootstrap_servers]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith(f"sent 1 pages to {settings.topics.pages} on "), line
    assert line.endswith(f"; 1 the reader rejected (http_status 1) went to {settings.topics.rejected}"), line


def test_a_misspelt_topic_setting_is_refused_naming_the_known_ones(tmp_path):
    """`[worker.topics] page = "crawl"` ended in a traceback (TypeError: Topics.__init__() got an
    unexpected keyword argument 'page'), and STREAMDEDUP_TOPIC_PAGE=crawl was ignored: the worker
    read `pages`. Both are one line naming the known names, as an unknown [worker] key is."""
    config = tmp_path / "worker.toml"
    config.write_text('[worker.topics]\npage = "crawl"\n')
    with pytest.raises(ValueError, match=r"unknown topics \['page'\].*'pages'"):
        WorkerSettings.load(config, env={})
    with pytest.raises(ValueError, match=r"STREAMDEDUP_TOPIC_PAGE'\].*STREAMDEDUP_TOPIC_PAGES"):
        WorkerSettings.load(None, env={"STREAMDEDUP_TOPIC_PAGE": "crawl"})
    with pytest.raises(ValueError, match=r"STREAMDEDUP_TOPIC_pages"):  # read in upper case only: refused too
        WorkerSettings.load(None, env={"STREAMDEDUP_TOPIC_pages": "crawl"})
    config.write_text('[worker.topics]\npages = "crawl"\n')
    assert WorkerSettings.load(config, env={"STREAMDEDUP_TOPIC_UNIQUE": "kept"}).topics.pages == "crawl"


def test_the_demos_merges_count_each_story_merged_away_once():
    """Two pages each bridging story T into A: one story merged away, so clusters = created - merges.

    Before: merges counted `merged` events (2), and 3 created less 2 merges did not give the 2 stories left."""
    events = [{"type": "created", "page_id": "A", "cluster_id": "A"},
              {"type": "created", "page_id": "T", "cluster_id": "T"},
              {"type": "created", "page_id": "U", "cluster_id": "U"},
              {"type": "merged", "page_id": "V", "cluster_id": "A", "merged": ["T"]},
              {"type": "merged", "page_id": "W", "cluster_id": "A", "merged": ["T"]}]
    counts = story_counts(events)
    assert (counts["clusters"], counts["clusters_created"], counts["merges"]) == (2, 3, 1)


@pytest.mark.parametrize("typo", ["ture", "flase", "enabled", "2"])
def test_a_yes_or_no_setting_that_is_neither_is_refused(typo):
    """STREAMDEDUP_TRANSACTIONS=ture read as false: exactly-once was off, without a word (and
    STREAMDEDUP_STATIC_MEMBERSHIP=flase false as meant, by chance). It ends in one line naming the forms."""
    with pytest.raises(ValueError, match=rf"^worker setting transactions is true or false \(1 or 0, yes or no\), "
                                         rf"got '{typo}' \(\[worker\] transactions, STREAMDEDUP_TRANSACTIONS or its flag\)$"):
        WorkerSettings.load(env={"STREAMDEDUP_TRANSACTIONS": typo})
    for text, meant in (("1", True), ("true", True), ("Yes", True), ("on", True), ("0", False), ("false", False),
                        ("NO", False), ("off", False)):
        assert WorkerSettings.load(env={"STREAMDEDUP_STATIC_MEMBERSHIP": text}).static_membership is meant, text


def test_an_unknown_topology_or_topic_reset_names_where_it_is_set():
    """`unknown topology 'both'` named neither [worker] topology nor STREAMDEDUP_TOPOLOGY nor --topology."""
    with pytest.raises(ValueError, match=r"^unknown topology 'both': choose global or local \(\[worker\] topology, "
                                         r"STREAMDEDUP_TOPOLOGY or --topology\)$"):
        WorkerSettings.load(env={"STREAMDEDUP_TOPOLOGY": "both"})
    with pytest.raises(ValueError, match=r"^unknown on_topic_reset 'ignore': choose refuse or restart \(\[worker\] "
                                         r"on_topic_reset, STREAMDEDUP_ON_TOPIC_RESET or --on-topic-reset\)$"):
        WorkerSettings.load(env={"STREAMDEDUP_ON_TOPIC_RESET": "ignore"})
