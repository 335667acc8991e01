"""The bundled nq-sample and the source registry."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from labeler.errors import UnknownNameError
from labeler.metrics.answers import has_answer
from labeler.sources.registry import load_source

ROOT = Path(__file__).resolve().parents[2]
SHARED_DATA = ROOT.parent / "shared" / "data"


def test_nq_sample_queries_gold_and_corpus():
    source = load_source("nq-sample")
    assert len(source.queries) == 300 and len(source.corpus) == 4349
    assert len({p.pid for p in source.corpus.passages}) == 4349
    first = source.queries[0]
    assert first.question == "who got the first nobel prize in physics"
    assert first.answers == ["Wilhelm Conrad Röntgen"]
    for query in source.queries:  # one human gold chunk each, in the corpus, holding an answer
        (gold,) = query.gold
        assert source.corpus[gold.pid] == gold
        assert has_answer(gold.contents, query.answers), query.qid
    assert "11828866" in source.corpus  # DPR passages keep their psgs_w100 id
    assert len(source.revision) == 64 and source.revision == load_source("nq-sample").revision


def test_limit_takes_the_first_queries():
    assert [q.qid for q in load_source("nq-sample", limit=2).queries] == [
        "nq-open-dev-oracle-0", "nq-open-dev-oracle-1"]


def test_unknown_dataset_suggests_the_close_name():
    with pytest.raises(UnknownNameError) as error:
        load_source("nq-smaple")
    assert str(error.value) == (
        "unknown dataset 'nq-smaple'. Did you mean 'nq-sample'? Available: nq-sample, nq, tq, "
        "msmarco-fqa, hotpotqa, fever, 2wiki, nq-tevatron, tq-tevatron-distant, "
        "hotpotqa-distractor, nq-open-train, nq-open-test, tq-train, tq-test, hotpotqa-train, "
        "cisi-sample, wands, esci, "
        "jsonl:PATH, search:PATH")


@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="needs the shared data folder")
def test_the_script_reproduces_the_bundled_files(tmp_path):
    subprocess.run([sys.executable, str(ROOT / "scripts" / "make_nq_sample.py"),
                    "--data", str(SHARED_DATA), "--out", str(tmp_path)], check=True,
                   capture_output=True)
    bundled = ROOT / "labeler" / "data" / "nq_sample"
    for name in ("queries.jsonl.gz", "corpus.jsonl.gz"):
        assert (tmp_path / name).read_bytes() == (bundled / name).read_bytes(), name
