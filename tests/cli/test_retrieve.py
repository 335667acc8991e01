"""`labeler retrieve` through the CLI."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from labeler.cli import cli

FIXTURES = Path(__file__).parent.parent / "fixtures"
DATASET = f"jsonl:{FIXTURES / 'flashrag_nq_test.jsonl'}"


def _run(*args):
    return CliRunner().invoke(cli, ["retrieve", *map(str, args)])


def test_retrieve_writes_a_trec_run_and_a_summary(tmp_path):
    out = tmp_path / "run.trec"
    result = _run("--dataset", DATASET, "--corpus", FIXTURES / "flashrag_corpus.jsonl",
                  "--limit", 4, "--k", 3, "--encoder", "minilm", "--output", out)
    assert result.exit_code == 0, result.output
    lines = out.read_text().splitlines()
    assert len(lines) == 4 * 3
    qid, q0, _pid, rank, _score, tag = lines[0].split()
    assert (qid, q0, rank, tag) == ("test_0", "Q0", "1", "labeler-minilm")
    for text in ("queries", "sentence-transformers/all-MiniLM-L6-v2", "n/a (no gold)"):
        assert text in result.output
    assert result.output.endswith(f"run written to {out}\n")


def test_missing_corpus_fails_with_one_line_and_writes_nothing(tmp_path):
    out = tmp_path / "run.trec"
    result = _run("--dataset", DATASET, "--output", out)
    assert result.exit_code == 1
    assert result.exception.line() == (
        f"field 'corpus': dataset '{DATASET}' has no passage corpus to retrieve from "
        "(pass --corpus NAME (wiki-dpr, msmarco-passage, kilt-wikipedia) or FILE (FlashRAG "
        "corpus jsonl), or --run FILE)")
    assert not out.exists()


def test_unknown_dataset(tmp_path):
    result = _run("--dataset", "hotpot", "--output", tmp_path / "run.trec")
    assert result.exit_code == 1
    assert str(result.exception).startswith("unknown dataset 'hotpot'. Did you mean 'hotpotqa'?")
