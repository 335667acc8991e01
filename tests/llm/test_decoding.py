"""The hf backend's running batch: rows leave it as they end and the queue refills it, and the
greedy answers are those of transformers' own `generate` over static padded batches (what the
backend ran before, every prompt prefilled whole), byte for byte, on real utility prompts of
mixed lengths."""

from __future__ import annotations

from copy import copy

import pytest
import torch
from transformers import GenerationConfig

from labeler.llm import Completion, Sampling
from labeler.llm.batching import Collator
from labeler.llm.prompts import encode
from labeler.sources.registry import load_source
from labeler.tasks.utility import closed_book_prompt, passage_prompt


@pytest.fixture(scope="module")
def mixed_prompts() -> list:
    """nq-sample's first six questions closed-book (~40 tokens) and with their gold passage
    (~150-400 tokens): the two prompts of a utility build."""
    queries = load_source("nq-sample", limit=6).queries
    return [closed_book_prompt(q.question) for q in queries] + [
        passage_prompt(q.question, q.gold[:1]) for q in queries]


def static_batches(backend, prompts, sampling: Sampling) -> tuple[list[Completion], int]:
    """Greedy answers from `generate` over the Collator's batches, each left padded and run
    until its last row ends; and the decode slots that ran (rows x steps)."""
    ids = encode(backend.tokenizer, [backend.render(p) for p in prompts])
    collator = Collator(ids, sort_key=len, batch_size=backend.batch_size)
    config = GenerationConfig(do_sample=False, max_new_tokens=sampling.max_tokens,
                              eos_token_id=backend.eos_ids, pad_token_id=backend.pad_id)
    answers, slots = [], 0
    for batch in collator:
        padded, mask = backend._pad([ids[k] for k in batch])
        with torch.inference_mode():
            out = backend.model.generate(input_ids=padded, attention_mask=mask,
                                         generation_config=config)[:, padded.shape[1]:]
        slots += len(batch) * (out.shape[1] - 1)  # the first token comes from the prefill
        for row in out.tolist():
            end = next((k for k, t in enumerate(row) if t in backend.eos_ids), None)
            text = backend.tokenizer.decode(row[:end], skip_special_tokens=True)
            answers.append(Completion(text, end is None and len(row) == sampling.max_tokens))
    return collator.restore(answers), slots


def test_finished_rows_leave_and_the_answers_stay_those_of_static_batches(smollm, mixed_prompts,
                                                                          monkeypatch):
    monkeypatch.setattr(smollm, "batch_size", 4)
    sampling = Sampling(max_tokens=24)
    expected, static_slots = static_batches(smollm, mixed_prompts, sampling)
    before = copy(smollm.decoder.stats)
    answers = smollm.generate(mixed_prompts, sampling)
    ran = smollm.decoder.stats - before
    assert [a for [a] in answers] == expected
    # the prefix the prompts share (the system turn; the closed-book instruction) was
    # prefilled once, each prompt then only its tail: fewer positions than the prompts hold
    prompt_tokens = sum(map(len, encode(smollm.tokenizer,
                                        [smollm.render(p) for p in mixed_prompts])))
    assert ran.prefill_tokens < 0.9 * prompt_tokens
    assert any(a.capped for a in expected) and not all(a.capped for a in expected)
    slots = ran.decode_slots
    # every slot a live row's: each produced a token its row kept
    assert slots == ran.tokens - len(mixed_prompts)
    # admitting rows (their prefill) took part of generate's CPU time, decoding the rest
    assert 0 < ran.prefill_cpu_seconds < ran.cpu_seconds
    assert slots < 0.8 * static_slots


def test_a_row_ends_at_its_stop_string_while_its_neighbours_go_on(smollm, mixed_prompts,
                                                                   monkeypatch):
    monkeypatch.setattr(smollm, "batch_size", 2)  # four prompts: the queue refills the batch
    prompts = mixed_prompts[:2] + mixed_prompts[6:8]
    [[full]] = smollm.generate(prompts[:1], Sampling(max_tokens=16))
    stop = Sampling(max_tokens=16, stop=(full.text.split()[1],))
    answers = smollm.generate(prompts, stop)
    assert answers[0] == [Completion(full.text[:full.text.index(stop.stop[0])])]
    assert answers == [a for p in prompts for a in smollm.generate([p], stop)]


def test_the_queue_takes_the_shortest_prompt_first_with_its_samples_together(smollm,
                                                                           mixed_prompts,
                                                                           monkeypatch):
    """A closed-book prompt (the likeliest to run to the cap) starts before the passage ones,
    and a prompt's n samples join the batch together (one prefill)."""
    queued = []
    real_run = smollm.decoder.run

    def run(groups, *args, **kwargs):
        queued.extend(groups)
        return real_run(groups, *args, **kwargs)

    monkeypatch.setattr(smollm.decoder, "run", run)
    prompts = [mixed_prompts[6], mixed_prompts[0], mixed_prompts[7], mixed_prompts[1]]
    answers = smollm.generate(prompts, Sampling(max_tokens=2, n=2, temperature=1.0, seed=7))
    assert [len(a) for a in answers] == [2, 2, 2, 2]
    lengths = [[len(ids) for ids, _ in group] for group in queued]
    assert all(len(group) == 2 and len(set(group)) == 1 for group in lengths)
    assert [group[0] for group in lengths] == sorted(group[0] for group in lengths)
    assert lengths[0][0] < 100 < lengths[-1][0]  # closed-book first, a passage prompt last


def test_grouped_heads_read_in_place_give_sdpas_bytes(smollm, mixed_prompts):
    """On the CPU the backend's attention reads the shared key/value heads in place
    (`gqa_attention`) where transformers' sdpa copies them for a masked batch: same logits."""
    from labeler.llm.gqa_attention import NAME

    assert smollm.model.config._attn_implementation == NAME
    ids, mask = smollm._pad(encode(smollm.tokenizer, [smollm.render(p) for p in mixed_prompts[4:8]]))
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    logits = []
    try:
        for implementation in ("sdpa", NAME):
            smollm.model.set_attn_implementation(implementation)
            with torch.inference_mode():
                logits.append(smollm.model(input_ids=ids, attention_mask=mask,
                                           position_ids=positions).logits)
    finally:
        smollm.model.set_attn_implementation(NAME)
    assert torch.equal(*logits)
