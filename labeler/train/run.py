"""One λ-weighted DPO run with TRL: load the model, train under labeler's progress bar, save.
Imported when a training starts: TRL is the optional extra `labeler[train]`."""

from __future__ import annotations

from contextlib import ExitStack, contextmanager
from pathlib import Path

# isort: split
from labeler.train.lambda_dpo import LambdaDPOTrainer  # first: says when TRL is missing

# isort: split
import torch
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer, PrinterCallback, TrainerCallback
from trl import DPOConfig

from labeler.errors import ModelLoadError, first_line
from labeler.llm.gguf import gguf_snapshot
from labeler.llm.models import ModelSpec, model_revision
from labeler.network import quiet_retries
from labeler.progress import progress_bar, transformers_quiet
from labeler.train.config import TrainConfig

#: SEER's LoRA (Llama-Factory's defaults): rank 8, α 16, every linear layer
LORA = {"r": 8, "lora_alpha": 16, "lora_dropout": 0.0, "target_modules": "all-linear",
        "task_type": "CAUSAL_LM"}


def run_training(spec: ModelSpec, rows: list[dict], config: TrainConfig, folder: Path, *,
                 cache_dir: str | Path | None = None) -> tuple[int, list[float]]:
    """Train `spec`'s model on `rows` (prompt, chosen, rejected, lambda_weight) and save it
    with its tokenizer into `folder`; returns the optimizer steps and each step's loss."""
    model, tokenizer = _load(spec, cache_dir)
    peft_config = None
    if config.lora:
        from peft import LoraConfig

        peft_config = LoraConfig(**LORA)
    # TRL's tokenizing bars and its reference model's loading bar: the training's says enough
    with _datasets_quiet(), transformers_quiet():
        trainer = LambdaDPOTrainer(model=model, args=dpo_config(config, folder),
                                   train_dataset=Dataset.from_list(rows),
                                   processing_class=tokenizer, peft_config=peft_config)
    trainer.remove_callback(PrinterCallback)  # it prints every step's log dict to stdout
    bar = _StepBar()
    trainer.add_callback(bar)
    with bar.shown:
        trainer.train()
    trained = trainer.model.merge_and_unload() if config.lora else trainer.model
    with transformers_quiet():
        trained.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    return trainer.state.global_step, losses


def dpo_config(config: TrainConfig, folder: Path) -> DPOConfig:
    """TRL's settings for `config`: SEER's Adam and cosine schedule, a log entry (the loss)
    every step, nothing saved or reported by the trainer itself."""
    return DPOConfig(
        output_dir=str(folder), num_train_epochs=config.epochs,
        max_steps=config.max_steps or -1, learning_rate=config.learning_rate,
        per_device_train_batch_size=config.batch_size,
        gradient_accumulation_steps=config.gradient_accumulation,
        warmup_steps=config.warmup_ratio,  # a float below 1: a share of the steps
        lr_scheduler_type="cosine", adam_beta1=0.9, adam_beta2=0.999, adam_epsilon=1e-8,
        weight_decay=0.0, beta=config.beta, seed=config.seed, max_length=config.max_length,
        gradient_checkpointing=config.gradient_checkpointing,
        bf16=torch.cuda.is_available() and torch.cuda.is_bf16_supported(),
        dataloader_pin_memory=torch.cuda.is_available(), logging_steps=1, save_strategy="no",
        report_to="none", disable_tqdm=True)


def _load(spec: ModelSpec, cache_dir: str | Path | None):
    """The model (float32) and its tokenizer; a .gguf is read from its converted folder."""
    source = spec.model_id
    try:
        if spec.gguf:
            source = gguf_snapshot(spec, model_revision(spec), cache_dir)
        with quiet_retries(), transformers_quiet():
            tokenizer = AutoTokenizer.from_pretrained(source)
            model = AutoModelForCausalLM.from_pretrained(source, dtype=torch.float32)
    except (OSError, ValueError, KeyError, RuntimeError, ImportError) as exc:
        raise ModelLoadError(spec.model_id, first_line(exc)) from exc
    if not tokenizer.chat_template:
        raise ModelLoadError(spec.model_id, "the tokenizer has no chat template: the pairs "
                             "are chat messages")
    return model, tokenizer


class _StepBar(TrainerCallback):
    """labeler's progress bar over the optimizer steps, drawn while `shown` is entered."""

    def __init__(self) -> None:
        self.shown = ExitStack()
        self._advance = None

    def on_train_begin(self, args, state, control, **kwargs):
        self._advance = self.shown.enter_context(progress_bar("training", state.max_steps))

    def on_step_end(self, args, state, control, **kwargs):
        self._advance(1)


@contextmanager
def _datasets_quiet():
    """datasets' progress bars off for one block."""
    from datasets.utils import logging as datasets_logging

    was = datasets_logging.is_progress_bar_enabled()
    datasets_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was:
            datasets_logging.enable_progress_bar()
