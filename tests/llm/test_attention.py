"""The `attention` operation (AttR's weights, labeler.llm.attention) and the `attention` judge
method: the arithmetic on a hand-made attention tensor, the refusal of backends that give no
weights, and the real bundled SmolLM2 on the two nq2 queries checked against a port of the
paper's own loop (src/listwise_attention.py, a batch of one)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from labeler.errors import InputError
from labeler.judges.methods import Judge, JudgeConfig
from labeler.llm import OPTIONAL_OPERATIONS, check_operation
from labeler.llm.attention import locate, span_weights
from labeler.llm.base import AttentionRequest, Backend
from labeler.llm.cache import CachedBackend
from labeler.llm.calls import Calls
from labeler.llm.config import LLMConfig
from labeler.llm.hf import HFBackend
from labeler.tasks.base import make_shards
from labeler.workflows.judge import judge
from labeler.workflows.steps import config_pools, config_source

RUN = Path(__file__).parents[1] / "fixtures" / "nq_sample_minilm_top3.trec"


def test_span_weights_average_heads_sum_keys_then_average_the_layers_read():
    # one query row: 3 layers x 2 heads x 5 keys; each head's row sums to 1
    attention = torch.tensor([
        [[0.1, 0.2, 0.3, 0.4, 0.0], [0.3, 0.2, 0.1, 0.0, 0.4]],  # layer 0: heads' mean
        [[0.0, 0.5, 0.5, 0.0, 0.0], [0.0, 0.0, 0.0, 0.5, 0.5]],  # .2 .2 .2 .2 .2 / .0 .25 ...
        [[1.0, 0.0, 0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0, 0.0]],  # layer 2: never read below
    ])
    spans = [(1, 3), (3, 5), (0, 0)]  # keys 1-2, keys 3-4, a passage not found
    # layer 0 heads' mean: [.2, .2, .2, .2, .2]; layer 1: [0, .25, .25, .25, .25]
    assert span_weights(attention, spans, layers=2) == pytest.approx([0.45, 0.45, 0.0])
    assert span_weights(attention, spans, layers=1) == pytest.approx([0.4, 0.4, 0.0])
    # an answer longer than the model is deep reads every layer (layer 2 adds 0 to both)
    assert span_weights(attention, spans, layers=40) == pytest.approx([0.3, 0.3, 0.0])


def test_a_passage_is_its_tokens_first_run_without_the_newline_token():
    prompt = [5, 8, 9, 4, 8, 9, 4]
    assert locate(prompt, [8, 9, 4, 13]) == (1, 4)  # the first of two runs
    assert locate(prompt, [9, 7, 13]) == (0, 0)  # not in the prompt: weighs 0
    assert locate(prompt, [13]) == (0, 0)  # nothing but the newline


def test_hf_answers_every_optional_operation():
    assert set(OPTIONAL_OPERATIONS) == {"attention", "loglikelihood_rolling", "count_tokens"}
    for operation in OPTIONAL_OPERATIONS:  # hf overrides the contract's refusal of each
        refused = "tokenize" if operation == "count_tokens" else operation  # counts its ids
        assert getattr(HFBackend, refused) is not getattr(Backend, refused)
        check_operation("hf", operation, "this")
    with pytest.raises(InputError) as caught:
        check_operation("vllm", "attention", "--method attention")
    assert caught.value.line() == ("field 'backend': --method attention needs attention, which "
                                   "the vllm backend does not answer (only hf) (use --backend "
                                   "hf)")


def test_attention_with_vllm_is_refused_before_anything_loads(tmp_path):
    config = JudgeConfig(dataset="nq-sample", limit=2, k=3, run=str(RUN), method="attention")
    with pytest.raises(InputError) as caught:
        judge(config, LLMConfig("smollm2-135m", backend="vllm"), out=tmp_path / "a.jsonl")
    assert caught.value.line().startswith("field 'backend': --method attention needs "
                                          "attention, which the vllm backend")
    assert not list(tmp_path.iterdir())


@pytest.fixture(scope="module")
def shard(tmp_path_factory):
    """The nq2 build's pools: two nq-sample queries, their real MiniLM top 3."""
    run = tmp_path_factory.mktemp("run") / "top3.trec"
    run.write_text("".join(line for line in RUN.read_text().splitlines(keepends=True)
                           if not line.startswith("nq-open-dev-oracle-2 ")))
    config = JudgeConfig(dataset="nq-sample", limit=2, k=3, run=str(run))
    source = config_source(config)
    [shard] = make_shards(source.queries, config_pools(source, config), 8)
    return shard


