"""One small real build that several test modules read: SmolLM2's utility artifact of two
nq-sample queries over their real top 3 (MiniLM over nq-sample's corpus, from
tests/fixtures/nq_sample_minilm_top3.trec, which saves re-encoding the corpus), answers capped
at 32 new tokens. The `nq2_build` fixture (tests/conftest.py) builds it once per session; each
module copies it, so none sees what another asked or wrote.

A second LLM's artifact of the same pools costs no model: `scripted_utility` labels them with
the scripted reader. It knows the Nobel question closed-book (so it has no gold utilitarian
passage there) and otherwise copies the first passage it is shown (so its gold utilitarian
passages are the candidates that hold a gold answer)."""

from __future__ import annotations

import shutil
from pathlib import Path

from click.testing import CliRunner

from labeler.artifacts import write_artifact
from labeler.cli import cli
from labeler.tasks.base import make_shards
from labeler.tasks.utility import UtilityConfig, UtilityTask
from labeler.workflows.steps import config_pools, config_source
from support.scripted import ScriptedBackend

TOP3_RUN = Path(__file__).parents[1] / "fixtures" / "nq_sample_minilm_top3.trec"
#: the options of the build
NQ2_OPTIONS = ("--dataset", "nq-sample", "--limit", "2", "--k", "3", "--max-new-tokens", "32")


def build_nq2(root: Path) -> Path:
    """Build into `root`: `top3.trec` (the run cut to the two queries), `calls` (the call
    cache) and `out/`; returns `root`."""
    build_two_queries(root, NQ2_OPTIONS)
    return root


def build_two_queries(root: Path, options: tuple[str, ...]) -> Path:
    """`labeler build --llm smollm2-135m` with `options` on the two queries' real top 3:
    into `root`, the run cut to them (`top3.trec`), the call cache (`calls`) and `out/`;
    returns `out/`."""
    run = cut_run(root)
    result = CliRunner().invoke(cli, ["build", "--llm", "smollm2-135m", *options,
                                      "--run", str(run), "--cache-dir", str(root / "calls"),
                                      "--out", str(root / "out")])
    assert result.exit_code == 0, result.output
    return root / "out"


def cut_run(root: Path) -> Path:
    """The real top-3 run cut to the two queries, as `root/top3.trec`."""
    run = root / "top3.trec"
    run.write_text("".join(line for line in TOP3_RUN.read_text().splitlines(keepends=True)
                           if not line.startswith("nq-open-dev-oracle-2 ")))
    return run


def copy_nq2_build(build: Path, root: Path) -> tuple[Path, Path, Path]:
    """The build's call cache and artifacts copied into `root`; returns (the build's run,
    root's call cache, root's artifact folder). The run stays where the build read it: the
    artifact's manifest names that path."""
    shutil.copytree(build / "calls", root / "calls")
    shutil.copytree(build / "out", root / "out")
    return build / "top3.trec", root / "calls", root / "out/utility/nq-sample/smollm2-135m/v1"


def scripted_utility(run: Path, out: Path) -> tuple[Path, ScriptedBackend]:
    """The nq2 build's pools (its `run`) labelled by the scripted reader as `labeler build`
    would, written under `out` as LLM `scripted`; (the version folder, the backend)."""
    config = UtilityConfig(dataset="nq-sample", limit=2, k=3, run=str(run), max_new_tokens=32)
    source = config_source(config)
    pools = config_pools(source, config)
    task, scripted = UtilityTask(config), ScriptedBackend(answer=_reader)
    records = [r for shard in make_shards(source.queries, pools, 8)
               for r in task.label(task.calls(scripted), shard)]
    folder = write_artifact(records, out=out, kind=UtilityTask, dataset="nq-sample",
                            llm="scripted", manifest={
                                "model_id": "scripted", "model_revision": "0",
                                **source.describe(), **task.manifest(), **pools.describe(),
                                "llm_config": {"model": "scripted", "backend": "scripted"}})
    return folder, scripted


def _reader(text: str) -> str:
    """Closed-book: right on the Nobel question only; with evidence: the first passage's text,
    verbatim."""
    if not text.startswith("Information: \n"):
        return " Wilhelm Conrad Röntgen" if "nobel prize" in text else " I don't know"
    return " " + text.removeprefix("Information: \n").split("\n")[0]
