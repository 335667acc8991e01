"""`labeler reproduce utility-paper` end to end with the bundled SmolLM2 on two nq-sample
queries (their real top 3, answers capped at 32 tokens; the session's nq2 build's call cache
serves its rp labels): every table and figure is written, each number equals the one the
separate commands (`build`, `score`, `score --rag`, `compare`) give on the same folders, and
a second run runs no step and writes the same numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.nq2 import copy_nq2_build

from labeler.artifacts.reader import load_artifact
from labeler.cli import cli
from labeler.report.figures import FIGURES
from labeler.report.tables import TITLES

OPTIONS = ("reproduce", "utility-paper", "--dataset", "nq-sample", "--llm", "smollm2-135m",
           "--limit", "2", "--k", "3", "--max-new-tokens", "32")


@pytest.fixture(scope="module")
def reproduced(tmp_path_factory, nq2_build, smollm):
    """(the work folder, the report folder, the CLI options, the second run's output)."""
    import labeler.llm
    from labeler.llm.cache import CachedBackend

    root = tmp_path_factory.mktemp("reproduce")
    run, calls, _ = copy_nq2_build(nq2_build, root)
    options = [*OPTIONS, "--run", str(run), "--out", str(root / "out"),
               "--cache-dir", str(calls)]
    with pytest.MonkeyPatch.context() as patch:  # the session's model, behind the call cache
        patch.setattr(labeler.llm, "load_backend",
                      lambda name, **o: CachedBackend(smollm, cache_dir=o.get("cache_dir")))
        first = CliRunner().invoke(cli, options)
        assert first.exit_code == 0, first.output
        again = CliRunner().invoke(cli, options)
        assert again.exit_code == 0, again.output
    report = Path(first.stdout.strip().splitlines()[-1])
    return root / "out" / "utility-paper", report, options, again.stdout


def test_every_table_and_figure_is_written(reproduced):
    _, report, _, _ = reproduced
    assert report.parent.parent == report.parents[1] and report.name == "v1"
    for item in TITLES:
        assert (report / f"{item}.md").read_text().startswith(f"## {TITLES[item][:8]}")
    for item in FIGURES:
        assert (report / f"{item}.png").read_bytes().startswith(b"\x89PNG")
    records = load_artifact(report).records
    assert {r["item"] for r in records} == {*TITLES, *FIGURES}
    assert CliRunner().invoke(cli, ["validate", str(report)]).exit_code == 0


def test_each_number_equals_what_the_separate_commands_give(reproduced, smollm, monkeypatch):
    import labeler.llm
    from labeler.llm.cache import CachedBackend

    monkeypatch.setattr(labeler.llm, "load_backend",  # perplexity: the session's model
                        lambda name, **o: CachedBackend(smollm, cache_dir=o.get("cache_dir")))
    work, report, _, _ = reproduced
    expected = _Separate(work)
    records = [r for r in load_artifact(report).records if r["ours"] is not None]
    assert len(records) > 25
    for r in records:
        where, what = r["source"].split(" ", 1)
        assert r["ours"] == pytest.approx(expected.value(where, what, r), abs=1e-9), r


def test_a_second_run_runs_no_step_and_writes_the_same_numbers(reproduced):
    _, report, options, again = reproduced
    assert "report: 0 steps run, 13 done before" in again
    second = report.with_name("v2")
    assert [r["ours"] for r in load_artifact(second).records] == \
        [r["ours"] for r in load_artifact(report).records]
    plan = CliRunner().invoke(cli, [*options, "--dry-run"])
    assert plan.exit_code == 0, plan.output
    assert "1 of 1 LLMs done" in plan.stdout and "judge lvr" in plan.stdout


class _Separate:
    """The numbers of the separate commands on the run's folders."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.rp = work / "rp" / "utility" / "nq-sample" / "smollm2-135m" / "v1"
        self.known = {r["qid"]: r["known"] for r in load_artifact(self.rp).records}

    def value(self, where: str, what: str, record: dict) -> float:
        path = self.work / where
        if path.suffix == ".jsonl":  # a submission: `labeler score`
            return self._score(path, what, record)
        if what.startswith("perplexity."):  # `labeler analyze perplexity`'s table
            return self._perplexity(path, what.split(".", 1)[1], record)
        manifest = load_artifact(path).manifest
        if manifest["artifact"] == "compare":  # `labeler compare`'s tables
            row = next(row for row in manifest["stats"][what] if row["reader"] == record["llm"])
            return row[record["column"]] * (1 if record["unit"] == "count" else 100)
        if what.startswith("rag."):  # the utility records' answers, split by known
            part = what.split(".")[1]
            rows = load_artifact(path).records
            values = [r["rag"][part]["correct"] for r in rows if r["rag"][part] is not None
                      and r["known"] is ((record["query_type"] or record["column"]) == "known")]
            return 100 * sum(values) / len(values)
        stat = manifest["stats"][what]  # what `labeler build` prints
        return stat if record["unit"] == "count" else 100 * stat

    def _score(self, path: Path, what: str, record: dict) -> float:
        args = ["score", str(path), "--against", str(self.rp), "--k", "5", "--json"]
        if what.startswith("--rag"):
            rows = path.parent / "rows.jsonl"
            result = CliRunner().invoke(cli, [*args, "--rag", "--per-query", str(rows)])
            assert result.exit_code == 0, result.output
            mine = [json.loads(line) for line in rows.read_text().splitlines()]
            values = [row["rag_accuracy"] for row in mine
                      if self.known[row["qid"]] is (record["query_type"] == "known")]
            return 100 * sum(values) / len(values)
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 0, result.output
        return 100 * json.loads(result.stdout)["metrics"][what]

    def _perplexity(self, path: Path, column: str, record: dict) -> float:
        import polars as pl

        out = path.parent / "ppl"
        result = CliRunner().invoke(cli, ["analyze", "perplexity", str(path), "--out", str(out)])
        assert result.exit_code == 0, result.output
        rows = pl.read_csv(out / "perplexity.csv").to_dicts()
        return next(r[column] for r in rows if record["column"].startswith(r["group"] + ","))
