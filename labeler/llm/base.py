"""The backend contract: three batched operations over small request records, and the
OPTIONAL_OPERATIONS that a backend answers when its class implements them.

Modelled on lm-evaluation-harness's LM interface: each method takes a list of requests and
returns a list of results of the same length and order. Backends never loop one prompt at a
time; they batch internally (`labeler.llm.batching.Collator`). Every operation checks, before
any batch runs, that each prompt and the room its answer needs fit the model's context window.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import ClassVar

from labeler.errors import InputError, PromptTooLongError

#: tokens a `choice_probs` answer needs past its prompt: the choice's first token
CHOICE_TOKENS = 1
#: operations beyond the contract's three, which a backend answers if its class implements
#: them (`Backend.answers`); the tasks, judges and scorers that need one say so before loading
OPTIONAL_OPERATIONS = ("attention", "loglikelihood_rolling", "count_tokens")


@dataclass(frozen=True)
class Sampling:
    """Decoding parameters of `generate`. Greedy when temperature == 0."""

    n: int = 1  # samples per prompt
    temperature: float = 0.0  # 0 means greedy
    top_p: float = 1.0
    top_k: int = 0  # 0 disables top-k
    max_tokens: int = 32
    stop: tuple[str, ...] = ()  # generation is cut at the first of these strings
    seed: int | None = None  # required when sampling, so results repeat
    json_schema: str | None = None  # output constrained to this JSON schema (structured_output)

    def __post_init__(self) -> None:
        if self.n < 1:
            raise InputError(f"n must be >= 1, got {self.n}", field_name="n")
        if self.temperature < 0:
            raise InputError("temperature must be >= 0", field_name="temperature")
        if not 0 < self.top_p <= 1:
            raise InputError("top_p must be in (0, 1]", field_name="top_p")
        if self.temperature == 0 and self.n > 1:
            raise InputError("greedy decoding gives one answer: set temperature > 0 for n > 1",
                             field_name="n")
        if self.temperature > 0 and self.seed is None:
            raise InputError("sampling needs a seed so results repeat", field_name="seed")
        if self.json_schema is not None:
            try:
                json.loads(self.json_schema)
            except ValueError as exc:
                raise InputError(f"json_schema is not JSON: {exc}",
                                 field_name="json_schema") from None

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    def key(self) -> dict:
        """Every parameter that changes the answer, for cache keys and manifests (json_schema
        only when set, so that unconstrained calls keep the keys they had before it)."""
        return {k: v for k, v in asdict(self).items() if k != "json_schema" or v is not None}


@dataclass(frozen=True)
class Completion:
    """One generated answer, and whether it was cut by the length cap.

    `capped` is the backend's own account of why the row ended: True iff it reached
    `Sampling.max_tokens` new tokens without an end-of-sequence token or a stop string (vllm's
    finish_reason "length"), so a cut answer is told from a finished one exactly.
    """

    text: str
    capped: bool = False  # stopped at max_tokens, not at EOS or a stop string


@dataclass(frozen=True)
class Message:
    """One chat turn."""

    role: str  # "system" | "user" | "assistant"
    content: str


# A prompt is a chat: rendered by the model's own chat template inside the backend.
Chat = tuple[Message, ...]


@dataclass(frozen=True)
class Prompt:
    """A chat as the model reads it, rendered and tokenized once: the call cache keys it by
    `text` and checks its length by `ids`, and the backend runs these same ids."""

    chat: Chat
    text: str  # `Backend.render(chat)`
    ids: Sequence[int]  # `Backend.tokenize([text])[0]`


def chat(user: str, system: str | None = None) -> Chat:
    """A one-turn chat prompt."""
    turns = [Message("system", system)] if system else []
    return tuple(turns + [Message("user", user)])


@dataclass(frozen=True)
class LoglikelihoodRequest:
    """log P(continuation | context); context is a chat, the continuation the assistant reply."""

    context: Chat
    continuation: str


@dataclass(frozen=True)
class ChoiceRequest:
    """Next-token probabilities of each choice string after the chat's assistant prefix."""

    prompt: Chat
    choices: tuple[str, ...] = field(default=(" yes", " no"))


