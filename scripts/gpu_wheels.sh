#!/usr/bin/env bash
# What benchmarks/gpu.sh needs on the GPU machine and it lacks, into .whl/ (ignored through
# .git/info/exclude, never committed): the project's transformers, tokenizers and
# huggingface-hub, at the versions installed here, as Python 3.12 x86-64 wheels (the machine
# has older ones, transformers 5.17 and tokenizers 0.23.2, and no network: with these the
# check runs on the project's locked stack), and the bundled SmolLM2 chat tokenizer
# (tokenizer.json and its template, no weights) in .whl/tokenizer/.
# Then: device run `bash benchmarks/gpu.sh` with carry [".whl"].
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
LIMIT_MIB=32  # what travels may total 64 MiB with the working tree

exclude=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")"
grep -qxF '/.whl/' "$exclude" 2>/dev/null || echo '/.whl/' >>"$exclude"
rm -rf .whl
pins=$("$PYTHON" -c 'from importlib.metadata import version
print(*(f"{n}=={version(n)}" for n in ("transformers", "tokenizers", "huggingface-hub")))')
# shellcheck disable=SC2086  # $pins is three words on purpose
"$PYTHON" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  --platform manylinux1_x86_64 -d .whl $pins
PYTHONPATH=$PWD HF_HUB_OFFLINE=1 "$PYTHON" benchmarks/bench_gpu.py --save-tokenizer .whl/tokenizer
ls -l .whl .whl/tokenizer
size=$(du -sm .whl | cut -f1)
echo ".whl: $size MiB ($pins and the chat tokenizer)"
if ((size > LIMIT_MIB)); then
  echo "error: .whl is over $LIMIT_MIB MiB" >&2
  exit 1
fi
