"""Batched LLM calls for one model over one unit of work, each distinct request asked once;
a call kind (its `what`) may be routed to the same model loaded otherwise (another dtype)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import replace
from typing import Any

from labeler.errors import InputError, PromptTooLongError
from labeler.llm.base import (
    AttentionRequest,
    AttentionResult,
    Backend,
    Chat,
    ChoiceRequest,
    Completion,
    LoglikelihoodRequest,
    Sampling,
)
from labeler.progress import info


class Calls:
    """One model's calls for one shard: batched, and a request already made is not sent again
    (the call cache does the same across runs; this also serves uncached backends). Every
    backend refuses a prompt too long for its window before any batch runs; Calls names the
    query in that error. `route(what)` gives the backend a call kind is asked of where it is
    not this one (None: this one), as the utility paper's scripts each load the model in their
    own dtype; each routed backend keeps its own requests."""

    def __init__(self, backend: Backend,
                 route: Callable[[str], Backend | None] | None = None) -> None:
        self.backend = backend
        self.alias = backend.alias
        self.route = route
        self._seen: dict[Hashable, Any] = {}
        self._routed: dict[int, Calls] = {}

    def of(self, what: str) -> Calls:
        """The calls a call kind is asked through: these, or its routed backend's."""
        backend = None if self.route is None else self.route(what)
        if backend is None or backend is self.backend:
            return self
        return self._routed.setdefault(id(backend), Calls(backend))

    def generate(self, prompts: list[Chat], sampling: Sampling, what: str,
                 names: Sequence[str]) -> list[list[Completion]]:
        """`sampling.n` completions per prompt (each saying whether it stopped at the cap), in
        one batched call; `names[i]` (e.g. the qid) names prompt i in an error."""
        calls = self.of(what)
        return calls._ask(prompts, names, ("generate", sampling), what,
                          lambda new: calls.backend.generate(new, sampling))

    def loglikelihood(self, requests: list[LoglikelihoodRequest], what: str,
                      names: Sequence[str]) -> list[float]:
        """log P(continuation | context) per request, in one batched call."""
        calls = self.of(what)
        return calls._ask(requests, names, ("loglikelihood",), what, calls.backend.loglikelihood)

    def choice_probs(self, requests: list[ChoiceRequest], what: str,
                     names: Sequence[str]) -> list[dict[str, float]]:
        """Next-token probability of each choice per request, in one batched call."""
        calls = self.of(what)
        return calls._ask(requests, names, ("choice_probs",), what, calls.backend.choice_probs)

    def loglikelihood_rolling(self, texts: list[str], what: str,
                              names: Sequence[str]) -> list[float]:
        """Summed log-probability of every token of each plain text, in one batched call."""
        calls = self.of(what)
        return calls._ask(texts, names, ("loglikelihood_rolling",), what,
                          calls.backend.loglikelihood_rolling)

    def attention(self, requests: list[AttentionRequest], what: str,
                  names: Sequence[str]) -> list[AttentionResult]:
        """Each prompt's greedy answer and its attention to each span, in one batched call."""
        calls = self.of(what)
        return calls._ask(requests, names, ("attention",), what, calls.backend.attention)

    def _ask(self, requests: list, names: Sequence[str], op: tuple, what: str,
             compute) -> list:
        if len(names) != len(requests):
            raise InputError(f"{len(names)} names for {len(requests)} requests",
                             field_name="names")
        keys = [(op, r) for r in requests]
        first = {k: i for i, k in reversed(list(enumerate(keys))) if k not in self._seen}
        new = sorted(first, key=first.get)
        if new:
            info(f"{what}: {len(new)} requests")
            try:
                answers = compute([r for _, r in new])
            except PromptTooLongError as error:  # raised before any batch: name the query
                raise replace(error, name=names[first[new[error.index]]]) from None
            self._seen.update(zip(new, answers))
        return [self._seen[k] for k in keys]
