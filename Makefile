# Two commands do all the set-up on a fresh machine (Python 3.11+):
#   make app    installs the dependencies and serves the dashboard at http://127.0.0.1:8501 (open it in a browser);
#               this machine only, unless asked: make app HOST=0.0.0.0 (or PORT=8502)
#   make test   installs the dependencies (and, as root, Debian's Chromium, poppler-utils and PostgreSQL) and runs
#               every test, two at a time (pytest-xdist): nothing is skipped
#   make check  ruff, mypy and the fast tests (everything not marked slow or browser): under 2 minutes on 2 cores
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
PORT   ?= 8501
HOST   ?= 127.0.0.1

.PHONY: app test check install install-dev browser system-deps lint bench

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

install: $(PY)
	$(PY) -m pip install -q -r requirements.txt

install-dev: $(PY)
	$(PY) -m pip install -q -r requirements-dev.txt

# What the tests need from Debian (never `playwright install`): Chromium for the real-browser tests and the PDFs,
# poppler-utils (pdftotext) to read the PDFs back, PostgreSQL (its server binaries) for the database tests.
system-deps:
	@missing=""; \
	command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	command -v pdftotext >/dev/null 2>&1 || missing="$$missing poppler-utils"; \
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 || missing="$$missing postgresql"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else echo "Missing:$$missing ('sudo apt-get install$$missing'): the tests that need them are skipped"; fi; fi

browser: system-deps

app: install
	@echo "Dashboard: http://$(HOST):$(PORT) (listening on $(HOST) only; make app HOST=0.0.0.0 to open it to the network)"
	$(PY) -m streamlit run app.py --server.port $(PORT) --server.address $(HOST)

# The full suite: two tests at a time (pytest-xdist; a file's tests on one worker, so a module fixture is built once),
# then, alone, the tests that drive a browser or start Dask worker processes and wait on them within timeouts.
NO_SKIPS = AUDIT_NO_SKIPS=$$([ "$$(id -u)" = 0 ] && echo 1)
test: install-dev system-deps
	$(PY) -m ruff check .
	$(PY) -m mypy
	$(NO_SKIPS) $(PY) -m pytest -n 2 --dist loadfile -m "not browser and not cluster"
	$(NO_SKIPS) $(PY) -m pytest -m "browser or cluster"

# The fast tier: what to run before each commit.
check: install-dev
	$(PY) -m ruff check .
	$(PY) -m mypy
	$(PY) -m pytest -n 2 --dist loadfile -m "not slow and not browser"

lint: install-dev
	$(PY) -m ruff check .
	$(PY) -m mypy

bench: install
	$(PY) benchmarks/run_all.py
