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
                  "--limit", 4, "--k", 3, "--encoder", "minilm", "--out", out)
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
    result = _run("--dataset", DATASET, "--out", out)
    assert result.exit_code == 1
    assert result.exception.line() == (
        f"field 'corpus': dataset '{DATASET}' has no passage corpus to retrieve from "
        "(pass --corpus NAME (kilt-w100, wiki-dpr, msmarco-passage, kilt-wikipedia) or FILE "
        "(FlashRAG corpus jsonl), or --run FILE)")
    assert not out.exists()


def test_unknown_dataset(tmp_path):
    result = _run("--dataset", "hotpot", "--out", tmp_path / "run.trec")
    assert result.exit_code == 2  # a usage error, before any data or model is read
    assert ("Invalid value for '--dataset': unknown dataset 'hotpot'. Did you mean 'hotpotqa'?"
            in " ".join(result.output.split()))


def test_an_ann_index_reports_its_recall_against_exact_search(tmp_path):
    out = tmp_path / "run.trec"
    result = _run("--dataset", DATASET, "--corpus", FIXTURES / "flashrag_corpus.jsonl",
                  "--k", 3, "--encoder", "minilm", "--index", "ivf:nlist=4,nprobe=2",
                  "--out", out, "--cache-dir", tmp_path / "cache")
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert ("warning: ivf-nlist4 search (nlist=4, nprobe=2, refine=1): recall@3 against exact "
            "search ") in said
    assert "on 17 of the 17 queries" in said
    assert "│ index │ ivf (nlist=4, nprobe=2, refine=1) │" in said
    assert "recall@3 vs exact" in result.output and "(17 queries)" in result.output
    assert len(out.read_text().splitlines()) == 17 * 3
    assert sorted(p.name for p in (tmp_path / "cache" / "embeddings").glob("*/*/ivf-*")) == [
        "ivf-nlist4.index", "ivf-nlist4.ivfdata", "ivf-nlist4.json", "ivf-nlist4.seen.json"]


def test_a_bad_index_fails_in_one_line_before_any_encoding(tmp_path):
    out = tmp_path / "run.trec"
    result = _run("--dataset", DATASET, "--corpus", FIXTURES / "flashrag_corpus.jsonl",
                  "--index", "hnsw:efsearch=fast", "--out", out)
    assert result.exit_code == 1
    assert result.exception.line() == (
        "field 'index': efSearch must be a positive integer, got 'fast' (use flat, "
        "ivf[:nlist=N,nprobe=N,pq=M,refine=R] or hnsw[:M=N,efConstruction=N,efSearch=N])")
    assert not out.exists()


def test_build_and_judge_refuse_an_index_no_dense_retrieval_uses_before_any_work(tmp_path):
    out = tmp_path / "out"
    for command, args, line in [
        ("build", ["--artifact", "rubric", "--dataset", "cisi-sample", "--index", "hnsw"],
         "field 'index': --index is for dense retrieval, and BM25 ranks (leave --index unset)"),
        ("build", ["--dataset", "nq-sample", "--index", "ivf:nlist=0", "--out", out],
         ("field 'index': nlist must be a positive integer, got '0' (use flat, "
         "ivf[:nlist=N,nprobe=N,pq=M,refine=R] or hnsw[:M=N,efConstruction=N,efSearch=N])")),
        ("judge", ["--dataset", "nq-sample", "--method", "pvs", "--pool", "hgp", "--index",
                   "flat", "--out", tmp_path / "judged.jsonl"],
         ("field 'index': --index is for dense retrieval, and the pools are the human gold "
         "(leave --index unset)")),
    ]:
        result = CliRunner().invoke(cli, [command, *map(str, args), "--llm", "smollm2-135m"])
        assert result.exit_code == 1, result.output
        assert result.exception.line() == line
    assert not out.exists() and not (tmp_path / "judged.jsonl").exists()


def test_bm25_retrieval_takes_its_fields_stemmer_k1_and_b(tmp_path):
    out = tmp_path / "run.trec"
    result = _run("--dataset", DATASET, "--corpus", FIXTURES / "flashrag_corpus.jsonl",
                  "--limit", 2, "--k", 3, "--encoder", "bm25", "--bm25-fields", "title^3,text",
                  "--bm25-stemmer", "english", "--bm25-k1", 0.9, "--out", out)
    assert result.exit_code == 0, result.output
    for text in ("k1=0.9 b=0.75 fields=title^3,text^1", "stemmer=english"):
        assert text in result.output
    assert "│ index" not in result.output  # no dense index to describe
    assert out.read_text().splitlines()[0].endswith("labeler-bm25")
    refused = _run("--dataset", DATASET, "--corpus", FIXTURES / "flashrag_corpus.jsonl",
                   "--encoder", "minilm", "--bm25-stemmer", "english", "--out", out)
    assert refused.exit_code == 1
    assert "--bm25-stemmer set BM25 retrieval" in refused.exception.line()


def test_the_stored_corpus_and_bm25_index_go_under_cache_dir(tmp_path, monkeypatch):
    """A user who points --cache-dir at a big disk fills it, not $LABELER_CACHE_DIR or
    ~/.cache/labeler, with the corpus stored on disk (issue 49: corpora always went there)."""
    default = tmp_path / "default-cache"
    monkeypatch.setenv("LABELER_CACHE_DIR", str(default))
    cache = tmp_path / "big-disk"
    result = _run("--dataset", DATASET, "--corpus", FIXTURES / "flashrag_corpus.jsonl",
                  "--limit", 2, "--k", 3, "--encoder", "bm25", "--cache-dir", cache,
                  "--out", tmp_path / "run.trec")
    assert result.exit_code == 0, result.output
    assert len(list((cache / "corpora").glob("*/passages.arrow"))) == 1
    assert not (default / "corpora").exists()
