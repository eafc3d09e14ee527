# The two commands of the README. Both set up their own environment on a fresh machine.
#   make reproduce   every paper, smoke profile, embedded data  -> reports/index.html
#   make test        the test suite (what .ci/run calls)
#   make docs        the offline docs site from nbs/ and reports/  -> _site/index.html
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
PROFILE ?= smoke
JOBS    ?= 1

.PHONY: env jupyter-env reproduce test bench check-determinism clean-reports docs browser numbers seed-stability dry-run

# torch first and pinned: torch==2.13.0 is the CPU build on our machines' disk, while a bare `torch`
# (asked for by pytorch-metric-learning) would pull a multi-GB CUDA build (DESIGN.md 3.3).
$(STAMP): pyproject.toml requirements-lock.txt
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check torch==2.13.0
	$(BIN)/python -m pip install -q --disable-pip-version-check -c requirements-lock.txt -e ".[dev]"
	$(MAKE) --no-print-directory jupyter-env
	touch $(STAMP)

env: $(STAMP)

# JupyterLab as nbdev intends: a kernel named for the project (the notebooks name it, so Lab has nothing to rewrite
# when one opens) and nbdev's clean hook on every save, both inside .venv (nothing written to ~/.jupyter)
jupyter-env:
	$(BIN)/python -m ipykernel install --sys-prefix --name paperlib --display-name paperlib >/dev/null
	mkdir -p $(VENV)/etc/jupyter
	printf '{"ContentsManager": {"pre_save_hook": "nbdev.clean.clean_jupyter"}}\n' > $(VENV)/etc/jupyter/jupyter_server_config.json

reproduce: $(STAMP)
	$(BIN)/paperlib reproduce --profile $(PROFILE) --jobs $(JOBS)

test: $(STAMP) browser
	$(BIN)/python -m pytest -n 2 --dist loadfile --no-loadscope-reorder

docs: $(STAMP)
	$(BIN)/paperlib site

# Headless Chromium for the docs site's browser tests (tests/test_site.py). Never fails the make: without apt
# (or without root) the browser tests skip and say why.
browser:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
	  (command -v apt-get >/dev/null && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver) || \
	  echo "no chromium: the browser tests of the docs site will skip"

bench: $(STAMP)
	$(BIN)/python benchmarks/bench.py

# every paper's smoke profile afresh at seeds 0, 1 and 2 -> benchmarks/papers/<slug>.json (PAPERS="a b" for some)
seed-stability: $(STAMP)
	$(BIN)/python benchmarks/seed_stability.py $(PAPERS)

# every paper's full profile as a dry run, timed -> benchmarks/dry_run.json (PAPERS="a b" for some)
dry-run: $(STAMP)
	$(BIN)/python benchmarks/dry_run.py $(PAPERS)

# the README's per-paper rows from benchmarks/*.json (a test fails when the README differs)
numbers:
	$(PY) benchmarks/readme_numbers.py

# every paper twice with the same seed, --jobs 1 and --jobs 2, smoke: byte-identical tables, the same verdicts (DET_PROFILE=ci for seconds)
check-determinism: $(STAMP)
	$(BIN)/python benchmarks/determinism.py --profile $(or $(DET_PROFILE),smoke)

clean-reports:
	rm -rf reports/*/ reports/.staging reports/.failed reports/.trash reports/index.html reports/status.json
