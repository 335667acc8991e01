"""The hf backend's `attention` operation: the attention weights the AttR baseline ranks by, read
as the utility paper's code reads them (hengran/LLM_specific_utility, src/listwise_attention.py).

That code generates the greedy answer (eager attention, `output_attentions=True`, at most 32 new
tokens, the prompt cut to its first 3,048 tokens) and then, for `step` in range(number of new
tokens), reads `outputs.attentions[-1][step]`. generate's attentions are indexed [decoding step]
[layer], so this is the attention of the *last* decoding step (its query: the last token fed to
the model, the answer's second-to-last token, or the prompt's last when the answer is one token)
in *layer* `step`. Per layer it averages the heads and sums each passage's key positions; a
passage's weight is the mean of those sums over the layers read. A passage is located as the
first run of the prompt's tokens equal to the tokens of `passage + "\\n"` without the last; one
not found weighs 0.

Here each prompt is answered as the paper's code answers a batch of one (a wider batch there
reads every row at the batch's longest answer), and the layers read stop at the model's last
(where the paper's code would fail). The answer is generated as the loaded model attends
(sdpa); then the tokens the last step read run once more, all but the last into a key/value
cache, the last with eager attention, which alone gives the weights: one query row per layer,
never a prompt-by-prompt matrix.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import torch
from transformers import DynamicCache, GenerationConfig

from labeler.llm.base import AttentionRequest, AttentionResult, check_lengths
from labeler.llm.prompts import encode


def answer_attention(backend, requests: list[AttentionRequest]) -> list[AttentionResult]:
    """`Backend.attention` for an `HFBackend`: the greedy answer to each request and its
    passages' weights, in the backend's length-sorted batches (one `max_tokens` a batch)."""
    tokenizer = backend.tokenizer
    prompts = [ids[:r.truncate] for ids, r in
               zip(encode(tokenizer, [backend.render(r.prompt) for r in requests]), requests)]
    check_lengths([len(p) for p in prompts], backend.max_context,
                  reserved=max((r.max_tokens for r in requests), default=0))
    spans = [[locate(p, s) for s in encode(tokenizer, [t + "\n" for t in r.spans])]
             for p, r in zip(prompts, requests)]
    out: list[AttentionResult] = [AttentionResult("", ())] * len(requests)
    for cap in sorted({r.max_tokens for r in requests}):
        todo = [i for i, r in enumerate(requests) if r.max_tokens == cap]
        for batch in backend._batches(todo, "attention", sort_key=lambda i: len(prompts[i])):
            answers = _greedy(backend, [prompts[i] for i in batch], cap)
            reads = [prompts[i] + ids[:max(len(ids) - 1, 0)] for i, ids in zip(batch, answers)]
            attentions = _last_step(backend, reads)  # (rows, layers, heads, keys)
            width = attentions.shape[-1]
            for row, (i, ids) in enumerate(zip(batch, answers)):
                shift = width - len(reads[row])  # the row's left padding
                located = [(s + shift, e + shift) if e > s else (0, 0) for s, e in spans[i]]
                text = tokenizer.decode([t for t in ids if t not in backend.eos_ids],
                                        skip_special_tokens=True)
                out[i] = AttentionResult(text, tuple(span_weights(attentions[row], located,
                                                                  len(ids))))
    return out


def span_weights(attention: torch.Tensor, spans: Sequence[tuple[int, int]],
                 layers: int) -> list[float]:
    """Each span's weight from one query row's attention (layers, heads, keys): per layer the
    heads' mean summed over the span's keys [start, end), averaged over the first `layers`
    layers (at most all); 0.0 for an empty span.

    >>> a = torch.tensor([[[.5, .25, .25], [.25, .25, .5]], [[1., 0., 0.], [0., 0., 1.]]])
    >>> span_weights(a, [(0, 1), (1, 3), (0, 0)], layers=1)
    [0.375, 0.625, 0.0]
    >>> span_weights(a, [(0, 1), (1, 3)], layers=5)
    [0.4375, 0.5625]
    """
    per_layer = attention[:max(layers, 1)].float().mean(dim=1)  # (layers, keys)
    return [per_layer[:, s:e].sum(-1).mean().item() if e > s else 0.0 for s, e in spans]


def locate(prompt: Sequence[int], span: Sequence[int]) -> tuple[int, int]:
    """[start, end) of the first run of `prompt` equal to `span` without its last token (the
    "\\n" it was tokenized with); (0, 0) when there is none.

    >>> locate([7, 1, 2, 3, 1, 2], [1, 2, 9]), locate([7, 1], [5, 9]), locate([7], [9])
    ((1, 3), (0, 0), (0, 0))
    """
    span = list(span[:-1])
    n = len(span)
    if n == 0:
        return 0, 0
    for start in range(len(prompt) - n + 1):
        if list(prompt[start:start + n]) == span:
            return start, start + n
    return 0, 0


@torch.inference_mode()
def _greedy(backend, prompts: list[list[int]], cap: int) -> list[list[int]]:
    """Each prompt's greedy answer tokens, through its first EOS (kept), at most `cap`."""
    ids, mask = backend._pad(prompts)
    config = GenerationConfig(do_sample=False, max_new_tokens=cap,
                              eos_token_id=backend.eos_ids, pad_token_id=backend.pad_id)
    out = backend.model.generate(input_ids=ids, attention_mask=mask, generation_config=config)
    answers = []
    for row in out[:, ids.shape[1]:].tolist():
        end = next((k for k, t in enumerate(row) if t in backend.eos_ids), len(row) - 1)
        answers.append(row[:end + 1])
    return answers


@torch.inference_mode()
def _last_step(backend, reads: list[list[int]]) -> torch.Tensor:
    """The attention of each row's last token to the row (left-padded): (rows, layers, heads,
    keys), the cache of the others' keys and values filled first."""
    ids, mask = backend._pad([r[:-1] for r in reads])
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    cache = DynamicCache()
    backend.model(input_ids=ids, attention_mask=mask, position_ids=positions,
                  past_key_values=cache, use_cache=True, logits_to_keep=1)
    last = torch.tensor([[r[-1]] for r in reads], device=backend.device)
    with _eager(backend.model):
        out = backend.model(input_ids=last, past_key_values=cache, use_cache=True,
                            attention_mask=torch.cat([mask, torch.ones_like(last)], -1),
                            position_ids=mask.sum(-1, keepdim=True), logits_to_keep=1,
                            output_attentions=True)
    return torch.stack([layer[:, :, -1, :] for layer in out.attentions], dim=1).float().cpu()


@contextmanager
def _eager(model) -> Iterator[None]:
    """The model with eager attention (the only one that returns its weights), then as it was
    loaded."""
    before = model.config._attn_implementation
    model.set_attn_implementation("eager")
    try:
        yield
    finally:
        model.set_attn_implementation(before)
