"""Fig. 5's perplexity analysis (labeler.workflows.perplexity) on SmolLM2's two-query nq2
utility artifact: each perplexity checked against transformers' own loss on the same tokens,
the groups, the figure, the call cache, the CLI, a vllm-built artifact read on hf."""

from __future__ import annotations

import json
import math

import polars as pl
import pytest
import torch
from click.testing import CliRunner
from support.nq2 import copy_nq2_build

from labeler.artifacts import load_artifact
from labeler.cli import cli
from labeler.errors import InputError
from labeler.llm.call_store import cache_stats
from labeler.workflows.perplexity import GROUPS, perplexity


@pytest.fixture(scope="module")
def setup(tmp_path_factory, nq2_build):
    """(the call cache, the utility artifact) copied from the nq2 build."""
    _, calls, artifact = copy_nq2_build(nq2_build, tmp_path_factory.mktemp("perplexity"))
    return calls, artifact


def _transformers_ppl(backend, text: str) -> float:
    """exp of the model's own mean token loss over BOS + the text's tokens."""
    ids = [backend.tokenizer.bos_token_id] + backend.tokenizer(
        text, add_special_tokens=False)["input_ids"]
    with torch.inference_mode():
        loss = backend.model(input_ids=torch.tensor([ids]), labels=torch.tensor([ids])).loss
    return math.exp(loss.item())


def test_the_groups_perplexities_are_transformers_own(setup, smollm):
    calls, artifact = setup
    result = perplexity([artifact], cache_dir=calls)
    table = result.table
    assert table.columns == ["dataset", "llm", "group", "passages", "ppl_passage",
                             "ppl_query_passage"]
    records = load_artifact(artifact).records
    gold = [(r["question"], c) for r in records for c in r["candidates"] if c["gold"]]
    # both queries' one human gold passage is gold utilitarian for SmolLM2 (the nq2 build)
    assert [c["utility"] for _, c in gold] == [1, 1]
    assert table["group"].to_list() == list(GROUPS)
    assert table["passages"].to_list() == [2, 0]
    texts = [f"{c['title']} {c['text']}" for _, c in gold]
    alone = [_transformers_ppl(smollm, t) for t in texts]
    joint = [_transformers_ppl(smollm, f"{q}\n{t}") for (q, _), t in zip(gold, texts)]
    both = table.row(0, named=True)
    assert both["ppl_passage"] == pytest.approx(sum(alone) / 2, rel=1e-5)
    assert both["ppl_query_passage"] == pytest.approx(sum(joint) / 2, rel=1e-5)
    assert 1 < both["ppl_query_passage"] < both["ppl_passage"] < 100
    assert table.row(1, named=True)["ppl_passage"] is None  # no passage in HGP \ GUP
    assert result.figure.startswith(b"\x89PNG\r\n\x1a\n")


def test_the_cli_writes_the_figure_and_table_from_the_cache(setup, tmp_path):
    calls, artifact = setup
    perplexity([artifact], cache_dir=calls)  # every text cached
    misses = cache_stats(calls).misses
    result = CliRunner().invoke(cli, ["analyze", "perplexity", str(artifact), "--out",
                                      str(tmp_path), "--cache-dir", str(calls)])
    assert result.exit_code == 0, result.output
    assert cache_stats(calls).misses == misses  # nothing asked again
    assert "HGP ∩ GUP" in result.stdout and "smollm2-135m" in result.stdout
    saved = pl.read_csv(tmp_path / "perplexity.csv")
    assert saved["passages"].to_list() == [2, 0]
    assert (tmp_path / "perplexity.png").read_bytes().startswith(b"\x89PNG")


def test_a_vllm_artifact_is_read_on_hf_and_another_kind_refused(setup, smollm, tmp_path):
    calls, artifact = setup
    folder = tmp_path / "v1"
    folder.mkdir()
    for file in artifact.iterdir():
        (folder / file.name).write_bytes(file.read_bytes())
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["llm_config"].update(backend="vllm", batch_size=256, dtype="float16")
    (folder / "manifest.json").write_text(json.dumps(manifest))
    expected = perplexity([artifact], cache_dir=calls).table
    misses = cache_stats(calls).misses
    assert perplexity([folder], cache_dir=calls).table.equals(expected)
    assert cache_stats(calls).misses == misses  # the same model on hf: the same cached calls
    manifest["artifact"] = "seer"
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(InputError, match="expected a utility artifact"):
        perplexity([folder])
