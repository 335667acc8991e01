"""The persistent call cache: any Backend wrapped so that each answer is computed once.

Like lm-evaluation-harness's CachingLM. A request's key is the sha256 of JSON holding the
operation, the backend's `key()` (model id, revision, backend, dtype, device), the exact
rendered prompt and every parameter that changes the answer (the seed included). A prompt is
rendered and tokenized once: its text keys it, its token ids are checked against the model's
context window, then run by the backend as they are. The misses are computed in a thread of
their own (`labeler.llm.overlap`): `generate` streamed by the backend (`Backend.stream`), the
other operations in the shared Collator's batches of the backend's `call_size`; answers are
committed as they come (SQLite, WAL), while the engine goes on, so a killed run keeps what it
finished and a rerun makes only the missing calls.

The answers live in a `CallStore` (`labeler.llm.call_store`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from labeler.errors import PromptTooLongError
from labeler.llm.base import (
    CHOICE_TOKENS,
    AttentionRequest,
    AttentionResult,
    Backend,
    Chat,
    ChoiceRequest,
    Completion,
    LoglikelihoodRequest,
    Prompt,
    Sampling,
    check_lengths,
)
from labeler.llm.batching import Collator, chat_prefix
from labeler.llm.call_store import call_store
from labeler.llm.overlap import overlapped
from labeler.progress import progress_bar
from labeler.turns import check_turn, wait_turn


class CachedBackend(Backend):
    """`inner` behind the persistent cache; `backend_calls` counts requests passed to `inner`."""

    def __init__(self, inner: Backend, *, cache_dir: str | Path | None = None) -> None:
        self.inner = inner
        self.model_id, self.revision, self.alias = inner.model_id, inner.revision, inner.alias
        self.batch_size = inner.batch_size
        self.max_context = inner.max_context
        self.structured_output = inner.structured_output
        self.store = call_store(cache_dir)
        self.backend_calls = 0  # requests forwarded to `inner` by this object

    @property
    def call_size(self) -> int:
        return self.inner.call_size

    def key(self) -> dict:
        return self.inner.key()

    def render(self, prompt: Chat) -> str:
        return self.inner.render(prompt)

    def tokenize(self, texts: list[str]) -> list[list[int]]:
        return self.inner.tokenize(texts)

    def count_tokens(self, texts: list[str]) -> list[int]:
        return self.inner.count_tokens(texts)

    def refusal(self, operation: str) -> str | None:
        return self.inner.refusal(operation)

    def generate(self, prompts: list[Chat], sampling: Sampling) -> list[list[Completion]]:
        texts = [self.render(p) for p in prompts]
        asked = sampling.key()

        def stream(misses: list[int], ids: list[list[int]]):
            ready = [Prompt(prompts[i], texts[i], x) for i, x in zip(misses, ids)]
            for k, samples in self.inner.stream(ready, sampling):
                yield k, [vars(c).copy() for c in samples]  # asdict's, for its flat fields

        keys = _hashes({"op": "generate", "model": self.key(), "sampling": asked}, "prompt", texts)
        stored = self._cached("generate", prompts, texts, keys, None,
                              reserved=sampling.max_tokens, stream=stream)
        return [[Completion(**c) for c in samples] for samples in stored]

    def loglikelihood(self, requests: list[LoglikelihoodRequest]) -> list[float]:
        contexts = [self.render(r.context) for r in requests]
        return self._cached("loglikelihood", requests,
                            [c + r.continuation for c, r in zip(contexts, requests)],
                            self._keys("loglikelihood", [{"context": c, "continuation": r.continuation}
                                                         for c, r in zip(contexts, requests)]),
                            self.inner.loglikelihood, groups=contexts)

    def loglikelihood_rolling(self, texts: list[str]) -> list[float]:
        return self._cached("loglikelihood_rolling", texts, texts,
                            self._keys("loglikelihood_rolling", [{"text": t} for t in texts]),
                            self.inner.loglikelihood_rolling, reserved=1)  # + the BOS

    def attention(self, requests: list[AttentionRequest]) -> list[AttentionResult]:
        texts = [self.render(r.prompt) for r in requests]
        stored = self._cached("attention", requests, texts,
                              self._keys("attention", [{"prompt": t, "spans": list(r.spans),
                                                        "max_tokens": r.max_tokens,
                                                        "truncate": r.truncate}
                                                       for t, r in zip(texts, requests)]),
                              lambda chunk: [asdict(a) for a in self.inner.attention(chunk)],
                              reserved=max((r.max_tokens for r in requests), default=0))
        return [AttentionResult(a["text"], tuple(a["weights"])) for a in stored]

    def choice_probs(self, requests: list[ChoiceRequest]) -> list[dict[str, float]]:
        texts = [self.render(r.prompt) for r in requests]
        return self._cached("choice_probs", requests, texts,
                            self._keys("choice_probs", [{"prompt": t, "choices": list(r.choices)}
                                                        for t, r in zip(texts, requests)]),
                            self.inner.choice_probs, reserved=CHOICE_TOKENS,
                            groups=[chat_prefix(r.prompt) for r in requests])

    def _keys(self, op: str, params: list[dict]) -> list[str]:
        """The cache key of each request: `params`, what changes its answer, with `op` and the
        model's `key()`."""
        model = self.key()
        return [_hash({"op": op, "model": model, **p}) for p in params]

    def _cached(self, op: str, requests: list, texts: list[str], keys: list[str],
                compute: Callable[[list], list] | None, *, reserved: int = 0,
                groups: list | None = None, stream: Callable | None = None) -> list[Any]:
        """Answers from the cache; the misses checked against the context window (`texts` are
        what the model reads, `reserved` the answer's room), then computed in Collator batches
        (requests with equal `groups` entries together) or, with `stream(misses, their token
        ids)`, as the backend streams them: (position among the misses, answer) as each ends.
        The engine works in a thread of its own while answers are committed as they come;
        beside other items (`labeler.turns`) it waits for this one's turn, and what theirs
        answered meanwhile is not asked again."""
        found = self.store.lookup(list(dict.fromkeys(keys)))
        todo = {k: i for i, k in enumerate(keys) if k not in found}  # first request per key
        misses, tokens, ids = self._checked(todo, texts, reserved, tokenize=stream is not None)
        if wait_turn():  # other items' calls ran meanwhile: what they answered is not asked
            found.update(self.store.lookup(misses))
            misses, tokens, ids = _without(found, misses, tokens, ids)
        hits = len(keys) - len(misses)  # the bar counts the misses, computed now
        self.store.count_hits(hits)
        collator = Collator(range(len(misses)), sort_key=tokens.__getitem__,
                            group_key=None if groups is None else
                            (lambda m: groups[todo[misses[m]]]),
                            batch_size=self.call_size)
        if stream:  # longest first, as the Collator orders them
            answers = ((collator.order[k], v) for k, v in
                       stream([todo[misses[m]] for m in collator.order],
                              [ids[m] for m in collator.order]))
        else:
            answers = (pair for batch in collator for pair in
                       zip(batch, compute([requests[todo[misses[m]]] for m in batch])))
        with progress_bar(f"{op} {self.alias}" + (f" ({hits:,} cached)" if hits else ""),
                          len(misses), covers_inner=True) as advance:
            for done in overlapped(answers):  # committed as they come: a kill keeps them
                chunk = [(misses[m], v) for m, v in done]
                self.backend_calls += len(chunk)
                found.update(chunk)
                self.store.commit(op, self.alias, chunk)
                advance(len(chunk))
                check_turn()  # an executor that stopped: the engine stops at its next answer
        return [found[k] for k in keys]

    def _checked(self, todo: dict[str, int], texts: list[str], reserved: int, *,
                 tokenize: bool) -> tuple[list[str], list[int], list[list[int]] | None]:
        """The keys to compute (`todo`: each one's first request), their prompts' token counts
        and, with `tokenize`, token ids; PromptTooLongError names the caller's request."""
        misses = list(todo)
        miss_texts = [texts[todo[k]] for k in misses]
        ids = self.inner.tokenize(miss_texts) if tokenize else None
        tokens = [len(x) for x in ids] if ids is not None else self.count_tokens(miss_texts)
        try:
            check_lengths(tokens, self.max_context, reserved=reserved)
        except PromptTooLongError as error:  # name the caller's request, not the miss
            raise replace(error, index=todo[misses[error.index]]) from None
        return misses, tokens, ids


