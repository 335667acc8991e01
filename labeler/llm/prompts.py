"""Prompt text and token ids, shared by every backend so that they all see the same tokens."""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache

from labeler.errors import InputError
from labeler.llm.base import Chat
from labeler.llm.segments import encode_by_segments

ROLES = ("system", "user", "assistant")

#: chat-template variables set wherever a model's template reads them: a reasoning model
#: (Qwen3, also renamed, fine-tuned or as GGUF) answers without a thinking block
TEMPLATE_VARIABLES = {"enable_thinking": False}


def render_chat(tokenizer, prompt: Chat) -> str:
    """The text a model sees for a chat, through its own chat template, with each of
    TEMPLATE_VARIABLES that the template reads (`template_kwargs`).

    The template always adds the assistant generation prompt; a chat that ends with an assistant
    message is a partial reply, appended verbatim for the model to continue.
    """
    check_roles(prompt)
    turns, prefix = (prompt[:-1], prompt[-1].content) if prompt[-1].role == "assistant" else (
        prompt, "")
    messages = [{"role": m.role, "content": m.content} for m in turns]
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True,
                                         **template_kwargs(tokenizer))
    return text + prefix


def check_roles(prompt: Chat) -> None:
    """InputError for an empty chat or a turn whose role is not one of ROLES."""
    if not prompt:
        raise InputError("a prompt needs at least one message", field_name="prompt")
    for message in prompt:
        if message.role not in ROLES:
            raise InputError(f"unknown role '{message.role}' (use one of {', '.join(ROLES)})",
                             field_name="role")


def template_kwargs(tokenizer) -> dict:
    """The TEMPLATE_VARIABLES the tokenizer's chat template reads, decided from the template's
    source, not the model's name: {"enable_thinking": False} for Qwen3's, {} for SmolLM2's."""
    template = tokenizer.get_chat_template() if hasattr(tokenizer, "get_chat_template") \
        else tokenizer.chat_template
    read = _variables(template) if isinstance(template, str) else frozenset()
    return {name: value for name, value in TEMPLATE_VARIABLES.items() if name in read}


@lru_cache(maxsize=32)
def _variables(template: str) -> frozenset[str]:
    """The variables a Jinja template reads without setting them itself."""
    from jinja2 import Environment, meta
    from jinja2.exceptions import TemplateSyntaxError

    try:
        parsed = Environment(extensions=["jinja2.ext.loopcontrols"]).parse(template)
    except TemplateSyntaxError:  # a tag only transformers defines ({% generation %}): its names
        return frozenset(re.findall(r"[A-Za-z_]\w*", template))
    return frozenset(meta.find_undeclared_variables(parsed))


def encode(tokenizer, texts: list[str]) -> list[list[int]]:
    """Token ids of rendered texts (the template already wrote any special tokens): those of
    encoding each text whole, each distinct piece encoded once (`labeler.llm.segments`)."""
    if not texts:
        return []
    return encode_by_segments(tokenizer, list(texts), _whole_encoder(tokenizer))


def _whole_encoder(tokenizer):
    """texts -> ids, as `tokenizer(texts, add_special_tokens=False)` gives them."""
    rust = _rust_encoder(tokenizer)
    if rust is not None:  # the same ids, without building offsets and masks
        return lambda texts: [e.ids for e in rust.encode_batch_fast(texts,
                                                                    add_special_tokens=False)]
    return lambda texts: tokenizer(texts, add_special_tokens=False)["input_ids"]


def _rust_encoder(tokenizer):
    """The Rust tokenizer that `tokenizer(texts, add_special_tokens=False)` runs as it is set,
    where calling it straight gives the same ids: a fast tokenizer whose class keeps
    transformers' own encoding, with no truncation or padding set and special tokens split as
    transformers would split them; else None."""
    rust = getattr(tokenizer, "_tokenizer", None)
    if not getattr(tokenizer, "is_fast", False) or not hasattr(rust, "encode_batch_fast"):
        return None
    from transformers.tokenization_utils_base import PreTrainedTokenizerBase
    from transformers.tokenization_utils_tokenizers import TokenizersBackend

    kind = type(tokenizer)
    if kind._encode_plus is not TokenizersBackend._encode_plus or \
            kind.__call__ is not PreTrainedTokenizerBase.__call__:
        return None
    if rust.truncation is not None or rust.padding is not None or \
            rust.encode_special_tokens != getattr(tokenizer, "split_special_tokens", False):
        return None
    return rust


def continuation_ids(tokenizer, contexts: list[str], continuations: list[str]
                     ) -> list[tuple[list[int], list[int]]]:
    """(context ids, continuation ids) per pair, split as lm-evaluation-harness does.

    The continuation's tokens are those of `context + continuation` past the context's own
    token count, so a token merging across the boundary is scored as the model would read it.
    """
    context_ids = encode(tokenizer, contexts)
    whole_ids = encode(tokenizer, [c + x for c, x in zip(contexts, continuations)])
    return [(whole[:len(ctx)], whole[len(ctx):]) for ctx, whole in zip(context_ids, whole_ids)]


def choice_ids(tokenizer, text: str, choices: tuple[str, ...]) -> list[int]:
    """The first token of each choice when it follows `text`; two choices with the same first
    token would get the same probability, so they are refused."""
    for k, choice in enumerate(choices):
        if choice in choices[:k]:
            raise InputError(f"choice {choice!r} is given twice", field_name="choices")
    base = len(encode(tokenizer, [text])[0])
    ids: list[int] = []
    for choice, whole in zip(choices, encode(tokenizer, [text + c for c in choices])):
        if len(whole) <= base:
            raise InputError(f"choice {choice!r} adds no token", field_name="choices")
        if whole[base] in ids:
            other = choices[ids.index(whole[base])]
            raise InputError(
                f"choices {other!r} and {choice!r} start with the same token "
                f"{tokenizer.decode([whole[base]])!r}", field_name="choices",
                hint="only a choice's first token is scored: use choices that differ in it")
        ids.append(whole[base])
    return ids


def row_seed(seed: int, text: str, index: int) -> int:
    """The random seed of sample `index` of a prompt: a pure function of (seed, prompt, index),
    so a sample never depends on which other prompts share its batch."""
    digest = hashlib.sha256(f"{seed}\0{index}\0{text}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def cut_at_stop(text: str, stop: tuple[str, ...]) -> str:
    """`text` up to the first occurrence of any stop string."""
    cut = min((i for i in (text.find(s) for s in stop if s) if i >= 0), default=len(text))
    return text[:cut]
