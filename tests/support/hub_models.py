"""A tiny random-weight Llama served by the tests' Hub server under the real Llama 3.1 id.

`llama_files(cache_dir)` builds the files once (a few MB): the real repo's layout
(`meta-llama/Llama-3.1-8B-Instruct` at the Hub: config.json, generation_config.json, four
`model-0000N-of-00004.safetensors` shards with `model.safetensors.index.json`, tokenizer.json,
tokenizer_config.json, special_tokens_map.json), a LlamaForCausalLM config with tiny sizes and
the tokenizer of the bundled SmolLM2 (as labeler's hf backend converts it) with Llama 3's
special tokens and a Llama-3.1-style chat template. `seed_llama(hub, files)` puts them on a
`HubServer`, so that `--llm llama3.1-8b` downloads and loads it through the real
huggingface_hub and transformers code.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from pathlib import Path

from support.hub_repos import GITATTRIBUTES, blob_oid
from support.hub_server import HubServer

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
SHARDS = 4  # as the real repo: model-00001-of-00004.safetensors ...
#: Llama 3's special tokens, added to SmolLM2's vocabulary in this order
SPECIAL = ("<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
           "<|eom_id|>", "<|eot_id|>")
#: Llama 3.1's template without its tool-calling branches: the same system header (knowledge
#: cut-off and date) and turns
CHAT_TEMPLATE = (
    "{{- bos_token }}"
    "{%- if messages[0]['role'] == 'system' %}"
    "{%- set system_message = messages[0]['content']|trim %}{%- set messages = messages[1:] %}"
    "{%- else %}{%- set system_message = '' %}{%- endif %}"
    "{{- '<|start_header_id|>system<|end_header_id|>\\n\\n' }}"
    "{{- 'Cutting Knowledge Date: December 2023\\nToday Date: 26 Jul 2024\\n\\n' }}"
    "{{- system_message }}{{- '<|eot_id|>' }}"
    "{%- for message in messages %}"
    "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + "
    "message['content'] | trim + '<|eot_id|>' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}"
    "{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}"
)


def llama_files(cache_dir: str | Path) -> dict[str, bytes]:
    """path -> content of the tiny model's repo; `cache_dir` holds (or gets) the bundled SmolLM2
    converted by the hf backend, whose tokenizer it takes."""
    import torch
    from safetensors.torch import save
    from tokenizers import AddedToken, Tokenizer
    from transformers import LlamaConfig, LlamaForCausalLM

    from labeler.llm.gguf import gguf_snapshot
    from labeler.llm.models import model_revision, resolve_model

    spec = resolve_model("smollm2-135m")
    smollm = gguf_snapshot(spec, model_revision(spec), cache_dir)
    tokenizer = Tokenizer.from_file(str(smollm / "tokenizer.json"))
    tokenizer.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL])
    ids = {t: tokenizer.token_to_id(t) for t in SPECIAL}
    config = LlamaConfig(
        vocab_size=tokenizer.get_vocab_size(), hidden_size=32, intermediate_size=64,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        max_position_embeddings=131072, rope_theta=500000.0, tie_word_embeddings=True,
        rope_scaling={"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                      "original_max_position_embeddings": 8192, "rope_type": "llama3"},
        bos_token_id=ids["<|begin_of_text|>"],
        eos_token_id=[ids["<|end_of_text|>"], ids["<|eom_id|>"], ids["<|eot_id|>"]],
        torch_dtype="bfloat16",
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    with tempfile.TemporaryDirectory() as folder:  # config.json as transformers writes it
        config.architectures = ["LlamaForCausalLM"]
        config.save_pretrained(folder)
        config_json = (Path(folder) / "config.json").read_bytes()
    weights = {name: t.contiguous() for name, t in model.state_dict().items()
               if name != "lm_head.weight"}  # tied to the embeddings, as saved
    names = sorted(weights)
    files, weight_map = {}, {}
    for shard in range(SHARDS):
        file = f"model-{shard + 1:05d}-of-{SHARDS:05d}.safetensors"
        part = {n: weights[n] for n in names[shard::SHARDS]}
        files[file] = save(part, metadata={"format": "pt"})
        weight_map.update(dict.fromkeys(part, file))
    total = sum(t.numel() * t.element_size() for t in weights.values())
    files["model.safetensors.index.json"] = _json(
        {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))})
    files["config.json"] = config_json
    files["generation_config.json"] = _json({
        "bos_token_id": config.bos_token_id, "do_sample": True,
        "eos_token_id": config.eos_token_id, "temperature": 0.6, "top_p": 0.9})
    files["tokenizer.json"] = tokenizer.to_str().encode()
    files["tokenizer_config.json"] = _json({
        "bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>",
        "chat_template": CHAT_TEMPLATE, "clean_up_tokenization_spaces": False,
        "model_input_names": ["input_ids", "attention_mask"], "model_max_length": 131072,
        "tokenizer_class": "PreTrainedTokenizerFast"})
    files["special_tokens_map.json"] = _json(
        {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"})
    files["README.md"] = (b"---\nlicense: llama3.1\n---\n"
                          b"A tiny random-weight model in the layout of " + LLAMA.encode()
                          + b", for tests.\n")
    return files


def seed_llama(hub: HubServer, files: dict[str, bytes]) -> str:
    """Serve `files` (from `llama_files`) on `hub` as the model repo LLAMA, gated as the real
    one is, its licence accepted by every token the server knows; its commit sha."""
    files = {".gitattributes": GITATTRIBUTES, **files}
    sha = hashlib.sha1(b"".join(blob_oid(files[name]).encode() for name in sorted(files)))
    hub.seed(LLAMA, files, sha=sha.hexdigest(), repo_type="model", gated=True,
             accepted=hub.tokens)
    return sha.hexdigest()


def _json(value: dict) -> bytes:
    return (json.dumps(value, indent=2) + "\n").encode()
