"""`reproduce utility-paper` runs each call kind in the dtype the paper's script for it loads
the model in. The table below is transcribed from hengran/LLM_specific_utility @ 27a07e31
(its `src/` scripts: the line that builds the engine's dtype, as written there); a build
routes each kind to the model loaded in that dtype, and the manifest records them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch

import labeler
from labeler.llm.config import LLMConfig
from labeler.sources.passage import Passage
from labeler.workflows.reproduce.utility_dtypes import (
    COMMIT,
    OWN,
    PAPER_DTYPES,
    paper_settings,
)

#: script:line -> that line of the paper's code, stripped
TRANSCRIBED = {
    "src/without_passage_answer.py:45": "# dtype=torch.float16,",
    "src/answer.py:45": "# dtype=torch.float16,",
    "src/exact_answer.py:45": "# dtype=torch.float16,",
    "src/select_answer.py:45": "# dtype=torch.float16,",
    "src/pointwise_likelihood.py:68": "llm = LLM(",  # model=..., tensor_parallel_size=8 only
    "src/pointwise_performance_answerem.py:39": "dtype=torch.float16,",
    "src/point_run_verberlized.py:36": "dtype=torch.float16,",
    "src/listwise_verberlized.py:46": "dtype=torch.float16,",
    "src/listwise_ranking.py:46": "dtype=torch.float16,",
    "src/listwise_attention.py:207": "torch_dtype=torch.bfloat16 if torch.cuda."
                                     "is_bf16_supported() else torch.float32,",
}


def _dtype_of(line: str) -> str:
    """What a transcribed line loads: a commented-out or absent dtype is the model's own."""
    if line.startswith("#") or "dtype" not in line:
        return OWN
    return re.search(r"dtype=torch\.(\w+)", line).group(1)


def test_each_call_kinds_dtype_is_its_scripts():
    assert COMMIT.startswith("27a07e31")
    for kind, row in PAPER_DTYPES.items():
        line = TRANSCRIBED[f"{row.script}:{row.line}"]
        assert row.dtype == _dtype_of(line), kind
    # the gold label's two halves differ: closed-book in the model's own, one passage in fp16
    assert PAPER_DTYPES["closed-book answers"].dtype == OWN
    assert PAPER_DTYPES["one-passage answers"].dtype == "float16"
    assert PAPER_DTYPES["attention weights"].dtype == "bfloat16"


def test_every_kind_is_a_call_labeler_makes():
    package = Path(labeler.__file__).parent
    source = "\n".join(p.read_text() for p in package.rglob("*.py"))
    for kind in PAPER_DTYPES:
        assert f'"{kind}"' in source, kind


def test_the_reproductions_settings_per_backend():
    vllm = paper_settings("vllm", None)
    assert vllm["dtype"] == "auto"  # vLLM's default: the model's own
    kinds = dict(vllm["call_dtypes"])
    assert kinds["one-passage answers"] == kinds["listwise rankings"] == "float16"
    assert kinds["closed-book answers"] == kinds["pseudo-answers"] == "auto"
    assert kinds["attention weights"] == "bfloat16"
    hf = dict(paper_settings("hf", None)["call_dtypes"])  # hf takes float32 and bfloat16
    assert hf["one-passage answers"] is None and hf["attention weights"] == "bfloat16"
    assert paper_settings("vllm", "bfloat16") == {"dtype": "bfloat16"}  # --dtype: every call
    config = LLMConfig("smollm2-135m", backend="vllm", **vllm)
    assert config.describe()["call_dtypes"] == kinds
    assert dict(config.on_hf().call_dtypes)["one-passage answers"] is None


@pytest.mark.slow
def test_a_build_asks_each_kind_of_the_model_in_its_dtype(smollm, tmp_path):
    """Closed-book answers of the float32 model, one-passage answers of the bfloat16 one: each
    equals that model's own greedy answer, and the manifest names the route."""
    from labeler.llm import Sampling, load_backend
    from labeler.tasks.utility import UtilityConfig, closed_book_prompt, passage_prompt
    from labeler.workflows.build import build

    calls = tmp_path / "calls"
    calls.mkdir()
    (calls / "models").symlink_to(Path(smollm.model.name_or_path).parent)
    llm = LLMConfig("smollm2-135m", call_dtypes=(("one-passage answers", "bfloat16"),))
    config = UtilityConfig(dataset="nq-sample", limit=1, pool="hgp", max_new_tokens=8)
    [built] = build("utility", config, [llm], out=tmp_path / "out", cache_dir=calls)
    manifest = json.loads((built.path / "manifest.json").read_text())
    assert manifest["llm_config"]["call_dtypes"] == {"one-passage answers": "bfloat16"}
    [record] = [json.loads(line) for f in sorted(built.path.glob("data-*.jsonl"))
                for line in f.read_text().splitlines()]

    bf16 = load_backend("smollm2-135m", dtype="bfloat16", cache_dir=calls, use_cache=False)
    assert (bf16.model.dtype, smollm.model.dtype) == (torch.bfloat16, torch.float32)
    greedy = Sampling(max_tokens=8)
    for row in record["candidates"]:
        prompt = passage_prompt(record["question"], [Passage(row["pid"], row["title"],
                                                             row["text"])])
        assert row["answer"] == bf16.generate([prompt], greedy)[0][0].text.strip()
    closed = smollm.generate([closed_book_prompt(record["question"])], greedy)[0][0].text
    assert record["closed_book_answer"] == closed.strip()
