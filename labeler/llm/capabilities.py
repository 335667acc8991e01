"""What an OpenAI-compatible server can do, learnt at start-up with a few one-token requests,
and the best way it offers to answer each of the contract's operations.

    GET  /models                         the served names (a name it lacks: a warning)
    GET  /version                        vLLM's version (None: another server)
    POST /completions  prompt_logprobs   vLLM's log-probabilities of the prompt's tokens
    POST /completions  echo + logprobs   the prompt's log-probabilities, lm-eval's way
    POST /chat/completions top_logprobs  the first answer token's most likely tokens

Each operation is served by the first way the server offers (`WAYS`); one it offers none of
is refused before any request (`Capabilities.refusal`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from labeler.errors import ModelLoadError
from labeler.progress import warning

#: the ways each operation can be served, best first
WAYS = {"generate": ("chat", "completions"),
        "loglikelihood": ("prompt_logprobs", "echo"),
        "choice_probs": ("prompt_logprobs", "echo", "top_logprobs")}
#: what each way means, for a refusal
MEANING = {"chat": "chat completions", "completions": "completions",
           "prompt_logprobs": "prompt_logprobs (vLLM)",
           "echo": "echo with logprobs on completions",
           "top_logprobs": "top_logprobs on chat completions"}
#: the most top_logprobs OpenAI-style chat APIs give
TOP_LOGPROBS = 20

_HELLO = "Hello"


@dataclass(frozen=True)
class Capabilities:
    """What one server answered the probe: its version, its listing of the model, and the
    ways of `MEANING` it offers."""

    version: str | None  # vLLM's /version; None: not a vLLM server
    listed: dict | None  # the model's entry in GET /models; None: not listed
    offers: frozenset[str] = field(default_factory=frozenset)

    def way(self, operation: str, prompt_format: str = "chat") -> str | None:
        """The best way this server offers to answer `operation`; None: none."""
        ways = WAYS.get(operation, ())
        if operation == "generate":
            ways = ("completions",) if prompt_format == "text" else ("chat",)
        return next((w for w in ways if w in self.offers), None)

    def refusal(self, operation: str, url: str, *, tokenizer: bool = True) -> str | None:
        """Why `operation` cannot be served here (None: it can): the ways it needs that the
        server at `url` lacks. Without a local tokenizer only chat's top_logprobs serve."""
        ways = WAYS.get(operation)
        if ways is None:
            return None
        usable = ways if tokenizer else tuple(w for w in ways if w == "top_logprobs")
        if any(w in self.offers for w in usable):
            return None
        if not usable:
            return "the model's tokenizer here (the prompt's tokens), and none loads"
        return f"{' or '.join(MEANING[w] for w in usable)}; the server at {url} offers none " \
               "of them"

    def describe(self) -> dict:
        """For the manifest: the version and what it offers, sorted."""
        return {"server": self.version, "offers": sorted(self.offers)}


def probe(server, names: tuple[str, ...], alias: str) -> tuple[str, Capabilities]:
    """The served name (the first of `names` that GET /models lists, else the first) and
    `server`'s capabilities for it (`alias`: labeler's name of the model, for messages): a
    few one-token requests, not counted as answers. A name the server does not list is a
    warning; a server that answers neither chat nor completions for it fails as one line."""
    models = server.models(alias)
    model, listed = names[0], None
    if isinstance(models, str):
        warning(f"{server.base_url}: {models}; asking for '{model}' anyway")
    else:
        listed = next((m for n in names for m in models if m.get("id") == n), None)
        if listed is None:
            served = ", ".join(sorted(str(m.get("id")) for m in models)) or "none"
            warning(f"{server.base_url} does not list '{model}' (it lists: {served}); "
                    "asking for it anyway (--served-model names it as the server does)")
        else:
            model = listed["id"]
    offers: set[str] = set()
    base = {"model": model, "max_tokens": 1, "temperature": 0.0}
    status, answer = server.try_post("/completions", {**base, "prompt": _HELLO,
                                                      "prompt_logprobs": 1})
    if _first(answer).get("prompt_logprobs"):
        offers |= {"completions", "prompt_logprobs"}
    status, answer = server.try_post("/completions", {**base, "prompt": _HELLO, "echo": True,
                                                      "logprobs": 1})
    if status == 200 and _first(answer):
        offers.add("completions")
        if len((_first(answer).get("logprobs") or {}).get("token_logprobs") or []) > 1:
            offers.add("echo")
    chat = {**base, "messages": [{"role": "user", "content": _HELLO}]}
    status, answer = server.try_post("/chat/completions", {**chat, "logprobs": True,
                                                           "top_logprobs": TOP_LOGPROBS})
    if status != 200:
        status, answer = server.try_post("/chat/completions", chat)
    if status == 200 and _first(answer):
        offers.add("chat")
        content = (_first(answer).get("logprobs") or {}).get("content") or [{}]
        if content[0].get("top_logprobs"):
            offers.add("top_logprobs")
    if not offers & {"chat", "completions"}:
        why = server.blanked(_message(answer)) or f"it answered {status or 'nothing'}"
        raise ModelLoadError(alias, f"{server.base_url} answers no completion for '{model}' "
                             f"({why})", hint="check --base-url (the API's root, e.g. "
                             "http://host:8000/v1) and name the model as the server does "
                             "with --served-model")
    return model, Capabilities(server.version(), listed, frozenset(offers))


def _first(answer: dict | None) -> dict:
    """The first choice of a probe's answer; {} where there is none."""
    choices = (answer or {}).get("choices")
    return choices[0] if isinstance(choices, list) and choices and \
        isinstance(choices[0], dict) else {}


def _message(answer: dict | None) -> str:
    """A refusal's own message (OpenAI's error object, FastAPI's detail), on one line."""
    said = (answer or {}).get("error") or (answer or {}).get("detail") or ""
    said = said.get("message", said) if isinstance(said, dict) else said
    return " ".join(str(said).split())[:200]
