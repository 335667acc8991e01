"""SEER preference pairs: the arithmetic by hand, and a build with the bundled SmolLM2."""

from __future__ import annotations

import json
import math
import shutil

import pytest
from click.testing import CliRunner
from hub.conftest import hub  # noqa: F401  (the local Hub server fixture)
from support.loading import check_card_types, check_pushed
from support.seer2 import SEER2_OPTIONS

from labeler.cli import cli
from labeler.errors import InputError
from labeler.llm.call_store import cache_stats
from labeler.tasks.seer import SeerConfig, SeerTask, cov_weights, ranked_pairs
from labeler.workflows.validate import validate_path


def test_cov_weights_of_a_small_matrix_by_hand():
    # faithfulness: mean 0.5, σ 0.1 -> CoV 0.2; helpfulness: mean 0.6, σ 0.3 -> 0.5;
    # conciseness: mean 0.2, σ 0.2 -> 1.0 (population σ over the four extractions)
    scores = {"faithfulness": [0.4, 0.6, 0.4, 0.6], "helpfulness": [0.3, 0.9, 0.3, 0.9],
              "conciseness": [0.0, 0.4, 0.0, 0.4]}
    w = cov_weights(scores, tau=1.0)
    assert w["cov"] == pytest.approx({"faithfulness": 0.2, "helpfulness": 0.5,
                                      "conciseness": 1.0})
    z = math.exp(0.2) + math.exp(0.5) + math.exp(1.0)
    assert w["weights"] == pytest.approx({"faithfulness": math.exp(0.2) / z,
                                          "helpfulness": math.exp(0.5) / z,
                                          "conciseness": math.exp(1.0) / z})
    # a low temperature sharpens towards the most varied criterion, a high one flattens
    assert cov_weights(scores, tau=0.2)["weights"]["conciseness"] > w["weights"]["conciseness"]
    assert cov_weights(scores, tau=5.0)["weights"]["conciseness"] < w["weights"]["conciseness"]
    assert sum(cov_weights(scores, tau=0.5)["weights"].values()) == pytest.approx(1.0)


def test_lambda_of_three_ranked_items_by_hand():
    ranks, pairs = ranked_pairs([0.2, 0.8, 0.5])
    assert ranks == [3, 1, 2]
    # λ = s_w(1/r_w − 1/r_l) + s_l(1/r_l − 1/r_w) = (s_w − s_l)(1/r_w − 1/r_l)
    assert pairs == [(1, 2, pytest.approx(0.3 * 0.5)),
                     (1, 0, pytest.approx(0.6 * (1 - 1 / 3))),
                     (2, 0, pytest.approx(0.3 * (1 / 2 - 1 / 3)))]


def test_equal_scores_give_no_pair_and_keep_sample_order():
    ranks, pairs = ranked_pairs([0.5, 0.7, 0.5])
    assert ranks == [2, 1, 3]
    assert [(w, loser) for w, loser, _ in pairs] == [(1, 0), (1, 2)]  # no (0, 2): a tie


