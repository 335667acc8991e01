"""`recorded-vllm`: the vllm backend already loaded in this process, registered as a backend of
its own, that keeps each streamed `generate` call's prompts and sampling and the time the call
kept the engine running (bench_vllm then asks vllm's own `LLM.generate` the same prompts)."""

from __future__ import annotations

import time

from instant_backend import register as register_backends

from labeler.llm import load_backend
from labeler.llm.base import Backend, Sampling
from labeler.llm.models import ModelSpec

NAME = "recorded-vllm"

#: (prompts, sampling, seconds) of every streamed call, in order
CALLS: list[tuple[list, Sampling, float]] = []


def register() -> None:
    register_backends({NAME: "recorded_backend:RecordedVLLM"}, "labeler-bench-recorded")


class RecordedVLLM(Backend):
    """The loaded vllm backend of `spec`, recording its streamed calls in CALLS."""

    def __init__(self, spec: ModelSpec, *, batch_size: int | None = None, **options) -> None:
        self.inner = load_backend(spec.model_id, backend="vllm", batch_size=batch_size,
                                  use_cache=False)
        for name in ("model_id", "revision", "alias", "batch_size", "max_context",
                     "structured_output"):
            setattr(self, name, getattr(self.inner, name))

    def key(self) -> dict:
        return {**self.inner.key(), "backend": NAME}

    def render(self, prompt):
        return self.inner.render(prompt)

    def tokenize(self, texts):
        return self.inner.tokenize(texts)

    def stream(self, prompts, sampling: Sampling):
        start = time.perf_counter()
        yield from self.inner.stream(prompts, sampling)
        CALLS.append((prompts, sampling, time.perf_counter() - start))

    def generate(self, prompts, sampling):
        return self.inner.generate(prompts, sampling)

    def loglikelihood(self, requests):
        return self.inner.loglikelihood(requests)

    def choice_probs(self, requests):
        return self.inner.choice_probs(requests)
