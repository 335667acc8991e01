"""Start-up pays only for the command: `labeler --help` lists the commands without importing
them, and no command's help imports a model or data library (a module it reads for its help,
such as a task's for `build --help`, imports numpy when first used)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from labeler.cli import COMMANDS
from labeler.lazy import load_entry

MODEL_LIBRARIES = ("torch", "transformers", "datasets", "vllm")
#: what no help imports either
DATA_LIBRARIES = ("numpy", "pyarrow", "polars", "huggingface_hub")


def _imported(*args: str) -> set[str]:
    """The top-level modules loaded by `labeler ARGS --help` in a fresh Python."""
    code = ("import sys; sys.argv = ['labeler', *sys.argv[1:], '--help']\n"
            "from labeler.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print(' '.join(sorted({m.partition('.')[0] for m in sys.modules})), "
            "file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          check=True)
    return set(done.stderr.split())


def test_the_listed_summaries_are_the_commands_own():
    for name, (target, summary) in COMMANDS.items():
        assert load_entry(target).get_short_help_str(limit=1000) == summary, name


def test_labeler_help_imports_no_command_and_no_heavy_library():
    loaded = _imported()
    assert loaded.isdisjoint(MODEL_LIBRARIES + DATA_LIBRARIES), loaded


@pytest.mark.parametrize("command", ["build", "judge", "score", "validate", "retrieve",
                                     "reproduce", "train-extractor", "compare", "view"])
def test_a_commands_help_imports_no_model_or_data_library(command):
    loaded = _imported(command)
    heavy = set(MODEL_LIBRARIES + DATA_LIBRARIES)
    assert loaded.isdisjoint(heavy), loaded & heavy
