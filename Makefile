# Two commands do all the set-up on a fresh machine (Python 3.11+):
#   make app    installs the dependencies and serves the dashboard at http://127.0.0.1:8501 (open it in a browser);
#               this machine only, unless asked: make app HOST=0.0.0.0 (or PORT=8502)
#   make test   installs the dependencies (and Chromium where possible) and runs every test
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
PORT   ?= 8501
HOST   ?= 127.0.0.1

.PHONY: app test install install-dev browser lint bench

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

install: $(PY)
	$(PY) -m pip install -q -r requirements.txt

install-dev: $(PY)
	$(PY) -m pip install -q -r requirements-dev.txt

# Debian's Chromium for the real-browser tests (never `playwright install`).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "Chromium missing: 'sudo apt-get install chromium' to run the browser tests"; fi; }

app: install
	@echo "Dashboard: http://$(HOST):$(PORT) (listening on $(HOST) only; make app HOST=0.0.0.0 to open it to the network)"
	$(PY) -m streamlit run app.py --server.port $(PORT) --server.address $(HOST)

test: install-dev browser
	$(PY) -m ruff check .
	$(PY) -m mypy
	$(PY) -m pytest

lint: install-dev
	$(PY) -m ruff check .
	$(PY) -m mypy

bench: install
	$(PY) benchmarks/run_all.py
