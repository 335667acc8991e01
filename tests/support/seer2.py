"""One small real SEER build that several test modules read: SmolLM2 as extractor, generator
and judge on two nq-sample queries over their real MiniLM top 2 (the run of
tests/fixtures/nq_sample_minilm_top3.trec, which saves re-encoding the corpus), M = 4 samples
of at most 40 new tokens: 12 preference pairs. The `seer2_build` fixture (tests/conftest.py)
builds it once per session; a module that writes beside it copies it first."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from labeler.cli import cli
from support.nq2 import TOP3_RUN

#: the options of the build
SEER2_OPTIONS = ("--artifact", "seer", "--dataset", "nq-sample", "--limit", "2", "--k", "2",
                 "--samples", "4", "--max-new-tokens", "40")


def build_seer2(root: Path) -> Path:
    """Build into `root`: `top3.trec` (the run cut to the two queries), `calls` (the call
    cache) and `out/`; returns the artifact's version folder."""
    run = root / "top3.trec"
    run.write_text("".join(line for line in TOP3_RUN.read_text().splitlines(keepends=True)
                           if not line.startswith("nq-open-dev-oracle-2 ")))
    result = CliRunner().invoke(cli, ["build", "--llm", "smollm2-135m", *SEER2_OPTIONS,
                                      "--run", str(run), "--cache-dir", str(root / "calls"),
                                      "--out", str(root / "out")])
    assert result.exit_code == 0, result.output
    return root / "out" / "seer" / "nq-sample" / "smollm2-135m" / "v1"
