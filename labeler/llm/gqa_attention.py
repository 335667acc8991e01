"""Grouped-query attention on the CPU without copying the key/value heads.

transformers' `sdpa` attention repeats each key/value head for its group of query heads
(`repeat_kv`, a copy of the whole cache every layer and step) whenever an attention mask is
passed, as the hf backend's left-padded batches always do: it keeps CUDA off the slow kernel
that a mask and `enable_gqa` would take. On the CPU, torch's `scaled_dot_product_attention`
with `enable_gqa=True` reads the shared heads in place and gives the same bytes (each query
head's sums are the same sums), so `cpu_gqa` registers an attention that does that there and
is transformers' `sdpa` everywhere else.
"""

from __future__ import annotations

import torch

# isort: split
import labeler.llm.lean_transformers  # noqa: F401  (first: keeps scikit-learn unimported)

# isort: split
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask

#: the attention implementation's registered name
NAME = "labeler_cpu_gqa_sdpa"


def _attention(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor,
               value: torch.Tensor, attention_mask: torch.Tensor | None, dropout: float = 0.0,
               scaling: float | None = None, **kwargs) -> tuple[torch.Tensor, None]:
    """transformers' sdpa attention, but a masked one on the CPU reads grouped key/value heads
    in place (with a mask sdpa is never causal by flag: the mask holds causality)."""
    if (attention_mask is None or query.device.type != "cpu" or key.shape[1] == query.shape[1]
            or kwargs.get("position_bias") is not None or kwargs.get("cache") is not None):
        return sdpa_attention_forward(module, query, key, value, attention_mask,
                                      dropout=dropout, scaling=scaling, **kwargs)
    out = torch.nn.functional.scaled_dot_product_attention(
        query, key, value, attn_mask=attention_mask, dropout_p=dropout, scale=scaling,
        enable_gqa=True)
    return out.transpose(1, 2).contiguous(), None


AttentionInterface.register(NAME, _attention)
ALL_MASK_ATTENTION_FUNCTIONS.register(NAME, sdpa_mask)


def cpu_gqa(model) -> None:
    """A model on sdpa attention takes `_attention` instead (the same answers, byte for
    byte); any other attention implementation is left as it is."""
    if model.config._attn_implementation == "sdpa":
        model.set_attn_implementation(NAME)
