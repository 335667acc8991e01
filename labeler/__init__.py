"""labeler: turn LLM behaviour into versioned, publishable RAG label datasets.

The Python API mirrors the commands; each name is imported on first use, so `import labeler`
stays cheap::

    from labeler import build, load_artifact, score
    from labeler.llm.config import LLMConfig
    from labeler.tasks.utility import UtilityConfig

    config = UtilityConfig(dataset="nq-sample", limit=10, k=5, encoder="minilm")
    [built] = build("utility", config, [LLMConfig("smollm2-135m")])
    artifact = load_artifact(built.path)          # its records, manifest and card
    dataset = artifact.to_dataset()               # a datasets.Dataset, typed as the card says
    report = score("selection.jsonl", against=built.path)

`build`, `judge` and `compare` are in `labeler.workflows`, `score` in `labeler.scoring`,
`load_artifact` in `labeler.artifacts`, `Run` and `Qrels` (TREC files) in `labeler.formats`.
"""

from __future__ import annotations

from functools import cache

from labeler.lazy import lazy_exports

#: public name -> the module that defines it
_EXPORTS = {
    "build": "labeler.workflows.build",
    "judge": "labeler.workflows.judge",
    "compare": "labeler.workflows.compare",
    "score": "labeler.scoring.score",
    "load_artifact": "labeler.artifacts.reader",
    "Run": "labeler.formats",
    "Qrels": "labeler.formats",
}

__all__ = ["Qrels", "Run", "__version__", "build", "compare", "judge", "load_artifact", "score"]
_export, _exported = lazy_exports(__name__, _EXPORTS)


def __getattr__(name: str):
    # `__version__` is read from the installed metadata on first use: importlib.metadata costs
    # more to import than `labeler score` spends on a ranking's metrics
    if name == "__version__":
        return _version()
    return _export(name)


def __dir__() -> list[str]:
    return sorted({*_exported(), "__version__"})


@cache
def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("labeler")
    except PackageNotFoundError:  # running from a source tree that is not installed
        return "0.0.0"
