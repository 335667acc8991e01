"""Corpus encoding on an executor as retrieval reaches it: `labeler retrieve` has the executor
it names encode the corpus, which asks it only for the shards not on disk. The real bundled
MiniLM over the 40-passage FlashRAG fixture; Ray itself is in
tests/executors/test_ray_encode.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from labeler.cli import cli
from labeler.executors.local import LocalExecutor
from labeler.workflows.retrieve import retrieve_run

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
ARGS = {"dataset": f"jsonl:{FIXTURES / 'flashrag_nq_test.jsonl'}",
        "corpus": FIXTURES / "flashrag_corpus.jsonl", "k": 3, "encoder": "minilm"}


class Recording(LocalExecutor):
    """The local executor as if its workers ran elsewhere (its worker loads its own encoder),
    noting the shards it is asked to encode."""

    in_process = False

    def __init__(self) -> None:
        self.asked: list[list[int]] = []

    def map(self, worker, items, **options):
        self.asked.append([shard for shard, _ in items])
        return super().map(worker, items, **options)


def test_retrieval_encodes_only_missing_shards_with_the_executor_it_is_given(tmp_path):
    first, again = Recording(), Recording()
    retrieve_run(output=tmp_path / "first.trec", cache_dir=tmp_path, executor=first, **ARGS)
    retrieve_run(output=tmp_path / "again.trec", cache_dir=tmp_path, executor=again, **ARGS)
    assert first.asked == [[0]]  # 40 passages: one shard
    assert again.asked == []  # on disk: the executor is not asked at all
    assert (tmp_path / "again.trec").read_bytes() == (tmp_path / "first.trec").read_bytes()


@pytest.mark.parametrize(("args", "field"), [(("--workers", 2), "workers"),
                                             (("--ray-address", "head:6379"), "address")])
def test_retrieve_refuses_ray_options_for_the_local_executor_before_any_work(tmp_path, args,
                                                                            field):
    out = tmp_path / "run.trec"
    result = CliRunner().invoke(cli, ["retrieve", "--dataset", ARGS["dataset"], "--corpus",
                                      str(ARGS["corpus"]), "--out", str(out),
                                      "--cache-dir", str(tmp_path), *map(str, args)])
    assert result.exit_code == 1
    assert result.exception.line() == (f"field '{field}': does not apply to the local executor "
                                       "(use --executor ray)")
    assert not out.exists() and not (tmp_path / "embeddings").exists()
