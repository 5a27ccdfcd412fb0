from pathlib import Path

from conftest import make_article, page, wrap_in_template, write_jsonl
from streamdedup.config import DetectorConfig
from streamdedup.runtime.demo import run_demo
from streamdedup.runtime.settings import WorkerSettings, mask


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


def test_demo_end_to_end(tmp_path, capsys):
    story = make_article(77, paragraphs=4)
    crawl = write_jsonl(tmp_path / "crawl.jsonl", [
        page("https://a.example/1", wrap_in_template(story, "A")),
        page("https://b.example/1", wrap_in_template(story, "B")),
        page("https://a.example/2", wrap_in_template(make_article(78, paragraphs=4), "A")),
        b"broken line"])
    summary = run_demo(Path(crawl), tmp_path / "demo", DetectorConfig())
    assert (summary["pages_in"], summary["unique"], summary["duplicates"], summary["rejected"]) == (4, 2, 1, 1)
    assert summary["clusters"] == 2 and summary["largest_cluster"] == 2
    assert "Where to look next" in capsys.readouterr().out
