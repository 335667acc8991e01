"""The `openai` backend: a model served behind an OpenAI-compatible API (`vllm serve`, SGLang,
a load balancer over many of them, a hosted API), labeler as its client.

`--llm` names the model as the server serves it (`vllm serve ... --served-model-name`) and as
labeler knows it (an alias, Hub id or local model), whose tokenizer renders and counts the
prompts here, so that every prompt is checked against the served window before any request.
The start-up probe (GET /models) turns a wrong key, URL or model into one line before a build
starts. The key comes from OPENAI_API_KEY and goes only into the Authorization header.

`generate` sends chat completions (the server's chat template) or, with prompt format
"text", completions with labeler's rendered prompt as token ids, byte-exact as the
in-process vllm backend runs it; sampling seeds per prompt with `row_seed` as vllm does, and
finish_reason "length" is `capped`. `loglikelihood` and `choice_probs` read vLLM's
`prompt_logprobs` of completions, as the in-process backend does; a server that is not vLLM
refuses them before any request. What names the model in the cache key: the served id, the
model the server loaded (its `root`), the server's version and the prompt format.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator
from pathlib import Path

from labeler import settings
from labeler.errors import InputError, ModelLoadError
from labeler.llm.base import (
    Backend,
    Chat,
    Completion,
    Prompt,
    Sampling,
    check_lengths,
)
from labeler.llm.models import ModelSpec, model_revision
from labeler.llm.prompt_logprobs import PromptLogprobScoring
from labeler.llm.prompts import (
    cut_at_stop,
    encode,
    render_chat,
    row_seed,
)
from labeler.llm.served import Server
from labeler.progress import info, progress_bar, transformers_quiet

#: requests in flight by default: a vLLM server batches up to 256 sequences on a GPU
CONCURRENCY = 64

# One forward pass that scores the prompt, as the vllm backend's _SCORE
_SCORE = {"max_tokens": 1, "temperature": 0.0, "prompt_logprobs": 1}


class OpenAIBackend(PromptLogprobScoring, Backend):
    """A served model answering the contract's operations over HTTP, `concurrency` requests
    in flight; the call cache commits each answer as it arrives (`stream`)."""

    default_batch_size = CONCURRENCY  # requests a call: its --concurrency, in flight at once

    def __init__(self, spec: ModelSpec, *, batch_size: int | None = None,
                 device: str | None = None, cache_dir: str | Path | None = None,
                 base_url: str | None = None, prompt_format: str = "chat",
                 concurrency: int | None = None) -> None:
        if device is not None:
            raise InputError("the openai backend runs the model on its server: it takes no "
                             "--device", field_name="device")
        url = base_url or settings.openai_base_url()
        if not url:
            raise InputError("the openai backend needs the server's URL",
                             field_name="base_url", hint="add --base-url http://host:8000/v1 "
                             "or set OPENAI_BASE_URL")
        self.spec, self.alias, self.prompt_format = spec, spec.alias, prompt_format
        self.server = Server(url, settings.openai_api_key(),
                             concurrency=concurrency or CONCURRENCY)
        served = _served(self.server.probe(spec.alias), spec)
        self.served_id, self.model_id = served["id"], served["id"]
        self.version = self.server.version()  # vLLM's; None: not a vLLM server
        if prompt_format == "text" and self.version is None:
            raise ModelLoadError(spec.alias, f"{url} is not a vLLM server: --prompt-format "
                                 "text sends token ids, which only vLLM takes",
                                 hint="leave out --prompt-format text")
        self.tokenizer = _tokenizer(spec, cache_dir)
        self.max_context = served.get("max_model_len") or _window(self.tokenizer, spec)
        self.root = Path(str(served.get("root") or served["id"])).name
        self.revision = hashlib.sha256(json.dumps(
            [self.served_id, self.root, self.version]).encode()).hexdigest()[:16]
        self.batch_size = batch_size or self.server.concurrency
        self.structured_output = self.version is not None  # vLLM's structured_outputs

    def key(self) -> dict:
        return {"model_id": self.served_id, "root": self.root, "server": self.version,
                "backend": "openai", "prompt_format": self.prompt_format}

    def render(self, prompt: Chat) -> str:
        return render_chat(self.tokenizer, prompt)

    def tokenize(self, texts: list[str]) -> list[list[int]]:
        return encode(self.tokenizer, texts)

    def generate(self, prompts: list[Chat], sampling: Sampling) -> list[list[Completion]]:
        answers: list = [None] * len(prompts)
        for i, completions in self.stream(self.prepare(prompts), sampling):
            answers[i] = completions
        return answers

    def stream(self, prompts: list[Prompt], sampling: Sampling
               ) -> Iterator[tuple[int, list[Completion]]]:
        """Every prompt's request in flight at once (`concurrency` at a time), each answer
        yielded as it arrives, so the call cache commits it then."""
        check_lengths([len(p.ids) for p in prompts], self.max_context,
                      reserved=sampling.max_tokens)
        if sampling.top_k and self.version is None:
            raise InputError("top_k is not in the OpenAI API: only a vLLM server takes it",
                             field_name="top_k")
        text = self.prompt_format == "text"
        bodies = [{**self._sampling(sampling, p.text),
                   **({"prompt": list(p.ids)} if text else self._messages(p.chat))}
                  for p in prompts]
        for i, answer in self._answers("/completions" if text else "/chat/completions",
                                       bodies, "generate"):
            yield i, [Completion(cut_at_stop(_text(c), sampling.stop),
                                 c["finish_reason"] == "length")
                      for c in sorted(answer["choices"], key=lambda c: c["index"])]

    def _score_ids(self, prompts: list[list[int]], operation: str, groups: list) -> list:
        self._needs_prompt_logprobs(operation)
        return self._ask("/completions", [self._score(ids) for ids in prompts], operation)

    @staticmethod
    def _prompt_logprob(output: dict, position: int, token: int) -> float:
        return output["choices"][0]["prompt_logprobs"][position][str(token)]["logprob"]

    def _sampling(self, sampling: Sampling, rendered: str) -> dict:
        """The request's sampling fields: OpenAI's, and vLLM's top_k and structured outputs."""
        body = {"model": self.served_id, "n": sampling.n, "temperature": sampling.temperature,
                "top_p": sampling.top_p, "max_tokens": sampling.max_tokens}
        if sampling.stop:
            body["stop"] = list(sampling.stop)
        if not sampling.greedy:  # per prompt, as the vllm backend seeds it
            body["seed"] = row_seed(sampling.seed, rendered, 0)
        if sampling.top_k:
            body["top_k"] = sampling.top_k
        if sampling.json_schema is not None:
            if not self.structured_output:
                raise InputError("this server cannot constrain output to a JSON schema",
                                 field_name="json_schema")
            body["structured_outputs"] = {"json": json.loads(sampling.json_schema)}
        return body

    def _messages(self, prompt: Chat) -> dict:
        """A chat's messages; a final assistant message is a reply the server continues
        (vLLM's continue_final_message)."""
        render_chat(self.tokenizer, prompt)  # the same checks of roles as every backend
        body = {"messages": [{"role": m.role, "content": m.content} for m in prompt]}
        if prompt[-1].role == "assistant":
            body |= {"continue_final_message": True, "add_generation_prompt": False}
        return body

    def _score(self, ids: list[int]) -> dict:
        return {"model": self.served_id, "prompt": ids, **_SCORE}

    def refusal(self, operation: str) -> str | None:
        """The scoring operations read vLLM's prompt_logprobs, which no other server gives."""
        if operation in ("loglikelihood", "choice_probs") and self.version is None:
            return (f"a vLLM server's prompt_logprobs; the server at {self.server.base_url} "
                    "is not one")
        return None

    def _needs_prompt_logprobs(self, operation: str) -> None:
        if why := self.refusal(operation):
            raise InputError(f"{operation} needs {why}", field_name="backend",
                             hint="serve the model with vLLM, or use --backend hf or vllm")

    def _ask(self, path: str, bodies: list[dict], operation: str) -> list[dict]:
        """Every body's answer, in order."""
        answers: list = [None] * len(bodies)
        for i, answer in self._answers(path, bodies, operation):
            answers[i] = answer
        return answers

    def _answers(self, path: str, bodies: list[dict], operation: str
                 ) -> Iterator[tuple[int, dict]]:
        """(index, answer) of each body as it arrives, many in flight, with a progress line
        and a closing line of requests/s and tokens/s."""
        tokens, start = 0, time.perf_counter()
        with progress_bar(f"{operation} {self.alias} (served)", len(bodies)) as advance:
            for i, answer in self.server.post_all(path, bodies):
                tokens += (answer.get("usage") or {}).get("total_tokens", 0)
                advance(1)
                yield i, answer
        seconds = max(time.perf_counter() - start, 1e-9)
        if bodies:
            info(f"{operation} {self.alias}: {len(bodies)} requests, "
                 f"{len(bodies) / seconds:.1f} requests/s, {tokens / seconds:.0f} tokens/s")


