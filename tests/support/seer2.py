"""One small real SEER build that several test modules read: SmolLM2 as extractor, generator
and judge on two nq-sample queries over their real MiniLM top 2 (the run of
tests/fixtures/nq_sample_minilm_top3.trec, which saves re-encoding the corpus), M = 4 samples
of at most 40 new tokens. The `seer2_build` fixture (tests/conftest.py)
builds it once per session; a module that writes beside it copies it first."""

from __future__ import annotations

from pathlib import Path

from support.nq2 import build_two_queries

#: the options of the build
SEER2_OPTIONS = ("--artifact", "seer", "--dataset", "nq-sample", "--limit", "2", "--k", "2",
                 "--samples", "4", "--max-new-tokens", "40")


def build_seer2(root: Path) -> Path:
    """Build into `root`: `top3.trec` (the run cut to the two queries), `calls` (the call
    cache) and `out/`; returns the artifact's version folder."""
    return build_two_queries(root, SEER2_OPTIONS) / "seer" / "nq-sample" / "smollm2-135m" / "v1"