def _without(found: dict, misses: list[str], tokens: list[int], ids: list | None
             ) -> tuple[list[str], list[int], list | None]:
    """`misses` and their token counts and ids, less the keys `found` holds."""
    kept = [m for m, key in enumerate(misses) if key not in found]
    return ([misses[m] for m in kept], [tokens[m] for m in kept],
            None if ids is None else [ids[m] for m in kept])


def _hash(payload: dict) -> str:
    return hashlib.sha256(_json(payload).encode()).hexdigest()


def _hashes(shared: dict, field: str, values: list[str]) -> list[str]:
    """`_hash({**shared, field: value})` of each of `values` (strings): the JSON around the
    value encoded once, the value's own JSON put in its place."""
    hole = _json(_HOLE)
    around = _json({**shared, field: _HOLE})
    if around.count(hole) != 1:  # the marker is in `shared` too
        return [_hash({**shared, field: value}) for value in values]
    head, _, tail = around.partition(hole)
    return [hashlib.sha256((head + _json(value) + tail).encode()).hexdigest() for value in values]


def _json(payload) -> str:
    """The JSON a cache key hashes: keys sorted, compact, not ASCII-escaped."""
    return json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


#: a string no prompt is expected to be, marking where `_hashes` puts each value
_HOLE = "\x00labeler-cache-key-value\x00"