@dataclass(frozen=True)
class AttentionRequest:
    """The attention a chat's greedy answer pays to spans of the chat's text (AttR): `spans`
    are strings inside the prompt, located by their tokens."""

    prompt: Chat
    spans: tuple[str, ...]
    max_tokens: int = 32  # the answer's new-token cap
    truncate: int = 3048  # the rendered prompt's first tokens kept (the tokenizer's max_length)


@dataclass(frozen=True)
class AttentionResult:
    """One `attention` answer: the greedy answer, and per span its attention weight (0.0 for a
    span not found in the prompt's tokens)."""

    text: str
    weights: tuple[float, ...]


class Backend(ABC):
    """A loaded model that answers the three operations in batches.

    Its class declares what it can be asked before any model loads (`LLMConfig` checks a
    config against them and the CLI's help lists them): the weights' `dtypes`, whether it
    splits a model over GPUs (`tensor_parallel`), its `default_batch_size`, and the optional
    operations it implements (`answers`).
    """

    #: the weights' dtypes `--dtype` may name; none: it takes no dtype
    dtypes: ClassVar[tuple[str, ...]] = ()
    #: the dtype it loads without one, in words (for the help)
    dtype_default: ClassVar[str] = ""
    #: whether it splits one model over several GPUs (`--tensor-parallel` > 1)
    tensor_parallel: ClassVar[bool] = False
    #: whether a copy can be told to take only a share of its GPU's memory (`share`), so that
    #: copies in several dtypes fit one process (`LLMConfig.call_dtypes`)
    device_share: ClassVar[bool] = False
    #: requests a batch (or an engine call) when `--batch-size` is unset
    default_batch_size: ClassVar[int] = 8

    #: resolved model id (HF repo id, local path or .gguf path)
    model_id: str
    #: revision / content hash of the weights, recorded in cache keys and manifests
    revision: str
    #: short name used in artifact paths, e.g. "smollm2-135m"
    alias: str
    #: requests per forward batch (hf) or per engine call (vllm)
    batch_size: int
    #: the model's context window in tokens: prompt plus answer (its config's
    #: max_position_embeddings; vllm's max_model_len)
    max_context: int
    #: whether `generate` can constrain its output to `Sampling.json_schema` (others refuse it)
    structured_output: bool = False

    @classmethod
    def answers(cls, operation: str) -> bool:
        """Whether this class answers the optional `operation` (one of OPTIONAL_OPERATIONS):
        it overrides the contract's refusal of it; one that tokenizes counts tokens."""
        names = (operation, "tokenize") if operation == "count_tokens" else (operation,)
        return any(getattr(cls, name) is not getattr(Backend, name) for name in names)

    @property
    def call_size(self) -> int:
        """Requests the call cache hands one call, committing its answers after each:
        `batch_size`, or more for a backend that refills its batch from a call's queue."""
        return self.batch_size

    def key(self) -> dict:
        """Everything about the loaded model that changes its answers, for cache keys."""
        return {"model_id": self.model_id, "revision": self.revision}

    @abstractmethod
    def render(self, prompt: Chat) -> str:
        """The exact text the model sees for a chat, through its own chat template."""

    def tokenize(self, texts: list[str]) -> list[list[int]]:
        """The token ids of each plain text, no special tokens added (a rendered prompt holds
        its own)."""
        raise NotImplementedError(f"{type(self).__name__} does not tokenize")

    def count_tokens(self, texts: list[str]) -> list[int]:
        """The number of tokens of each plain text (`tokenize`'s)."""
        return [len(ids) for ids in self.tokenize(texts)]

    def refusal(self, operation: str) -> str | None:
        """Why this loaded model cannot answer the contract's `operation` (a served model
        whose server lacks what it needs); None: it can."""
        return None

    def prepare(self, prompts: list[Chat]) -> list[Prompt]:
        """Each chat rendered and tokenized, once."""
        texts = [self.render(p) for p in prompts]
        return [Prompt(p, t, ids) for p, t, ids in zip(prompts, texts, self.tokenize(texts))]

    def stream(self, prompts: list[Prompt], sampling: Sampling
               ) -> Iterator[tuple[int, list[Completion]]]:
        """`generate`'s answers as each prompt's answers end: (its index in `prompts`, its
        completions), every index once, in any order; nothing runs before every prompt is
        checked against the window. By default `generate` in calls of `call_size`, in the
        given order; a backend that refills its running batch streams the rows as they end."""
        check_lengths([len(p.ids) for p in prompts], self.max_context,
                      reserved=sampling.max_tokens)
        for start in range(0, len(prompts), self.call_size):
            chunk = [p.chat for p in prompts[start:start + self.call_size]]
            yield from enumerate(self.generate(chunk, sampling), start)

    @abstractmethod
    def generate(self, prompts: list[Chat], sampling: Sampling) -> list[list[Completion]]:
        """`sampling.n` completions per prompt, each saying whether it stopped at
        `sampling.max_tokens`; each prompt plus `sampling.max_tokens` must fit `max_context`."""

    @abstractmethod
    def loglikelihood(self, requests: list[LoglikelihoodRequest]) -> list[float]:
        """Summed log-probability of each continuation's tokens given its context; context plus
        continuation must fit `max_context`."""

    def loglikelihood_rolling(self, texts: list[str]) -> list[float]:
        """Summed log-probability of every token of each plain text (no chat template) after
        the model's BOS token (its EOS when it has none), as lm-evaluation-harness scores a text
        for perplexity; each text's tokens are `count_tokens` of it."""
        raise NotImplementedError(f"{type(self).__name__} does not score plain texts")

    def attention(self, requests: list[AttentionRequest]) -> list[AttentionResult]:
        """The greedy answer to each prompt and the attention it pays to each span
        (`labeler.llm.attention` says which attention, as the AttR baseline reads it)."""
        raise NotImplementedError(f"{type(self).__name__} does not give attention weights")

    @abstractmethod
    def choice_probs(self, requests: list[ChoiceRequest]) -> list[dict[str, float]]:
        """Probability of each choice's first token as the next token; the choices' first tokens
        must differ, and the prompt plus that token must fit `max_context`."""