def _served(models: list[dict], spec: ModelSpec) -> dict:
    """The served model `spec` names: by its alias, its id or its file's name."""
    names = {spec.alias, spec.model_id, spec.identity}
    for model in models:
        if model.get("id") in names:
            return model
    served = ", ".join(sorted(str(m.get("id")) for m in models)) or "none"
    raise ModelLoadError(spec.alias, f"the server does not serve it (it serves: {served})",
                         hint="name the model as the server does (vllm serve "
                              "--served-model-name)")


def _tokenizer(spec: ModelSpec, cache_dir: str | Path | None):
    """The model's own tokenizer (a bundled GGUF's from its converted folder), for rendering
    and counting prompts here."""
    from transformers import AutoTokenizer

    import labeler.llm.lean_transformers  # noqa: F401  (first: keeps scikit-learn unimported)
    from labeler.llm.gguf import gguf_snapshot

    try:
        source = gguf_snapshot(spec, model_revision(spec), cache_dir) if spec.gguf \
            else spec.model_id
        with transformers_quiet():
            tokenizer = AutoTokenizer.from_pretrained(source)
    except (OSError, ValueError) as exc:
        raise ModelLoadError(spec.alias, f"its tokenizer does not load here: "
                             f"{str(exc).splitlines()[0]}", hint="the openai backend renders "
                             "and counts prompts with the model's own tokenizer") from exc
    if not tokenizer.chat_template:
        raise ModelLoadError(spec.alias, "the tokenizer has no chat template")
    return tokenizer


def _window(tokenizer, spec: ModelSpec) -> int:
    """The context window where the server does not say it: the tokenizer's model_max_length."""
    window = tokenizer.model_max_length
    if not 0 < window < 10**8:
        raise ModelLoadError(spec.alias, "neither the server nor the tokenizer gives the "
                             "model's context window")
    return window


def _text(choice: dict) -> str:
    return choice["text"] if "text" in choice else choice["message"]["content"] or ""
