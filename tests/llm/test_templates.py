"""Chat-template variables follow the template, not the model's name: a template that reads
`enable_thinking` (Qwen3's) renders with it False, also in a renamed local folder.

The tokenizer is the bundled SmolLM2's, saved into a folder whose name says nothing of Qwen,
with a chat template that handles `enable_thinking` as Qwen3's does (its generation prompt
ends with an empty think block when thinking is off). Nothing is downloaded.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.templates import THINKING_TEMPLATE
from transformers import AutoTokenizer

from labeler.llm import chat, resolve_model
from labeler.llm.prompts import render_chat, template_kwargs

QUESTION = chat("Who wrote Hamlet?")
PROMPT = "<|im_start|>user\nWho wrote Hamlet?<|im_end|>\n<|im_start|>assistant\n"


@pytest.fixture
def renamed(smollm, tmp_path) -> Path:
    """A local model folder named "my-reasoner": SmolLM2's weights (linked) and tokenizer, with
    the thinking template."""
    converted = Path(smollm.model.name_or_path)
    folder = tmp_path / "my-reasoner"
    folder.mkdir()
    for name in ("config.json", "generation_config.json", "model.safetensors"):
        (folder / name).symlink_to(converted / name)
    tokenizer = AutoTokenizer.from_pretrained(converted)
    tokenizer.chat_template = THINKING_TEMPLATE
    tokenizer.save_pretrained(folder)
    return folder


def test_a_template_that_reads_enable_thinking_renders_with_thinking_off(renamed, smollm):
    tokenizer = AutoTokenizer.from_pretrained(renamed)
    assert template_kwargs(tokenizer) == {"enable_thinking": False}
    assert render_chat(tokenizer, QUESTION) == PROMPT + "<think>\n\n</think>\n\n"
    # as shipped, the same template would let the model think
    assert tokenizer.apply_chat_template([{"role": "user", "content": "Who wrote Hamlet?"}],
                                         tokenize=False, add_generation_prompt=True) == PROMPT
    # SmolLM2's own template does not read it: nothing is passed
    assert template_kwargs(smollm.tokenizer) == {}
    assert smollm.render(QUESTION).endswith(PROMPT)


def test_the_hf_backend_turns_thinking_off_for_a_renamed_local_folder(renamed):
    from labeler.llm.hf import HFBackend

    spec = resolve_model(str(renamed))
    assert spec.alias == "my-reasoner"
    backend = HFBackend(spec)
    assert backend.render(QUESTION) == PROMPT + "<think>\n\n</think>\n\n"
