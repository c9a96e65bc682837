# Two commands on a fresh machine: `make run` and `make test`. Everything else they need is installed here.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
UV := $(shell command -v uv 2>/dev/null || echo $(PYTHON) -m uv)
HOST ?= 127.0.0.1
PORT ?= 8501
API_PORT ?= 8000
# Test processes (pytest-xdist): most tests wait on servers, browsers and subprocesses, so more processes than cores
# overlap those waits. conftest.py groups the tests: a module's tests in one process, the browser tests in one.
WORKERS ?= 4
PYTEST_PARALLEL = -n $(WORKERS) --dist loadgroup

.PHONY: run serve test check lint bench bench-mirror bench-soak bench-dashboard bench-map bench-peers bench-cluster bench-history bench-market-peer bench-first-start lock install clean

install: $(STAMP)

$(STAMP): requirements.lock pyproject.toml
	@$(PYTHON) -m uv --version >/dev/null 2>&1 || command -v uv >/dev/null 2>&1 || $(PYTHON) -m pip install --quiet uv
	@test -x $(BIN)/python || $(UV) venv --quiet --python $(PYTHON) $(VENV)
	$(UV) pip sync --quiet --compile-bytecode --python $(BIN)/python requirements.lock
	$(UV) pip install --quiet --python $(BIN)/python --no-deps -e .
	@touch $(STAMP)

# The project's own modules compiled ahead (quick when they are already): every process that imports them, the
# dashboard's first page and each test's server among them, then reads bytecode instead of compiling the source,
# even where PYTHONDONTWRITEBYTECODE keeps Python from writing it. The dependencies are compiled as installed.
COMPILE = $(BIN)/python -m compileall -q -j 0 app.py precon components views >/dev/null

# The dashboard, on the embedded service (or on PRECON_API_URL with PRECON_API_KEY and PRECON_PRODUCT_ID).
run: $(STAMP)
	@$(COMPILE)
	@if [ -z "$$PRECON_API_URL" ]; then $(BIN)/precon catalogue prepare; fi
	@echo "Precon Explorer: http://$(HOST):$(PORT)"
	$(BIN)/streamlit run app.py --server.address $(HOST) --server.port $(PORT) --server.headless true

# The listings API alone, with the development key.
serve: $(STAMP)
	@echo "Precon listings service: http://$(HOST):$(API_PORT)/docs (development key printed below)"
	$(BIN)/precon serve --dev --host $(HOST) --port $(API_PORT)

test: $(STAMP)
	@$(COMPILE)
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/python -m pytest $(PYTEST_PARALLEL)

# The inner loop: ruff, the layers, and the tests that need neither a browser nor PostgreSQL (a few minutes).
check: $(STAMP)
	@$(COMPILE)
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/python -m pytest $(PYTEST_PARALLEL) -m "not browser and not postgres"

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/ruff format --check .

bench: $(STAMP)
	$(BIN)/python bench/service.py $(if $(LISTINGS),--listings $(LISTINGS))

# A daily mirror run of a 50,000-listing source with 1 % of its listings changed, the mirror as it was against the
# mirror as it is, and where its time goes (LISTINGS=2000 for a quick run).
bench-mirror: $(STAMP)
	$(BIN)/python bench/mirror.py $(if $(LISTINGS),--listings $(LISTINGS))

# Bursts of load separated by idle pauses, 10 minutes (MINUTES=2 for a quick run): errors, memory, SQLite connections.
bench-soak: $(STAMP)
	$(BIN)/python bench/soak.py $(if $(MINUTES),--minutes $(MINUTES))

# How quickly the Search page answers in a real browser (needs Debian's chromium).
bench-dashboard: $(STAMP)
	$(BIN)/python bench/dashboard.py

# How quickly the Map page answers in a real browser, on a 50,000-listing catalogue (LISTINGS=20000 for less).
bench-map: $(STAMP)
	$(BIN)/python bench/map.py $(if $(LISTINGS),--listings $(LISTINGS))

# Units, history and the simulation at 50,000 listings (LISTINGS=2500 for a quick run): unitFilter, changes and
# listing_history against their baselines in the same run, the service's memory, simulate --days 730.
bench-history: $(STAMP)
	$(BIN)/python bench/history.py $(if $(LISTINGS),--listings $(LISTINGS))

# Ours against Datasette 0.65.5 (in its own bench/.peers-venv, made on first use) on one catalogue and query mix,
# interleaved: throughput ratio and totals agreement per class, at 50,000 listings (LISTINGS=5000 for a quick run).
bench-peers: $(STAMP)
	$(BIN)/python bench/peers.py $(if $(LISTINGS),--listings $(LISTINGS))

# market_stats against DuckDB (its unit states per month precomputed in SQL, bench/market_sql.py) on one catalogue with
# two years of history: every figure compared, both timed interleaved, at 2,500 listings (LISTINGS=50000 for more).
bench-market-peer: $(STAMP)
	$(BIN)/python bench/market_peer.py $(if $(LISTINGS),--listings $(LISTINGS)) $(if $(ROUNDS),--rounds $(ROUNDS))

# make run's first start on a new data directory, to the URL and to the first page (needs Debian's chromium).
bench-first-start: $(STAMP)
	$(BIN)/python bench/first_start.py

# PostgreSQL, Redis, HAProxy (deploy/haproxy.cfg) and 3 replicas on loopback (Debian's postgresql, redis-server and
# haproxy): throughput with 1, 2 and 3 replicas, one replica against a single node, the write-to-read lag under
# load, one replica killed mid-run (failed requests, webhook events lost or sent twice), the rate limit across
# replicas (QUICK=1 for a short run).
bench-cluster: $(STAMP)
	$(BIN)/python bench/cluster.py $(if $(QUICK),--quick) $(if $(LISTINGS),--listings $(LISTINGS))

# Re-pin after editing pyproject.toml's dependencies (no registry addresses are recorded).
lock:
	$(UV) pip compile --quiet pyproject.toml --group dev -o requirements.lock

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
