"""How the extractor is trained: SEER's fine-tuning settings as defaults."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

from labeler.errors import InputError, MissingDependencyError


@dataclass(frozen=True)
class TrainConfig:
    """How the extractor is trained; the defaults are SEER's (Appendix A: Adam β 0.9/0.999,
    eps 1e-8, lr 1e-5, 1.5% warm-up, cosine schedule, batch 16 × 2, 2 epochs, LoRA), β TRL's
    (SEER does not state it)."""

    epochs: float = 2.0  # passes over the pairs
    max_steps: int | None = None  # optimizer steps to stop after, instead of the epochs
    learning_rate: float = 1e-5
    batch_size: int = 16  # pairs per forward pass
    gradient_accumulation: int = 2  # forward passes per optimizer step
    warmup_ratio: float = 0.015  # share of the steps the learning rate warms up over
    beta: float = 0.1  # DPO's β: how far the policy may move from the reference
    seed: int = 0
    max_length: int | None = None  # tokens of prompt + extraction kept (None: all)
    # train LoRA adapters (SEER's choice; needs peft), merged when saved; False: every weight
    lora: bool = True
    # recompute activations in the backward pass (TRL's default): a batch of 16 SEER pairs
    # of SmolLM2-135M held 22 GB of activations without it
    gradient_checkpointing: bool = True

    def __post_init__(self) -> None:
        for name, low in (("epochs", 0), ("learning_rate", 0), ("beta", 0)):
            if not getattr(self, name) > low:
                raise InputError(f"{name} must be positive, got {getattr(self, name)}",
                                 field_name=name)
        for name in ("max_steps", "batch_size", "gradient_accumulation", "max_length"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise InputError(f"{name} must be at least 1, got {value}", field_name=name)
        if not 0 <= self.warmup_ratio < 1:
            raise InputError(f"warmup_ratio must be in [0, 1), got {self.warmup_ratio}",
                             field_name="warmup_ratio")
        if self.lora and importlib.util.find_spec("peft") is None:
            raise MissingDependencyError("training LoRA adapters (lora)", "peft")
