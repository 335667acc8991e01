"""`labeler train-extractor`: parse, call `labeler.train.train_extractor`, render the summary."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from labeler.cli.options import cache_dir_option
from labeler.cli.output import emit, json_option
from labeler.train.config import TrainConfig

#: the options' defaults: SEER's settings
SEER = TrainConfig()


@click.command("train-extractor")
@click.argument("artifact", type=click.Path(path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Model folder to write (new or empty): weights and tokenizer, for "
                   "`labeler build --artifact seer --extractor DIR`.")
@click.option("--model", metavar="MODEL",
              help="Model to train: alias, HF repo id or local folder [default: the "
                   "artifact's extractor, else its generator].")
@click.option("--epochs", type=click.FloatRange(min=0, min_open=True), default=SEER.epochs,
              show_default=True, help="Passes over the pairs.")
@click.option("--max-steps", type=click.IntRange(min=1),
              help="Stop after N optimizer steps instead of --epochs.")
@click.option("--lr", "learning_rate", type=click.FloatRange(min=0, min_open=True),
              default=SEER.learning_rate, show_default=True, help="Peak learning rate (cosine "
              f"schedule, {SEER.warmup_ratio:.1%} warm-up).")
@click.option("--batch-size", type=click.IntRange(min=1), default=SEER.batch_size,
              show_default=True, help="Pairs per forward pass.")
@click.option("--gradient-accumulation", type=click.IntRange(min=1),
              default=SEER.gradient_accumulation, show_default=True,
              help="Forward passes per optimizer step.")
@click.option("--beta", type=click.FloatRange(min=0, min_open=True), default=SEER.beta,
              show_default=True, help="DPO's β: how far the model may move from where it "
                                      "started.")
@click.option("--seed", type=int, default=SEER.seed, show_default=True,
              help="Seed of the pairs' shuffling (and of LoRA's initial weights).")
@click.option("--max-length", type=click.IntRange(min=1),
              help="Tokens of prompt + extraction kept [default: all].")
@click.option("--lora/--full", " /--no-lora", default=SEER.lora, show_default=True,
              help="Train LoRA adapters (SEER's choice; needs peft), merged when saved; "
                   "--full (--no-lora) fine-tunes every weight.")
@click.option("--gradient-checkpointing/--no-gradient-checkpointing",
              default=SEER.gradient_checkpointing, show_default=True,
              help="Recompute activations in the backward pass: far less memory, slower.")
@cache_dir_option
@json_option
def train_extractor(artifact: Path, out: Path, model: str | None, cache_dir: Path | None,
                    as_json: bool, **options) -> None:
    """Train the extractor of a seer artifact on its preference pairs, each pair's DPO loss
    weighted by its λ (SEER's LPO), and write the trained model to --out.

    The defaults are SEER's (Adam, lr 1e-5, batch 16 x 2 accumulation, 2 epochs, LoRA).
    """
    from labeler.train.extractor import train_extractor as train

    trained = train(artifact, out=out, model=model, config=TrainConfig(**options),
                    cache_dir=cache_dir)
    table = Table(title=f"trained extractor: {artifact}")
    for column in ("model", "pairs", "steps", "final loss"):
        table.add_column(column, justify="left" if column == "model" else "right")
    table.add_row(trained.alias, str(trained.pairs), str(trained.steps),
                  f"{trained.final_loss:.4f}")
    emit({"model": trained.alias, "pairs": trained.pairs, "steps": trained.steps,
          "final_loss": trained.final_loss, "path": trained.path}, [table],
         [f"model: {trained.path}"], as_json=as_json)