def test_derive_weights_ranks_and_pairs_a_record():
    task = SeerTask(SeerConfig(dataset="nq-sample"))
    record = {"qid": "q1", "question": "who wrote hamlet", "answers": ["Shakespeare"],
              "candidates": [{"pid": "p1", "title": "Hamlet", "text": "by Shakespeare",
                              "rank": 1}],
              "pairs": 0, "extractions": [
                  {"text": "a", "sample": 0, "tokens": 1,
                   "scores": {"faithfulness": 0.2, "helpfulness": 0.5, "conciseness": 0.1}},
                  {"text": "b", "sample": 2, "tokens": 1,
                   "scores": {"faithfulness": 0.9, "helpfulness": 0.7, "conciseness": 0.6}},
                  {"text": "c", "sample": 3, "tokens": 1,
                   "scores": {"faithfulness": 0.9, "helpfulness": 0.7, "conciseness": 0.6}}]}
    weights = {"faithfulness": 0.5, "helpfulness": 0.25, "conciseness": 0.25}
    tables = task.derive([record], {"weights": weights})
    ranked = tables["data"][0]["extractions"]
    assert [e["text"] for e in ranked] == ["b", "c", "a"]  # best first; the tie keeps order
    assert ranked[0]["scores"]["weighted"] == pytest.approx(0.45 + 0.175 + 0.15)
    assert ranked[2]["scores"]["weighted"] == pytest.approx(0.1 + 0.125 + 0.025)
    pairs = tables["pairs"]
    assert tables["data"][0]["pairs"] == len(pairs) == 2  # b>a, c>a; b = c gives none
    assert [(p["chosen"][0]["content"], p["rejected"][0]["content"]) for p in pairs] == [
        ("b", "a"), ("c", "a")]
    assert pairs[0]["lambda_weight"] == pytest.approx((0.775 - 0.25) * (1 - 1 / 3))
    assert pairs[0]["prompt"][-1]["role"] == "user"
    assert "[1] Hamlet by Shakespeare" in pairs[0]["prompt"][-1]["content"]


def test_config_refuses_settings_seer_cannot_use():
    with pytest.raises(InputError, match="tau must be positive"):
        SeerConfig(dataset="nq-sample", tau=0)
    with pytest.raises(InputError, match="use --pool rp"):
        SeerConfig(dataset="nq-sample", pool="hgp")
    with pytest.raises(InputError, match="weights must be one of cov, uniform, got 'equal'"):
        SeerConfig(dataset="nq-sample", weights="equal")
    assert SeerConfig(dataset="nq-sample").k == 5


@pytest.mark.slow
def test_seer_build_on_two_nq_sample_queries(seer2_build):
    """The shared build (support/seer2.py: SmolLM2 as extractor, generator and judge, M = 4):
    schema-valid tables whose pairs prefer the higher weighted score."""
    folder = seer2_build
    assert validate_path(folder) == []
    manifest = json.loads((folder / "manifest.json").read_text())
    weights = manifest["settled"]["weights"]
    assert set(weights) == {"faithfulness", "helpfulness", "conciseness"}
    assert sum(weights.values()) == pytest.approx(1.0)
    records = [json.loads(line) for line in (folder / "data-00000.jsonl").open()]
    assert [r["qid"] for r in records] and all(r["samples"] == 4 for r in records)
    assert manifest["stats"]["duplicates"] == sum(r["duplicates"] for r in records)
    pairs = [json.loads(line) for line in (folder / "pairs-00000.jsonl").open()]
    assert manifest["counts"]["pairs"] == len(pairs) == sum(r["pairs"] for r in records)
    for pair in pairs:
        assert pair["chosen_scores"]["weighted"] > pair["rejected_scores"]["weighted"]
        assert pair["lambda_weight"] >= 0 and pair["chosen_rank"] < pair["rejected_rank"]


def test_a_seer_rebuild_is_served_from_the_call_cache(seer2_build, tmp_path, loads):
    root = seer2_build.parents[4]  # top3.trec, calls, out/seer/nq-sample/smollm2-135m/v1
    cache = tmp_path / "calls"
    shutil.copytree(root / "calls", cache)
    computed = cache_stats(cache).misses
    again = CliRunner().invoke(cli, ["build", "--llm", "smollm2-135m", *SEER2_OPTIONS, "--run",
                                     str(root / "top3.trec"), "--cache-dir", str(cache),
                                     "--out", str(tmp_path / "again")])
    assert again.exit_code == 0, again.output
    assert cache_stats(cache).misses == computed  # every extraction and score from the cache
    rerun = tmp_path / "again" / "seer" / "nq-sample" / "smollm2-135m" / "v1"
    assert (rerun / "pairs-00000.jsonl").read_bytes() == (
        seer2_build / "pairs-00000.jsonl").read_bytes()


