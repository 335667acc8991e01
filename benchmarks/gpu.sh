#!/usr/bin/env bash
# The GPU check (docs/measurements.md, "GPU check"): hf-backend prefill and decode throughput on a
# Llama-3.1-8B-shaped model with random weights, as model-FLOPs utilisation against the bf16
# matmul rate measured in the same run, and where vllm imports the greedy decode again through
# a vllm engine of the same model, its tokens/s beside hf's (benchmarks/bench_gpu.py); then the
# vllm backend's contract tests where vllm imports (not in --smoke: make test-vllm runs them on
# the CPU, where they take minutes). Each stage has a time limit; a vllm part that does not run
# says why in one line.
#
#   bash benchmarks/gpu.sh            on a CUDA machine, with .whl/ (scripts/gpu_wheels.sh)
#   bash benchmarks/gpu.sh --smoke    the same code on this environment's CPU, tiny model
#
# Other arguments go to bench_gpu.py. With $OUT set, gpu_check.json and gpu_check.log land
# there. Without --smoke, wheels in .whl/ (the project's locked transformers, tokenizers and
# huggingface-hub; the GPU image has older transformers and tokenizers) are installed into
# /tmp/site first, so the check runs on the stack the project tests.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
BENCH_LIMIT=${BENCH_LIMIT:-480}  # seconds: the model, the matmuls, every workload, vllm's
VLLM_LIMIT=${VLLM_LIMIT:-120}    # seconds: the vllm contract tests

args=("$@")
smoke=0
for arg in "$@"; do if [[ $arg == --smoke ]]; then smoke=1; fi; done
site=""
if [[ $smoke == 0 ]] && compgen -G ".whl/*.whl" >/dev/null; then
  "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl
  site=/tmp/site
  if [[ -d .whl/tokenizer ]]; then args+=(--tokenizer .whl/tokenizer); fi
fi
export PYTHONPATH="$PWD${site:+:$site}${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
out=${OUT:-}
if [[ -n $out ]]; then mkdir -p "$out"; args+=(--out "$out"); fi

log() {  # stdin to stdout, and to $OUT/gpu_check.log when $OUT is set
  if [[ -n $out ]]; then tee -a "$out/gpu_check.log"; else cat; fi
}

status=0
timeout -k 10 "$BENCH_LIMIT" "$PYTHON" benchmarks/bench_gpu.py "${args[@]}" 2>&1 | log \
  || status=$?

if [[ $smoke == 1 ]]; then
  echo "vllm contract tests: skipped: --smoke (make test-vllm runs them on the CPU)" | log
elif why=$("$PYTHON" -c "import vllm" 2>&1); then
  timeout -k 10 "$VLLM_LIMIT" "$PYTHON" -m pytest -q -p no:cacheprovider \
    tests/llm/test_contract.py -k vllm 2>&1 | log || status=$?
else
  echo "vllm contract tests: skipped: import vllm failed ($(tail -n 1 <<<"$why"))" | log
fi
exit "$status"
