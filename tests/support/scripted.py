"""The one scripted LLM backend of the test suite, for unit tests of a method's parsing and
arithmetic. It answers by the rules a test gives, from the rendered prompt, and records every
batch it is sent; end-to-end tests use the real bundled SmolLM2 instead."""

from __future__ import annotations

from collections.abc import Callable

from labeler.llm.base import (
    CHOICE_TOKENS,
    Backend,
    Chat,
    ChoiceRequest,
    Completion,
    LoglikelihoodRequest,
    Sampling,
    check_lengths,
)


class ScriptedBackend(Backend):
    """`answer(text) -> str` for generate (every sample alike; a list gives the samples one by
    one, as many as asked for), `loglik(context, continuation)
    -> float` for loglikelihood, `probs(text, choices) -> {choice: p}` for choice_probs; text
    is the rendered prompt: its messages' contents joined by newlines. An operation without a
    rule fails the test; `structured_output` says whether it takes a `Sampling.json_schema`
    (the `answer` rule then plays the constrained model). Like every backend it refuses, before recording or answering a call,
    a prompt too long for `max_context`. Tokens are whitespace-separated words: an answer of more words than
    `max_tokens` is cut to its first `max_tokens` and comes back capped."""

    model_id, revision, alias, batch_size = "scripted", "0", "scripted", 8

    def __init__(self, *, answer: Callable | None = None, loglik: Callable | None = None,
                 probs: Callable | None = None, max_context: int = 1_000_000,
                 structured_output: bool = False) -> None:
        self.rules = {"generate": answer, "loglikelihood": loglik, "choice_probs": probs}
        self.structured_output = structured_output  # accepts Sampling.json_schema (the rule
        # answers as the constrained model would)
        self.max_context = max_context  # in tokens, which here are whitespace-separated words
        self.calls: list[tuple[str, list]] = []  # (operation, the requests of one call)
        self.schemas: list[str | None] = []  # the json_schema of each generate call

    def batches(self, op: str) -> list[list]:
        """The requests of every call of `op`, in call order."""
        return [requests for name, requests in self.calls if name == op]

    def render(self, prompt: Chat) -> str:
        return "\n".join(m.content for m in prompt)

    def tokenize(self, texts: list[str]) -> list[list[int]]:
        """A word's length stands for its token id."""
        return [[len(word) for word in t.split()] for t in texts]

    def generate(self, prompts: list[Chat], sampling: Sampling) -> list[list[Completion]]:
        self._fits([self.render(p) for p in prompts], sampling.max_tokens)
        if sampling.json_schema is not None and not self.structured_output:
            raise AssertionError("a JSON schema sent to a backend without structured_output")
        self.schemas.append(sampling.json_schema)
        rule = self._rule("generate", prompts)

        def samples(answer: str | list[str]) -> list[Completion]:
            answers = answer if isinstance(answer, list) else [answer] * sampling.n
            return [_capped(a, sampling.max_tokens) for a in answers[:sampling.n]]

        return [samples(rule(self.render(p))) for p in prompts]

    def loglikelihood(self, requests: list[LoglikelihoodRequest]) -> list[float]:
        self._fits([self.render(r.context) + " " + r.continuation for r in requests], 0)
        rule = self._rule("loglikelihood", requests)
        return [rule(self.render(r.context), r.continuation) for r in requests]

    def choice_probs(self, requests: list[ChoiceRequest]) -> list[dict[str, float]]:
        self._fits([self.render(r.prompt) for r in requests], CHOICE_TOKENS)
        rule = self._rule("choice_probs", requests)
        return [rule(self.render(r.prompt), r.choices) for r in requests]

    def _fits(self, texts: list[str], reserved: int) -> None:
        check_lengths(self.count_tokens(texts), self.max_context, reserved=reserved)

    def _rule(self, op: str, requests: list) -> Callable:
        if self.rules[op] is None:
            raise AssertionError(f"this test scripted no answer for {op}")
        self.calls.append((op, list(requests)))
        return self.rules[op]


def _capped(answer: str, max_tokens: int) -> Completion:
    words = answer.split()
    if len(words) <= max_tokens:
        return Completion(answer)
    return Completion(" " + " ".join(words[:max_tokens]), capped=True)
