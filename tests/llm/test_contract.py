"""The backend contract, one suite for every backend, on the bundled SmolLM2-135M-Instruct.

References come from an independent, unpadded forward pass of the transformers model held by
the `smollm` fixture (float32 on the CPU). vllm computes in float32 on the CPU (make
test-vllm, vLLM's CPU build) and in the model's dtype on a GPU (benchmarks/gpu.sh): the
tolerance follows the dtype.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from labeler.errors import InputError, PromptTooLongError
from labeler.llm import (
    ChoiceRequest,
    Completion,
    LoglikelihoodRequest,
    Message,
    Sampling,
    chat,
)
from labeler.llm.cache import CachedBackend

#: (backend, dtype) -> (log-likelihood in nats, probability)
TOLERANCE = {("hf", "float32"): (1e-4, 1e-4), ("vllm", "float32"): (2e-3, 2e-4),
             ("vllm", "bfloat16"): (0.25, 0.02), ("vllm", "float16"): (0.25, 0.02),
             ("openai", None): (2e-3, 2e-4)}  # the tests' vllm serve: float32 on the CPU


def tolerance(backend) -> tuple[float, float]:
    key = backend.key()
    return TOLERANCE[key["backend"], key.get("dtype")]


def _reference_logits(smollm, text: str) -> tuple[list[int], torch.Tensor]:
    ids = smollm.tokenizer(text, add_special_tokens=False).input_ids
    with torch.no_grad():
        logits = smollm.model(torch.tensor([ids], device=smollm.device)).logits[0]
    return ids, torch.log_softmax(logits.float(), dim=-1)


def test_greedy_output_is_the_same_alone_and_in_a_batch_of_8(backend, questions):
    prompts = [chat(q) for q in questions[:8]]
    greedy = Sampling(max_tokens=16)
    batched = backend.generate(prompts, greedy)
    assert len({answer[0] for answer in batched}) == 8  # eight different real answers
    lengths = [len(backend.render(p)) for p in prompts]
    shortest, longest = lengths.index(min(lengths)), lengths.index(max(lengths))
    for i in (shortest, longest):  # the most and the least left padding in the batch
        assert backend.generate([prompts[i]], greedy) == [batched[i]]


def test_loglikelihood_is_the_sum_of_continuation_token_logprobs(backend, smollm, questions):
    question = chat("What is the capital of France?")
    requests = [
        LoglikelihoodRequest(question, "The capital of France is Paris."),
        LoglikelihoodRequest(question, "The capital of France is Berlin."),
        LoglikelihoodRequest(chat(questions[0], system="Answer in a few words."), "December 1972"),
        LoglikelihoodRequest(chat(questions[5]), "In 1897 the Isle of Wight became a county."),
    ]
    got = backend.loglikelihood(requests)
    for request, value in zip(requests, got):
        context = smollm.render(request.context)
        ids, logprobs = _reference_logits(smollm, context + request.continuation)
        [start] = smollm.count_tokens([context])
        expected = sum(logprobs[k - 1, ids[k]].item() for k in range(start, len(ids)))
        assert value == pytest.approx(expected, abs=tolerance(backend)[0])
    assert got[0] > got[1]  # Paris is the likelier answer
    assert backend.loglikelihood([LoglikelihoodRequest(question, "")]) == [0.0]


def test_choice_probs_prefer_paris_after_the_capital_of_france_is(backend, smollm):
    prompt = chat("What is the capital of France?") + (
        Message("assistant", "The capital of France is"),)
    [probs] = backend.choice_probs([ChoiceRequest(prompt, (" Paris", " Berlin"))])
    assert probs[" Paris"] > probs[" Berlin"]
    _, logprobs = _reference_logits(smollm, smollm.render(prompt))
    for choice, prob in probs.items():
        [token] = smollm.tokenizer(choice, add_special_tokens=False).input_ids
        expected = logprobs[-1, token].exp().item()
        assert prob == pytest.approx(expected, abs=tolerance(backend)[1])


def test_seeded_sampling_repeats_exactly_whatever_the_batch(backend, questions):
    prompts = [chat(q) for q in questions[:4]]
    sampling = Sampling(n=3, temperature=1.0, top_p=0.95, top_k=50, max_tokens=8, seed=11)
    first = backend.generate(prompts, sampling)
    assert backend.generate(prompts, sampling) == first
    assert backend.generate([prompts[2]], sampling) == [first[2]]  # alone: same samples
    assert all(len(set(samples)) > 1 for samples in first)  # it does sample
    assert backend.generate(prompts, replace(sampling, seed=12)) != first


def test_the_samples_of_a_prompt_share_one_batch_and_one_prefill(smollm, questions,
                                                                 monkeypatch):
    from labeler.llm.batching import shared_prefixes
    from labeler.llm.decoding import PREFIX_OVERHEAD, _Batch

    admitted, admit = [], _Batch.admit

    def spy_admit(batch, rows):
        admitted.append([row.ids for row in rows])
        return admit(batch, rows)

    monkeypatch.setattr(_Batch, "admit", spy_admit)
    prompts = [chat(q) for q in questions[:4]]
    sampling = Sampling(n=3, temperature=1.0, max_tokens=2, seed=3)
    before = smollm.decoder.stats.prefill_tokens
    smollm.generate(prompts, sampling)
    assert smollm.batch_size == 8
    assert [len(rows) for rows in admitted] == [6, 6]  # two whole prompts each, not 8 + 4
    for rows in admitted:
        assert sorted(map(rows.count, rows)) == [3] * 6  # every prompt's 3 samples together
    # one prefill row per distinct prompt after its shared prefix (prefilled once for the
    # call), left padded to the longest of its admission
    distinct = sorted({tuple(ids) for rows in admitted for ids in rows})
    cuts = dict(zip(distinct, shared_prefixes(distinct, overhead=PREFIX_OVERHEAD)))
    prefixes = {ids[:cut] for ids, cut in cuts.items() if cut}
    widths = [max(len(ids) - cuts[tuple(ids)] for ids in rows) for rows in admitted]
    assert smollm.decoder.stats.prefill_tokens - before == \
        sum(map(len, prefixes)) + 2 * sum(widths)


def test_stop_strings_cut_the_generation(backend, questions):
    prompts = [chat(questions[1])]
    [[full]] = backend.generate(prompts, Sampling(max_tokens=16))
    stop = full.text.split()[2]
    [[cut]] = backend.generate(prompts, Sampling(max_tokens=16, stop=(stop,)))
    assert cut == Completion(full.text[:full.text.index(stop)], capped=False)


def test_a_completion_says_whether_it_stopped_at_the_cap(backend):
    """In one batch, a row that ends at its EOS is not capped while another runs to the cap;
    the capped answer is the start of the one that a larger cap lets finish."""
    brief, chatty = chat("What is the capital of France? Answer in one word."), chat("Say hello.")
    [short], [cut] = backend.generate([brief, chatty], Sampling(max_tokens=8))
    assert "Paris" in short.text and not short.capped
    assert cut.capped
    [[whole]] = backend.generate([chatty], Sampling(max_tokens=64))
    assert not whole.capped and whole.text.startswith(cut.text) and whole.text != cut.text
    [[one]] = backend.generate([brief], Sampling(max_tokens=1))
    assert one.capped and one.text


def test_a_final_assistant_message_is_a_reply_to_continue(backend):
    text = backend.render(chat("Name a colour.") + (Message("assistant", "A colour is"),))
    assert text.endswith("<|im_start|>user\nName a colour.<|im_end|>\n"
                         "<|im_start|>assistant\nA colour is")


def test_samples_follow_the_next_token_distribution(backend, smollm):
    prompt = chat("Tell me about yourself.", system="Be brief.") + (
        Message("assistant", "My favourite colour is"),)
    n = 200  # 200 rows in one batch (a prompt's samples are never split), one shared prefill
    [samples] = backend.generate([prompt], Sampling(n=n, temperature=1.0, max_tokens=1, seed=5))
    _, logprobs = _reference_logits(smollm, smollm.render(prompt))
    top = torch.topk(logprobs[-1].exp(), 3)
    for p, token in zip(top.values.tolist(), top.indices.tolist()):
        share = [s.text for s in samples].count(smollm.tokenizer.decode([token])) / n
        assert abs(share - p) < 4 * (p * (1 - p) / n) ** 0.5 + 0.01, (token, share, p)


def test_bad_requests_are_refused_before_any_work(backend):
    with pytest.raises(InputError, match=r"^field 'choices': choice '' adds no token$"):
        backend.choice_probs([ChoiceRequest(chat("Is water wet?"), (" yes", ""))])
    with pytest.raises(InputError, match=r"^field 'prompt': a prompt needs at least one message$"):
        backend.generate([()], Sampling())
    with pytest.raises(InputError, match=r"^field 'role': unknown role 'bot' "
                                         r"\(use one of system, user, assistant\)$"):
        backend.loglikelihood([LoglikelihoodRequest((Message("bot", "hi"),), " there")])


def _model_calls(backend, monkeypatch) -> list:
    """Every call that reaches the model from now on (a forward pass or an engine call)."""
    calls: list = []
    if hasattr(backend, "model"):  # hf: generate() runs forward() too
        monkeypatch.setattr(backend.model, "forward", lambda *a, **kw: calls.append(a) or 1 / 0)
    elif hasattr(backend, "server"):  # openai: a request to the server
        monkeypatch.setattr(backend.server, "post", lambda *a, **kw: calls.append(a) or 1 / 0)
    else:  # vllm: generate streams requests into the engine, the others call LLM.generate
        monkeypatch.setattr(backend.llm, "generate", lambda *a, **kw: calls.append(a) or 1 / 0)
        monkeypatch.setattr(backend.llm.llm_engine, "add_request",
                            lambda *a, **kw: calls.append(a) or 1 / 0)
    return calls


def test_count_tokens_counts_plain_text_without_special_tokens(backend, tmp_path):
    texts = ["The capital of France is Paris.", "", " yes", "<|im_start|>user"]
    # SmolLM2's tokenizer adds <|im_start|> by default, which would make these 8, 1, 2, 3; a
    # special token written in the text (as chat templates do) is one token
    assert backend.count_tokens(texts) == [7, 0, 1, 2]
    assert backend.count_tokens([]) == []
    assert backend.count_tokens([backend.render(chat("Hi"))]) == [31]  # with its system prompt
    cached = CachedBackend(backend, cache_dir=tmp_path)
    assert cached.count_tokens(texts) == [7, 0, 1, 2]


def test_max_context_is_the_window_the_model_config_declares(backend, tmp_path):
    assert backend.max_context == 8192  # SmolLM2's max_position_embeddings
    assert CachedBackend(backend, cache_dir=tmp_path).max_context == 8192


def test_a_prompt_longer_than_the_window_fails_before_any_batch(backend, monkeypatch):
    short, long = chat("Is water wet?"), chat("word " * 9000)
    [tokens] = backend.count_tokens([backend.render(long)])
    assert tokens > 8192
    calls = _model_calls(backend, monkeypatch)
    with pytest.raises(PromptTooLongError) as caught:
        backend.generate([short, short, long], Sampling(max_tokens=8))
    assert (caught.value.index, caught.value.tokens, caught.value.window,
            caught.value.reserved) == (2, tokens, 8192, 8)
    assert str(caught.value) == (f"the prompt of request 2 has {tokens} tokens + 8 for the "
                                 "answer, more than the model's 8192-token context window")
    assert "truncation rule" in caught.value.hint
    with pytest.raises(PromptTooLongError) as caught:  # the continuation counts
        backend.loglikelihood([LoglikelihoodRequest(short, " yes"),
                               LoglikelihoodRequest(short, "word " * 9000)])
    assert (caught.value.index, caught.value.reserved) == (1, 0)
    with pytest.raises(PromptTooLongError) as caught:
        backend.choice_probs([ChoiceRequest(long), ChoiceRequest(long), ChoiceRequest(short)])
    assert (caught.value.index, caught.value.tokens, caught.value.reserved) == (0, tokens, 1)
    assert str(caught.value).endswith("context window (1 more is too long)")
    assert calls == []


def test_the_window_holds_the_prompt_and_its_answer_exactly(backend, monkeypatch):
    prompt = chat("Is water wet? Answer yes or no.")
    [n] = backend.count_tokens([backend.render(prompt)])
    [m] = backend.count_tokens([backend.render(prompt) + " Yes, it is."])
    for window, fits in ((n + 4, True), (n + 3, False)):  # generate: prompt + max_tokens
        monkeypatch.setattr(backend, "max_context", window)
        if fits:
            [[answer]] = backend.generate([prompt], Sampling(max_tokens=4))
            assert answer.text
        else:
            with pytest.raises(PromptTooLongError, match=rf"has {n} tokens \+ 4 for the answer"):
                backend.generate([prompt], Sampling(max_tokens=4))
    monkeypatch.setattr(backend, "max_context", n + 1)  # choice_probs: prompt + the choice token
    [probs] = backend.choice_probs([ChoiceRequest(prompt)])
    assert 0 < probs[" yes"] < 1
    monkeypatch.setattr(backend, "max_context", n)
    with pytest.raises(PromptTooLongError, match=rf"has {n} tokens \+ 1 for the answer"):
        backend.choice_probs([ChoiceRequest(prompt)])
    monkeypatch.setattr(backend, "max_context", m)  # loglikelihood: context + continuation
    [logprob] = backend.loglikelihood([LoglikelihoodRequest(prompt, " Yes, it is.")])
    assert logprob < 0
    monkeypatch.setattr(backend, "max_context", m - 1)
    with pytest.raises(PromptTooLongError, match=rf"has {m} tokens, more than"):
        backend.loglikelihood([LoglikelihoodRequest(prompt, " Yes, it is.")])


def test_the_task_layer_names_the_query_before_any_work(backend, monkeypatch):
    from labeler.llm.calls import Calls

    prompts = [chat("Hi"), chat("word " * 9000), chat("words " * 9000)]  # two distinct, too long
    calls = _model_calls(backend, monkeypatch)
    with pytest.raises(PromptTooLongError) as caught:
        Calls(backend).generate(prompts, Sampling(max_tokens=16), "answers", ["q1", "q2", "q3"])
    assert str(caught.value) == (
        f"the prompt for 'q2' has {caught.value.tokens} tokens + 16 for the answer, more than "
        "the model's 8192-token context window (1 more is too long)")
    assert backend.count_tokens([backend.render(prompts[0])]) == [31]
    with pytest.raises(InputError, match=r"^field 'names': 1 names for 3 requests$"):
        Calls(backend).generate(prompts, Sampling(max_tokens=16), "answers", ["q1"])
    assert calls == []


def test_choices_whose_first_tokens_collide_are_refused(backend, monkeypatch):
    prompt = chat("Is water wet? Answer yes or no.")
    [probs] = backend.choice_probs([ChoiceRequest(prompt, (" yes", " yesterday"))])
    assert probs[" yes"] > probs[" yesterday"] > 0  # a shared prefix, but two tokens: fine
    calls = _model_calls(backend, monkeypatch)
    with pytest.raises(InputError) as caught:
        backend.choice_probs([ChoiceRequest(prompt), ChoiceRequest(prompt, (" yes", " yes, sir"))])
    assert str(caught.value) == ("field 'choices': choices ' yes' and ' yes, sir' start with "
                                 "the same token ' yes'")
    assert caught.value.hint == ("only a choice's first token is scored: use choices that "
                                 "differ in it")
    with pytest.raises(InputError, match=r"^field 'choices': choice ' no' is given twice$"):
        backend.choice_probs([ChoiceRequest(prompt, (" no", " yes", " no"))])
    assert calls == []