def check_lengths(tokens: Sequence[int], window: int, *, reserved: int = 0) -> None:
    """PromptTooLongError for the first request whose `tokens` plus `reserved` exceed `window`:
    what every backend checks before any batch runs. `reserved` is what the answer needs:
    `Sampling.max_tokens` for generate, CHOICE_TOKENS for choice_probs, 0 for loglikelihood
    (whose `tokens` already hold the continuation)."""
    over = [i for i, n in enumerate(tokens) if n + reserved > window]
    if over:
        i = over[0]
        raise PromptTooLongError(index=i, tokens=tokens[i], window=window, reserved=reserved,
                                 others=len(over) - 1)


def gathered(stream: Iterator[tuple[int, list[Completion]]], count: int
             ) -> list[list[Completion]]:
    """A `Backend.stream` of `count` prompts' answers, in the prompts' order."""
    out: list[list[Completion]] = [[] for _ in range(count)]
    for index, completions in stream:
        out[index] = completions
    return out


def yes_probability(probs: Mapping[str, float], yes: str = " yes", no: str = " no") -> float:
    """P(yes) / (P(yes) + P(no)) from one `choice_probs` answer; 0.5 when both are 0.

    >>> yes_probability({" yes": 0.375, " no": 0.125})
    0.75
    """
    total = probs[yes] + probs[no]
    return probs[yes] / total if total > 0 else 0.5
