"""A prompt's token ids are transformers' own: `encode` runs the Rust tokenizer straight only
where that gives the ids `tokenizer(texts, add_special_tokens=False)` gives."""

from __future__ import annotations

import copy

from labeler.llm import chat
from labeler.llm.prompts import _rust_encoder, encode

TEXTS = ["Who wrote Hamlet?", "<|im_start|>user\nhi<|im_end|>\n", "  spaces\n\n\ttabs  ",
         "Zürich 1,234.5 km² — 東京 🎉", "ends in a space ", ""]


def test_encode_gives_the_ids_transformers_gives(smollm):
    tokenizer = smollm.tokenizer
    texts = [*TEXTS, *(smollm.render(chat(t)) for t in TEXTS[:4])]
    assert _rust_encoder(tokenizer) is not None  # SmolLM2's is encoded straight
    assert encode(tokenizer, texts) == tokenizer(texts, add_special_tokens=False)["input_ids"]


def test_a_tokenizer_set_otherwise_is_called_as_transformers_calls_it(smollm):
    splitting = copy.deepcopy(smollm.tokenizer)
    splitting.split_special_tokens = True  # "<|im_start|>" read as text
    assert _rust_encoder(splitting) is None
    assert encode(splitting, TEXTS) == splitting(TEXTS, add_special_tokens=False)["input_ids"] \
        != encode(smollm.tokenizer, TEXTS)
