"""A backend that answers at once, for measuring labeler's own cost a call (not a test double
of the suite: benchmarks register it as any plugin registers a backend, an entry point of the
group `labeler.backends` in an installed package's metadata).

`instant` renders and tokenizes with the bundled SmolLM2's real chat template and tokenizer,
as `VLLMBackend` does before its engine; `instant-text` joins a chat's messages and counts its
words by their spaces (a tokenizer that costs next to nothing). Either answers a prompt with
its first word that starts with "ans" (the benchmarks' synthetic answers), else "unknown".
`simulated` is `instant` behind an engine that spends `REQUEST_SECONDS` on each request beside
this process, as vllm's engine core works in a process of its own, and counts that time as
`busy`.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from labeler.llm.base import Backend, Chat, Completion, Sampling
from labeler.llm.models import ModelSpec, model_revision

#: the names the benchmarks build with
NAMES = {"instant": "instant_backend:InstantBackend",
         "instant-text": "instant_backend:InstantTextBackend",
         "simulated": "instant_backend:SimulatedEngine"}

#: what the simulated engine spends on each request, in seconds
REQUEST_SECONDS = 8 / 1500


def register(names: dict[str, str] = NAMES, package: str = "labeler-bench-backends") -> None:
    """Make the backends `names` ({name: "module:class"}) loadable as an installed package's
    entry points make them: its metadata in a folder put on sys.path."""
    site = Path(tempfile.mkdtemp(prefix="bench-backends-"))
    info = site / f"{package.replace('-', '_')}-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 0\n")
    (info / "entry_points.txt").write_text(
        "[labeler.backends]\n" + "".join(f"{name} = {value}\n" for name, value in names.items()))
    sys.path.insert(0, str(site))


class InstantTextBackend(Backend):
    """Answers at once; a chat is its messages' contents, a token a word (counted by its
    spaces)."""

    max_context = 1_000_000
    default_batch_size = 256  # requests a call; it takes no dtype and runs on no GPU

    def __init__(self, spec: ModelSpec, *, batch_size: int | None = None, device=None,
                 cache_dir=None, **options) -> None:
        self.spec, self.model_id, self.alias = spec, spec.model_id, spec.alias
        self.revision = model_revision(spec)
        self.batch_size = batch_size or self.default_batch_size
        self.answered = 0  # prompts answered
        self.kept: list[str] | None = None  # where set, each streamed prompt's text is added

    def key(self) -> dict:
        return {"model_id": self.spec.identity, "revision": self.revision,
                "backend": type(self).__name__, "dtype": "none", "device": "cpu"}

    def render(self, prompt: Chat) -> str:
        return "\n".join(m.content for m in prompt)

    def tokenize(self, texts: list[str]) -> list[list[int]]:
        return [[0] * (text.count(" ") + 1) for text in texts]  # a token a word, about

    def stream(self, prompts, sampling: Sampling):
        if self.kept is not None:
            self.kept += (prompt.text for prompt in prompts)
        for k, prompt in enumerate(prompts):  # the ids the cache made, not tokenized again
            self.answered += 1
            yield k, [Completion(_answer(prompt.text))] * sampling.n

    def generate(self, prompts: list[Chat], sampling: Sampling) -> list[list[Completion]]:
        self.answered += len(prompts)
        return [[Completion(_answer(self.render(p)))] * sampling.n for p in prompts]

    def loglikelihood(self, requests):
        raise NotImplementedError

    def choice_probs(self, requests):
        raise NotImplementedError


class InstantBackend(InstantTextBackend):
    """Answers at once, rendering and tokenizing with the bundled model's own tokenizer."""

    def __init__(self, spec: ModelSpec, **options) -> None:
        super().__init__(spec, **options)
        from transformers import AutoTokenizer

        from labeler.llm.gguf import gguf_snapshot

        # the model's converted folder in the default cache: converted once, on the first run
        self.tokenizer = AutoTokenizer.from_pretrained(gguf_snapshot(spec, self.revision, None))
        self.max_context = 8192

    def render(self, prompt: Chat) -> str:
        from labeler.llm.prompts import render_chat

        return render_chat(self.tokenizer, prompt)

    def tokenize(self, texts: list[str]) -> list[list[int]]:
        from labeler.llm.prompts import encode

        return encode(self.tokenizer, texts)


class SimulatedEngine(InstantBackend):
    """`instant` behind an engine beside this process (as vllm's engine core runs in a process
    of its own, a call's requests queued in it): a call's requests are given to it when its
    stream starts, and each takes `REQUEST_SECONDS` of the engine's time after the last; the
    stream gives each answer once the engine has made it. So the engine waits only while it
    holds no request, not for this process's threads or cores. `busy` sums the engine's time,
    `first` and `last` are when it took its first request and made its last answer."""

    def __init__(self, spec: ModelSpec, **options) -> None:
        super().__init__(spec, **options)
        self.busy, self.first, self.last = 0.0, None, None

    def stream(self, prompts, sampling: Sampling):
        start = max(time.perf_counter(), self.last or 0.0)
        self.first = self.first or start
        for k, prompt in enumerate(prompts):
            self.last = start + (k + 1) * REQUEST_SECONDS  # when the engine has made it
            time.sleep(max(0.0, self.last - time.perf_counter()))  # releases the GIL
            self.busy += REQUEST_SECONDS
            self.answered += 1
            yield k, [Completion(_answer(prompt.text))] * sampling.n


def _answer(text: str) -> str:
    start = text.find(" ans")
    return text[start + 1:].split(maxsplit=1)[0] if start >= 0 else "unknown"
