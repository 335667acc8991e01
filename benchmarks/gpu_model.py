"""The GPU check's model: Llama-3.1-8B's configuration written out (and --smoke's shrunk copy),
its model FLOPs per forward pass, and the model built with random weights on the device.

Model FLOPs (useful work; padding and recomputation are not counted): a forward pass over
`new` tokens after `past` cached ones, with logits for `kept` positions, costs
2 x W x new + 2 x V x d x kept + 4 x L x d_attn x sum(t for t in past+1 .. past+new),
W the weights of the layers' matrix products, V x d the LM head, d_attn = heads x head_dim:
a query at position t scores and mixes t keys (causal), 2 x d_attn FLOPs for each.
"""

from __future__ import annotations

import click
import torch
from transformers import AutoModelForCausalLM, LlamaConfig

#: meta-llama/Llama-3.1-8B-Instruct's config.json, written out: no download
LLAMA_3_1_8B = {
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
    "rope_theta": 500000.0,
    "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                     "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
    "rms_norm_eps": 1e-5,
    "hidden_act": "silu",
    "attention_bias": False,
    "mlp_bias": False,
    "tie_word_embeddings": False,
    "initializer_range": 0.02,
    "bos_token_id": 128000,
    "eos_token_id": [128001, 128008, 128009],
}
#: --smoke: the same architecture shrunk to run on a CPU in seconds (vocabulary kept; heads of
#: 32, the smallest vllm's CPU attention takes)
SMOKE = LLAMA_3_1_8B | {"hidden_size": 64, "intermediate_size": 224, "num_hidden_layers": 2,
                        "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 32}


def matmul_weights(config) -> tuple[int, int]:
    """(W, V x d): the weights of one token's matrix products in the layers, and the LM head's.

    >>> matmul_weights(LlamaConfig(**LLAMA_3_1_8B))
    (6979321856, 525336576)
    """
    d, hd = config.hidden_size, config.head_dim
    attention = d * hd * (2 * config.num_attention_heads + 2 * config.num_key_value_heads)
    return (config.num_hidden_layers * (attention + 3 * d * config.intermediate_size),
            config.vocab_size * d)


def forward_flops(config, new: int, *, past: int = 0, kept: int = 1) -> int:
    """Model FLOPs of one sequence's forward pass over `new` tokens after `past` cached ones,
    with logits for `kept` positions: 2 W new + 2 V d kept + 4 L d_attn sum(past+1..past+new).

    >>> forward_flops(LlamaConfig(**SMOKE), 1)  # 2 (110,592 + 8,208,384) + 4 x 2 x 64 x 1 key
    16638464
    """
    layers, head = matmul_weights(config)
    keys = new * past + new * (new + 1) // 2  # keys each new query attends, summed
    d_attn = config.num_attention_heads * config.head_dim
    return 2 * layers * new + 2 * head * kept + 4 * config.num_hidden_layers * d_attn * keys


def build_model(config: LlamaConfig, device: torch.device, dtype: torch.dtype, seed: int = 0):
    """A LlamaForCausalLM of `config` with random weights, made in `dtype` directly on
    `device` (its own init: normal, std 0.02); SDPA attention as from_pretrained would pick."""
    torch.manual_seed(seed)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    linear = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))
    if linear != sum(matmul_weights(config)):
        raise click.ClickException(f"the model has {linear} matrix-product weights, the FLOPs "
                                   f"formula counts {sum(matmul_weights(config))}")
    return model
