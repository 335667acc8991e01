"""The Python API: `labeler`'s names resolve to the functions the commands call, each imported
only when first asked for."""

from __future__ import annotations

import subprocess
import sys

import labeler
from labeler.artifacts.reader import load_artifact
from labeler.formats import Qrels, Run
from labeler.scoring.score import score
from labeler.workflows.build import build
from labeler.workflows.compare import compare
from labeler.workflows.judge import judge


def test_each_exported_name_is_the_function_its_command_calls():
    assert (labeler.build, labeler.judge, labeler.compare, labeler.score) == (
        build, judge, compare, score)
    assert (labeler.load_artifact, labeler.Run, labeler.Qrels) == (load_artifact, Run, Qrels)
    assert set(labeler.__all__) <= set(dir(labeler))


def test_importing_labeler_imports_none_of_them():
    code = ("import sys, labeler; print(sorted(m for m in sys.modules "
            "if m.startswith('labeler.')))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True).stdout
    assert loaded.strip() == "['labeler.lazy']"


def test_an_unknown_name_is_an_attribute_error():
    try:
        labeler.nope  # noqa: B018
    except AttributeError as error:
        assert "nope" in str(error)
    else:
        raise AssertionError("labeler.nope resolved")