def test_best_extractions_score_as_built_and_every_table_loads(seer2_build, tmp_path, request):
    """Each query's best extraction, scored as a submission by the same experts and weights,
    gets the artifact's own scores; the pairs load with `datasets` as TRL's
    prompt/chosen/rejected, and every table with the types its card states, from the folder
    and pushed to the Hub."""
    from datasets import load_dataset

    from labeler.llm.config import LLMConfig
    from labeler.scoring.score import score

    folder, cache = seer2_build, tmp_path / "calls"
    shutil.copytree(folder.parents[4] / "calls", cache)
    records = [json.loads(line) for line in (folder / "data-00000.jsonl").open()]
    kept = [r for r in records if r["extractions"]]
    evidence = tmp_path / "evidence.jsonl"
    evidence.write_text("".join(json.dumps({"qid": r["qid"], "evidence": r["extractions"][0][
        "text"]}) + "\n" for r in kept))
    report = score(evidence, folder, llm=LLMConfig("smollm2-135m"), cache_dir=cache)
    for r in kept:
        best = r["extractions"][0]["scores"]
        for name in ("faithfulness", "helpfulness", "conciseness", "weighted"):
            assert report.per_query[name][report.qids.index(r["qid"])] == pytest.approx(
                best[name], abs=1e-6), name

    pairs = (folder / "pairs-00000.jsonl").read_text().splitlines()
    loaded = load_dataset("json", data_files=str(folder / "pairs-*.jsonl"), split="train")
    assert {"prompt", "chosen", "rejected", "lambda_weight"} <= set(loaded.column_names)
    assert len(loaded) == len(pairs)
    table = load_dataset(str(folder), "pairs", split="train")  # the card's configs
    assert len(table) == len(pairs)
    check_card_types(folder, tmp_path / "datasets")
    request.getfixturevalue("hub")  # the server, once the build is done
    check_pushed(folder, "lab/seer-labels", tmp_path / "hub-datasets")


def test_queries_without_answer_or_passages_are_skipped_and_counted():
    """Scripted generator (unit test of the bookkeeping): every sample alike, so three of the
    four are duplicates; the two skipped queries make no LLM request."""
    from support.scripted import ScriptedBackend

    from labeler.retrieval import Candidate
    from labeler.sources.registry import load_source
    from labeler.tasks.base import Shard

    source = load_source("nq-sample", limit=3)
    q1, q2, q3 = source.queries
    q2 = type(q2)(q2.qid, q2.question, [])  # no gold answer
    passages = source.corpus.passages[:2]
    shard = Shard(0, (q1, q2, q3), {
        q1.qid: [Candidate(p, "retrieved", i) for i, p in enumerate(passages, 1)],
        q2.qid: [Candidate(passages[0], "retrieved", 1)], q3.qid: []})
    backend = ScriptedBackend(answer=lambda text: "The passage says so.",
                              loglik=lambda context, continuation: -1.0,
                              probs=lambda text, choices: {" yes": 0.6, " no": 0.2})
    task = SeerTask(SeerConfig(dataset="nq-sample", samples=4))
    records = task.label(task.calls(backend), shard)
    assert [r["skipped"] for r in records] == [None, "no gold answer", "no passages"]
    assert records[0]["samples"] == 4 and records[0]["duplicates"] == 3
    assert records[0]["blank"] == 0
    scores = records[0]["extractions"][0]["scores"]
    assert scores["faithfulness"] == pytest.approx(0.75)
    assert scores["helpfulness"] == pytest.approx(0.5)  # the same log-likelihood either way
    extract = [r for batch in backend.batches("generate") for r in batch
               if "Extract from the passages" in backend.render(r)]
    assert len(extract) == 1  # only q1 was asked for extractions
    stats = SeerTask.statistics(task.derive(records, task.settle(records))["data"])
    assert stats["skipped_queries"] == 2
    assert stats["skipped_no_answer"] == stats["skipped_no_passages"] == 1
    assert stats["duplicates"] == 3 and stats["extractions"] == 1 and stats["pairs"] == 0
    assert stats["blank"] == 0
