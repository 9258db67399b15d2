# Every developer task is one command. uv is bootstrapped into .tools/ if it is not on PATH.
UV := $(or $(shell command -v uv 2>/dev/null),.tools/bin/uv)
PYTEST_ARGS ?=
# Tests in parallel (tests/conftest.py: two workers per core), handed out one at a time so
# that the slow ones, which go first, spread over every worker; the 25 slowest are listed.
PYTEST_PARALLEL ?= -n auto --dist load --maxschedchunk 1 --durations 25
# Bytecode compiled once, at install (uv does not by default): where PYTHONDONTWRITEBYTECODE
# is set, as in containers and CI, every command otherwise compiled its ~1,000 modules from
# source each time it started: 2.4 s of imports instead of 1.5 s here (issue 30).
export UV_COMPILE_BYTECODE := 1
COMPILE_SRC = $(UV) run --no-sync python -m compileall -q src

.PHONY: install install-dev system-deps lint typecheck unit test mutations docs bench bench-fleet bench-resync crawl clean

.tools/bin/uv:
	python3 -m venv .tools && .tools/bin/pip install -q uv


install: $(UV)  ## runtime only: what `sitesync crawl` needs
	$(UV) sync --locked --no-dev
	$(COMPILE_SRC)

install-dev: $(UV)  ## runtime + the dev extra (pytest, ruff, mypy, hypothesis)
	$(UV) sync --locked --extra dev
	$(COMPILE_SRC)

lint: install-dev
	$(UV) run --no-sync ruff check src tests benchmarks
	$(UV) run --no-sync ruff format --check src tests benchmarks

typecheck: install-dev
	$(UV) run --no-sync mypy src/sitesync

system-deps:  ## Debian packages the tests need (chromium, PostgreSQL binaries); idempotent
	bash scripts/ensure-system-deps.sh

unit: install-dev system-deps  ## the pytest suite alone
	$(UV) run --no-sync pytest $(PYTEST_PARALLEL) $(PYTEST_ARGS)

test: lint typecheck unit  ## the whole suite: what .ci/run calls

mutations: install-dev system-deps  ## five deliberate bugs in the hot spots, each must fail the suite
	$(UV) run --no-sync python scripts/mutations.py $(MUTATIONS)

docs: install-dev  ## regenerate the generated parts of docs/
	$(UV) run --no-sync python scripts/update_settings_doc.py
	$(UV) run --no-sync python scripts/update_architecture_doc.py
	$(UV) run --no-sync python scripts/update_json_doc.py

# make bench BENCH_ARGS="--pages 2000 --rounds 1": a quick smoke run; SITESYNC_BENCH_POSTGRES_DSN
# (or BENCH_ARGS=--pg-dsn ...) adds PostgreSQL.
bench: $(UV)  ## benchmarks/README.md: sitesync (one process, every core) vs a bare aiohttp loop
	bash scripts/ensure-system-deps.sh bench
	$(UV) sync --locked --extra dev --extra bench
	$(COMPILE_SRC)
	$(UV) run --no-sync python benchmarks/run.py $(BENCH_ARGS)

bench-fleet: $(UV)  ## benchmarks/README.md: the store and the fleet on SQLite and PostgreSQL
	$(UV) sync --locked --extra dev --extra bench
	$(COMPILE_SRC)
	$(UV) run --no-sync python benchmarks/fleet.py $(BENCH_FLEET_ARGS)

bench-resync: $(UV)  ## benchmarks/README.md: three scans of a 20-host nginx site (first, unchanged, 10 % changed)
	$(UV) sync --locked --extra dev --extra bench
	$(COMPILE_SRC)
	$(UV) run --no-sync python benchmarks/resync.py $(BENCH_RESYNC_ARGS)

crawl: install  ## make crawl URL=https://example.org ARGS="--max-pages 500"
	$(UV) run --no-sync sitesync crawl $(URL) $(ARGS)

clean:
	rm -rf .venv .tools .mypy_cache .ruff_cache .pytest_cache
