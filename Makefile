# Two commands for a fresh machine: `make run` and `make test`. Each creates .venv on first use.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test,bench]'  # bench: tests/test_bench_suite.py runs the suite's smoke mode
	touch $(STAMP)

.PHONY: run dedup test lint bench clean
run: $(STAMP)  ## the demo: embedded broker + worker + the sample crawl shipped in the repo
	$(BIN)/streamdedup demo

dedup: $(STAMP)  ## batch mode on the sample crawl into out/sample (no Kafka)
	$(BIN)/streamdedup dedup streamdedup/data/sample_crawl.jsonl.gz --out out/sample --state out/sample-state --fresh

test: $(STAMP)  ## the whole test suite
	$(BIN)/python -m pytest tests

lint: $(STAMP)  ## ruff (style, imports, bugbear, pyupgrade) and mypy, as CI runs them
	$(BIN)/ruff check streamdedup tests bench
	$(BIN)/mypy

bench: $(STAMP)  ## the benchmark suite (bench/run: table + bench/results/latest.json; ~25 min)
	bench/run

clean:
	rm -rf out build *.egg-info