def test_attr_scores_are_the_papers_loop_on_smollm(smollm, shard):
    config = JudgeConfig(dataset="nq-sample", limit=2, k=3, run="x", method="attention",
                         max_new_tokens=32)
    from labeler.llm.gqa_attention import NAME

    loaded = smollm.model.config._attn_implementation
    assert loaded == NAME  # the CPU's form of sdpa (gqa_attention), as the backend adopts it
    records = Judge(config).submit(Calls(smollm), shard)
    assert smollm.model.config._attn_implementation == loaded  # as loaded, after the op
    for record, query in zip(records, shard.queries):
        pool = shard.pools[query.qid]
        weights, answer = _paper_loop(smollm, query.question, pool)
        assert record["output"] == answer
        assert list(record["scores"]) == [c.passage.pid for c in pool]
        assert list(record["scores"].values()) == pytest.approx(weights, rel=1e-4, abs=1e-7)
        assert all(w > 0 for w in weights)  # every passage was found in the prompt
    # the gold passage draws the most attention on both queries here
    assert [max(r["scores"], key=r["scores"].get) for r in records] == \
        ["nq-oracle:64aaafc597c5", "nq-oracle:fcd918e70be9"]


def test_attention_is_cached_and_each_row_answers_as_alone(smollm, shard, tmp_path):
    from labeler.judges.attention import cut
    from labeler.tasks.utility import passage_prompt

    requests = []
    for q in shard.queries:
        shown = [cut(c, 100) for c in shard.pools[q.qid]]
        requests.append(AttentionRequest(passage_prompt(q.question, shown),
                                         tuple(p.contents for p in shown)))
    cached = CachedBackend(smollm, cache_dir=tmp_path)
    both = cached.attention(requests)
    assert cached.backend_calls == 2
    again = CachedBackend(smollm, cache_dir=tmp_path).attention(requests)
    assert again == both  # from the cache, weights as tuples again
    alone = smollm.attention(requests[1:])
    assert alone[0].text == both[1].text
    assert alone[0].weights == pytest.approx(both[1].weights, rel=1e-5)


def _paper_loop(backend, question: str, pool) -> tuple[list[float], str]:
    """src/listwise_attention.py's calculate_attention_weights_batch for a batch of one,
    ported: eager attention, greedy, 32 new tokens, attentions[-1][step] for step in range(new
    tokens), heads averaged, each passage's tokens summed, the steps averaged."""
    from labeler.judges.attention import cut
    from labeler.tasks.utility import passage_prompt

    tokenizer, model = backend.tokenizer, backend.model
    passages = [cut(c, 100).contents for c in pool]
    text = backend.render(passage_prompt(question, [cut(c, 100) for c in pool]))
    inputs = tokenizer([text], return_tensors="pt", add_special_tokens=False)
    loaded = model.config._attn_implementation  # the session's model: left as it was loaded
    model.set_attn_implementation("eager")
    try:
        with torch.inference_mode():
            out = model.generate(**inputs, max_new_tokens=32, return_dict_in_generate=True,
                                 output_attentions=True, do_sample=False,
                                 eos_token_id=backend.eos_ids, pad_token_id=backend.pad_id)
    finally:
        model.set_attn_implementation(loaded)
    width = inputs["input_ids"].shape[1]
    tokens = tokenizer.convert_ids_to_tokens(inputs["input_ids"][0])
    spans = []
    for passage in passages:
        wanted = tokenizer.tokenize(f"{passage}\n")[:-1]
        spans.append(next(((p, p + len(wanted)) for p in range(len(tokens) - len(wanted) + 1)
                           if tokens[p:p + len(wanted)] == wanted), (0, 0)))
    generated = out.sequences[0, width:]
    steps = []
    for step in range(len(generated)):
        attention = out.attentions[-1][step][0][:, -1, :width + step + 1].mean(dim=0).numpy()
        steps.append([attention[s:e].sum() if s < e else 0.0 for s, e in spans])
    return np.mean(steps, axis=0).tolist(), tokenizer.decode(generated, skip_special_tokens=True)
