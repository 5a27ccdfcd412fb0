# Two commands for a fresh machine: `make run` and `make test`. Each creates .venv on first use and
# installs what its target needs (the core, or the core and extras), at the versions in constraints.txt.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
CONSTRAINTS := constraints.txt
OLDEST_PIP := 22.0.2

# $(VENV)/.extra-NAME: the core and the extra NAME installed (core: the core alone)
$(VENV)/.extra-%: pyproject.toml $(CONSTRAINTS)
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	@$(BIN)/python -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "make: $(VENV) holds Python \
	$$($(BIN)/python -V 2>&1 | cut -d' ' -f2), streamdedup needs 3.11 or later: rm -rf $(VENV); make \
	$(or $(MAKECMDGOALS),run) PY=python3.11" >&2; exit 1; }  # (pip would say only ResolutionImpossible)
	$(BIN)/python -m pip install -q 'pip>=$(OLDEST_PIP)'  # the oldest pip we test with (docs/reference.md, Install)
	$(BIN)/python -m pip install -q -c $(CONSTRAINTS) -e '.$(if $(filter core,$*),,[$*])'
	touch $@

.PRECIOUS: $(VENV)/.extra-%
.PHONY: run dedup test lint bench constraints clean
run: $(VENV)/.extra-broker  ## the demo: embedded broker + worker + the sample crawl shipped in the repo
	$(BIN)/streamdedup demo

dedup: $(VENV)/.extra-core  ## batch mode on the sample crawl into out/sample (no Kafka)
	$(BIN)/streamdedup dedup streamdedup/data/sample_crawl.jsonl.gz --out out/sample --state out/sample-state --fresh

# bench: tests/test_bench_suite.py runs the suite's smoke mode
# two processes, each file's tests in one (its module fixtures built once): most tests wait on a broker
test: $(VENV)/.extra-test $(VENV)/.extra-bench  ## the whole test suite
	$(BIN)/python -m pytest tests -n 2 --dist loadfile

lint: $(VENV)/.extra-test  ## ruff (style, imports, bugbear, pyupgrade), mypy and the import layers, as CI runs them
	$(BIN)/ruff check streamdedup tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache  # pyproject.toml [tool.importlinter]: the data flow's layers, no import cycle

bench: $(VENV)/.extra-bench  ## the benchmark suite (bench/run: table + bench/results/latest.json; ~25 min)
	bench/run

constraints: $(VENV)/.extra-test $(VENV)/.extra-bench  ## pin what .venv holds now into constraints.txt
	{ sed -n '1,2p' $(CONSTRAINTS); $(BIN)/python -m pip freeze --exclude-editable | grep -viE '^(streamdedup|#)'; } \
		> $(CONSTRAINTS).new && mv $(CONSTRAINTS).new $(CONSTRAINTS)

clean:
	rm -rf out build *.egg-info
