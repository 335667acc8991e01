"""The `openai` backend: a model served behind an OpenAI-compatible API (`vllm serve`,
`transformers serve`, SGLang, a gateway, a hosted API), labeler as its client.

`--llm` names the model as labeler knows it (an alias, Hub id or local model) and
`--served-model` as the server does (default: the first of labeler's names the server
lists). Its tokenizer, where it loads here, renders and counts the prompts, so every prompt is
checked against the served window before any request; where none loads (a hosted model) the
chat's messages key the cache and the server checks lengths: a prompt it refuses as too long
fails that request alone (`PromptRefusedError`, raised once the call's other requests are
answered), and is not sent again by this process. The start-up probe (`labeler.llm.capabilities`) turns a wrong key or URL
into one line and learns which ways the server offers; the key comes from OPENAI_API_KEY and
goes only into the Authorization header.

`generate` sends chat completions (the server's chat template) or, with prompt format
"text", completions with labeler's rendered prompt as token ids, byte-exact as the
in-process vllm backend runs it (vLLM only); sampling seeds per prompt with `row_seed` as vllm
does, and finish_reason "length" is `capped`. `loglikelihood` and `choice_probs` read the
prompt's log-probabilities (vLLM's `prompt_logprobs`, else `echo` with `logprobs`), and
`choice_probs` else the first answer token's chat `top_logprobs`; an operation the server
offers no way to is refused before any request. What names the model in the cache key: the
served id, the model the server loaded (its `root`), the server's version and the prompt
format.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Iterator
from pathlib import Path

from labeler import settings
from labeler.errors import InputError, ModelLoadError, PromptRefusedError
from labeler.llm.base import (
    Backend,
    Chat,
    ChoiceRequest,
    Completion,
    LoglikelihoodRequest,
    Prompt,
    Sampling,
    check_lengths,
)
from labeler.llm.capabilities import TOP_LOGPROBS, probe
from labeler.llm.models import ModelSpec, model_revision
from labeler.llm.prompt_logprobs import PromptLogprobScoring
from labeler.llm.prompts import (
    check_roles,
    choice_ids,
    cut_at_stop,
    encode,
    render_chat,
    row_seed,
)
from labeler.llm.served import Refusal, Server, ServerError
from labeler.llm.served_limits import Limits
from labeler.network import quiet_retries
from labeler.progress import info, progress_bar, transformers_quiet

#: requests in flight by default: a vLLM server batches up to 256 sequences on a GPU
CONCURRENCY = 64
#: the window where neither the server nor a tokenizer says it: the server checks lengths
UNKNOWN_WINDOW = 2**31 - 1
#: how far above 0 a served log-probability may round (float32 sums) and still be one
LOGPROB_SLACK = 1e-3

# One forward pass that scores the prompt, as the vllm backend's _SCORE; or lm-eval's echo
_SCORE = {"prompt_logprobs": {"max_tokens": 1, "temperature": 0.0, "prompt_logprobs": 1},
          "echo": {"max_tokens": 1, "temperature": 0.0, "echo": True, "logprobs": 1}}
#: the first answer token's most likely tokens, for P(choice) from chat top_logprobs
_TOP = {"max_tokens": 1, "temperature": 0.0, "logprobs": True, "top_logprobs": TOP_LOGPROBS}


class OpenAIBackend(PromptLogprobScoring, Backend):
    """A served model answering the contract's operations over HTTP, `concurrency` requests
    in flight; the call cache commits each answer as it arrives (`stream`)."""

    default_batch_size = CONCURRENCY  # requests a call: its --concurrency, in flight at once

    def __init__(self, spec: ModelSpec, *, batch_size: int | None = None,
                 device: str | None = None, cache_dir: str | Path | None = None,
                 base_url: str | None = None, prompt_format: str = "chat",
                 concurrency: int | None = None, served_model: str | None = None,
                 max_rps: float | None = None, max_tpm: int | None = None) -> None:
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
                             concurrency=concurrency or CONCURRENCY,
                             limits=Limits(max_rps, max_tpm))
        names = (served_model,) if served_model else (spec.alias, spec.model_id, spec.identity)
        self.served_id, self.capabilities = probe(self.server, names, spec.alias)
        self.model_id = self.served_id
        self.version = self.capabilities.version  # vLLM's; None: not a vLLM server
        if prompt_format == "text" and self.version is None:
            raise ModelLoadError(spec.alias, f"{url} is not a vLLM server: --prompt-format "
                                 "text sends token ids, which only vLLM takes",
                                 hint="leave out --prompt-format text")
        self.tokenizer = _tokenizer(spec, cache_dir, needed=prompt_format == "text")
        served = self.capabilities.listed or {}
        window = served.get("max_model_len")  # a window that is no number: not said
        self.max_context = window if isinstance(window, int) and window > 0 else (
            _window(self.tokenizer) if self.tokenizer else UNKNOWN_WINDOW)
        self.root = Path(str(served.get("root") or self.served_id)).name
        self.revision = hashlib.sha256(json.dumps(
            [self.served_id, self.root, self.version]).encode()).hexdigest()[:16]
        self.batch_size = batch_size or self.server.concurrency
        self.structured_output = self.version is not None  # vLLM's structured_outputs
        self.used: set[str] = set()  # the ways this process served operations by
        self.refused: dict[str, str] = {}  # request body's hash -> the server's "too long"

    def key(self) -> dict:
        """What names the served model; where the server reports no version (a hosted API,
        transformers serve) nothing but its URL tells one provider's model of a name from
        another's, so the URL's hash is in the key too (never the URL, which may hold a
        password or an internal host, nor the API key)."""
        where = {} if self.version else {"url_sha256": hashlib.sha256(
            self.server.base_url.encode()).hexdigest()[:16]}
        return {"model_id": self.served_id, "root": self.root, "server": self.version,
                "backend": "openai", "prompt_format": self.prompt_format, **where}

    def report(self) -> dict:
        """For the manifest: what the server offers and the ways this process used."""
        return {**self.capabilities.describe(), "used": sorted(self.used),
                "tokenizer": self.tokenizer is not None}

    def render(self, prompt: Chat) -> str:
        """The chat's text through the model's template; without a tokenizer its messages'
        JSON (what keys a hosted model's answers)."""
        if self.tokenizer is None:
            check_roles(prompt)
            return json.dumps([[m.role, m.content] for m in prompt], ensure_ascii=False)
        return render_chat(self.tokenizer, prompt)

    def tokenize(self, texts: list[str]) -> list[list[int]]:
        """Token ids; without a tokenizer none (the server checks lengths)."""
        return encode(self.tokenizer, texts) if self.tokenizer else [[] for _ in texts]

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
        self.used.add("completions" if text else "chat")
        for i, answer in self._answers("/completions" if text else "/chat/completions",
                                       bodies, "generate"):
            yield i, [Completion(cut_at_stop(_text(c), sampling.stop),
                                 c.get("finish_reason") == "length")
                      for c in sorted(answer["choices"], key=lambda c: c.get("index", 0))]

    def loglikelihood(self, requests: list[LoglikelihoodRequest]) -> list[float]:
        self._check("loglikelihood")  # before the prompts are tokenized
        return super().loglikelihood(requests)

    def choice_probs(self, requests: list[ChoiceRequest]) -> list[dict[str, float]]:
        """From the prompt's log-probabilities where the server gives them, else from the
        first answer token's chat top_logprobs (a choice not among them: 0)."""
        if self._check("choice_probs") != "top_logprobs" and self.tokenizer is not None:
            return super().choice_probs(requests)
        self.used.add("top_logprobs")
        firsts = [self._first_tokens(r) for r in requests]
        bodies = [{"model": self.served_id, **_TOP, **self._messages(r.prompt)}
                  for r in requests]
        out = []
        for n, (first, answer) in enumerate(zip(firsts, self._ask(
                "/chat/completions", bodies, "choice_probs")), 1):
            top = _top_logprobs(answer)
            if why := _unusable(list(top.values())):
                raise ServerError(f"{self.server.base_url}/chat/completions", f"unusable "
                                  f"answer to choice_probs {n} of {len(bodies)}: {why}")
            out.append({c: math.exp(top[t]) if t in top else 0.0 for c, t in first.items()})
        return out

    def _first_tokens(self, request: ChoiceRequest) -> dict[str, str]:
        """Each choice's first token as the server spells it in top_logprobs: decoded by the
        tokenizer where there is one, else the choice itself."""
        if self.tokenizer is None:
            return {c: c for c in request.choices}
        ids = choice_ids(self.tokenizer, self.render(request.prompt), request.choices)
        return {c: self.tokenizer.decode([i]) for c, i in zip(request.choices, ids)}

    def _score_ids(self, prompts: list[list[int]], operation: str, groups: list) -> list:
        """Each prompt's tokens' log-probabilities, read the way the server was asked (an
        echoed answer of vLLM's holds prompt_logprobs too, which another server's lacks);
        one whose log-probabilities do not cover the prompt, or are no log-probabilities
        (NaN, infinite, positive), stops the call in one line."""
        way = self._check(operation)
        self.used.add(way)
        answers = self._ask("/completions", [{"model": self.served_id, "prompt": ids,
                                              **_SCORE[way]} for ids in prompts], operation)
        scored = []
        for n, (ids, answer) in enumerate(zip(prompts, answers), 1):
            try:
                scored.append(_prompt_scores(answer["choices"][0], ids, way,
                                             answer.get("usage")))
            except ValueError as why:
                raise ServerError(f"{self.server.base_url}/completions", f"unusable answer to "
                                  f"{operation} {n} of {len(prompts)}: {why}") from None
        return scored

    @staticmethod
    def _prompt_logprob(output: list, position: int, token: int) -> float:
        return output[position]  # the prompt's own token there (`_prompt_scores`)

    def _sampling(self, sampling: Sampling, rendered: str) -> dict:
        """The request's sampling fields: OpenAI's, and vLLM's top_k and structured outputs."""
        body = {"model": self.served_id, "temperature": sampling.temperature,
                "top_p": sampling.top_p, "max_tokens": sampling.max_tokens}
        if sampling.n > 1:  # a server that takes no n (transformers serve) takes the rest
            body["n"] = sampling.n
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
        self.render(prompt)  # the same checks of roles as every backend
        body = {"messages": [{"role": m.role, "content": m.content} for m in prompt]}
        if prompt[-1].role == "assistant":
            body |= {"continue_final_message": True, "add_generation_prompt": False}
        return body

    def refusal(self, operation: str) -> str | None:
        """The scoring operations need a way the server offers (`Capabilities.refusal`)."""
        return self.capabilities.refusal(operation, self.server.base_url,
                                         tokenizer=self.tokenizer is not None)

    def _check(self, operation: str) -> str | None:
        """The way `operation` is served; InputError, before any request, where none is."""
        if why := self.refusal(operation):
            raise InputError(f"{operation} needs {why}", field_name="backend",
                             hint="serve the model with vLLM, or use --backend hf or vllm")
        return self.capabilities.way(operation)

    def _ask(self, path: str, bodies: list[dict], operation: str) -> list[dict]:
        """Every body's answer, in order."""
        answers: list = [None] * len(bodies)
        for i, answer in self._answers(path, bodies, operation):
            answers[i] = answer
        return answers

    def _answers(self, path: str, bodies: list[dict], operation: str
                 ) -> Iterator[tuple[int, dict]]:
        """(index, answer) of each body as it arrives, many in flight, with a progress line
        and a closing line of requests/s and tokens/s. Bodies the server refused as too long
        (this call or before: `refused`) are raised as one `PromptRefusedError` at the end."""
        tokens, start = 0, time.perf_counter()
        keys = [hashlib.sha256(json.dumps(b, sort_keys=True).encode()).hexdigest()
                for b in bodies]
        asked = [i for i, key in enumerate(keys) if key not in self.refused]
        with progress_bar(f"{operation} {self.alias} (served)", len(asked)) as advance:
            try:
                for j, answer in self.server.post_all(path, [bodies[i] for i in asked],
                                                      operation):
                    tokens += (answer.get("usage") or {}).get("total_tokens", 0)
                    advance(1)
                    yield asked[j], answer
            except Refusal as refused:
                if not refused.too_long:
                    raise
                self.refused.update({keys[asked[j]]: refused.message for j in refused.indices})
        seconds = max(time.perf_counter() - start, 1e-9)
        if asked:
            info(f"{operation} {self.alias}: {len(asked)} requests, "
                 f"{len(asked) / seconds:.1f} requests/s, {tokens / seconds:.0f} tokens/s")
        if failed := [key for key in keys if key in self.refused]:
            raise PromptRefusedError(
                f"{self.server.base_url}{path} refused {len(failed)} of {len(bodies)} "
                f"{operation} prompts as too long for the model: {self.refused[failed[0]]}")


def _tokenizer(spec: ModelSpec, cache_dir: str | Path | None, *, needed: bool):
    """The model's own tokenizer (a bundled GGUF's from its converted folder), for rendering
    and counting prompts here; None, with a line saying so, where none loads and it is not
    `needed` (a hosted model: the server renders and counts)."""
    from transformers import AutoTokenizer

    import labeler.llm.lean_transformers  # noqa: F401  (first: keeps scikit-learn unimported)
    from labeler.llm.gguf import gguf_snapshot

    try:
        source = gguf_snapshot(spec, model_revision(spec), cache_dir) if spec.gguf \
            else spec.model_id
        with quiet_retries(), transformers_quiet():
            tokenizer = AutoTokenizer.from_pretrained(source)
    except (OSError, ValueError) as exc:
        if not needed:
            info(f"{spec.alias}: no tokenizer here ({str(exc).splitlines()[0][:120]}); its "
                 "chats' messages key the cache and the server checks their lengths")
            return None
        raise ModelLoadError(spec.alias, f"its tokenizer does not load here: "
                             f"{str(exc).splitlines()[0]}", hint="--prompt-format text "
                             "renders prompts with the model's own tokenizer") from exc
    if not tokenizer.chat_template:
        raise ModelLoadError(spec.alias, "the tokenizer has no chat template")
    return tokenizer


def _window(tokenizer) -> int:
    """The context window where the server does not say it: the tokenizer's model_max_length,
    else its model's max_position_embeddings; else UNKNOWN_WINDOW (the server checks)."""
    window = tokenizer.model_max_length
    if 0 < window < 10**8:
        return window
    from transformers import AutoConfig

    try:
        with quiet_retries(), transformers_quiet():
            config = AutoConfig.from_pretrained(tokenizer.name_or_path)
    except (OSError, ValueError):
        return UNKNOWN_WINDOW
    return getattr(config, "max_position_embeddings", None) or UNKNOWN_WINDOW


def _top_logprobs(answer: dict) -> dict:
    """The first answer token's top_logprobs, {token: logprob}: an entry without a token is
    none, one without a logprob has None (which `_unusable` names)."""
    content = (answer["choices"][0].get("logprobs") or {}).get("content") or [{}]
    entries = content[0].get("top_logprobs") if isinstance(content[0], dict) else None
    top: dict = {}
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and isinstance(entry.get("token"), str):
            top.setdefault(entry["token"], entry.get("logprob"))
    return top


def _prompt_scores(choice: dict, ids: list[int], way: str, usage=None) -> list:
    """The log-probability of each token of the prompt `ids` (None for the first, which
    nothing precedes) in a scored answer's `way`: vLLM's prompt_logprobs, or the echoed
    prompt's token_logprobs (then the one generated token's), read by position, so the
    server must have scored `ids` as sent (its `usage` counts as many prompt tokens, an echo
    holds no more than one token beyond them). ValueError saying why where they do not score
    the prompt: too few, too many, or a value that is no log-probability."""
    counted = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    if type(counted) is int and counted != len(ids):
        raise ValueError(f"the server counted {counted} prompt tokens of the prompt's {len(ids)}")
    try:
        if way == "prompt_logprobs":
            scored = choice["prompt_logprobs"]
            values = [entry[str(t)]["logprob"] for entry, t in zip(scored[1:], ids[1:])]
        else:
            scored = choice["logprobs"]["token_logprobs"]
            values = list(scored[1:len(ids)])
    except (KeyError, IndexError, TypeError):
        raise ValueError(f"no {way} of the prompt's tokens") from None
    if len(scored) < len(ids):
        raise ValueError(f"{way} of {len(scored)} of the prompt's {len(ids)} tokens")
    if way == "echo" and len(scored) > len(ids) + 1:  # a BOS added, or other tokens
        raise ValueError(f"echo of {len(scored)} tokens for the prompt's {len(ids)} and one more")
    if why := _unusable(values):
        raise ValueError(why)
    return [None, *values]


def _unusable(logprobs: list) -> str | None:
    """The first value that is no log-probability (not a finite number at most 0, beyond
    rounding), named; None where all are."""
    for value in logprobs:
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value) or value > LOGPROB_SLACK:
            return f"a log-probability of {value!r}"
    return None


def _text(choice: dict) -> str:
    """A choice's text; a null one (a reply with no content) is empty."""
    text = choice["text"] if "text" in choice else (choice.get("message") or {}).get("content")
    return text if isinstance(text, str) else ""
