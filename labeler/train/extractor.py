"""Train a SEER artifact's extractor on its λ-weighted pairs (LPO) and write the model folder
that `labeler build --artifact seer --extractor DIR` takes."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from labeler.artifacts.manifest import data_files
from labeler.artifacts.reader import verify_artifact
from labeler.errors import InputError
from labeler.lines import read_jsonl
from labeler.llm.models import ALIASES, resolve_model
from labeler.paths import locked, share_tree
from labeler.train.config import TrainConfig

#: written into the trained model's folder: what it was trained on, and how
TRAINING = "labeler-training.json"
#: the pairs table's columns the trainer reads
COLUMNS = ("prompt", "chosen", "rejected", "lambda_weight")


@dataclass(frozen=True)
class Trained:
    """A finished training: the model folder written, and what the run did."""

    path: Path  # the model folder (weights, tokenizer, TRAINING)
    model: str  # the model trained, as resolved (repo id or local path)
    alias: str  # its short name: the alias, or the repo's or file's name
    pairs: int  # pairs in the table trained on
    steps: int  # optimizer steps taken
    losses: list[float]  # the λ-weighted loss of each step, as the trainer logged it

    @property
    def final_loss(self) -> float:
        return self.losses[-1]


@dataclass(frozen=True)
class SeerPairs:
    """A SEER artifact's pairs table, checked: where it is, its manifest, its rows."""

    folder: Path
    manifest: dict
    rows: list[dict]  # prompt, chosen, rejected (chat messages) and lambda_weight

    @property
    def extractor(self) -> str:
        """The model the artifact's pairs were sampled from: its extractor, else its
        generator (an alias when the build used one, else the model it loaded)."""
        config = self.manifest.get("config") or {}
        if config.get("extractor"):
            return config["extractor"]
        llm = self.manifest["llm"]
        return llm if llm in ALIASES else self.manifest["model_id"]


def read_pairs(artifact: str | Path) -> SeerPairs:
    """The pairs table of the SEER artifact version folder `artifact`, its files verified
    against the manifest; InputError or ArtifactError for anything else, or no pairs."""
    folder = Path(artifact)
    if not folder.is_dir():
        raise InputError("no such artifact version folder", path=str(folder),
                         hint="give a folder like out/seer/<dataset>/<llm>/v1")
    manifest = verify_artifact(folder)
    if manifest["artifact"] != "seer":
        raise InputError(f"a {manifest['artifact']} artifact has no preference pairs: give a "
                         "seer artifact", path=str(folder), field_name="artifact",
                         hint="labeler build --artifact seer makes one")
    rows = [{name: record[name] for name in COLUMNS}
            for file in data_files(folder, "pairs") for _, record in read_jsonl(file)]
    if not rows:
        raise InputError("the artifact has no preference pairs (every query's extractions "
                         "were skipped or scored alike)", path=str(folder),
                         hint="build with more queries or --samples")
    return SeerPairs(folder, manifest, rows)


def train_extractor(artifact: str | Path, *, out: str | Path, model: str | None = None,
                    config: TrainConfig | None = None,
                    cache_dir: str | Path | None = None) -> Trained:
    """Train `model` (default: the artifact's extractor) on the SEER artifact's pairs with the
    λ-weighted DPO loss and write it, with its tokenizer, to the folder `out`, which must not
    exist yet (or be empty). Everything that can fail on the inputs does so before a model
    loads; `out` appears only once complete (see `_new_folder`).
    """
    config = config or TrainConfig()
    target = Path(out)
    _check_new(target)
    pairs = read_pairs(artifact)
    spec = resolve_model(model or pairs.extractor)
    with _new_folder(target) as partial:
        from labeler.train.run import run_training

        steps, losses = run_training(spec, pairs.rows, config, partial, cache_dir=cache_dir)
        (partial / TRAINING).write_text(json.dumps({
            "artifact": str(pairs.folder.resolve()), "dataset": pairs.manifest["dataset"],
            "llm": pairs.manifest["llm"], "version": pairs.manifest["version"],
            "model": spec.model_id, "pairs": len(pairs.rows), "steps": steps, "losses": losses,
            "config": asdict(config)}, indent=1) + "\n")
    return Trained(target, spec.model_id, spec.alias, len(pairs.rows), steps, losses)


def _check_new(target: Path) -> None:
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise InputError("already exists: the trained model needs a new folder",
                         path=str(target), hint="remove it or give another --out")


@contextmanager
def _new_folder(target: Path) -> Iterator[Path]:
    """A `.partial-*` folder beside `target`, renamed to `target` when the block ends well,
    removed when it fails; under a lock, so that a second training into `target` waits and
    then finds it taken, and the partial folders of killed trainings go first."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with locked(target.with_name(f".{target.name}.lock")):
        _check_new(target)  # written by another training while this one waited
        for stale in target.parent.glob(f".partial-{target.name}-*"):
            shutil.rmtree(stale, ignore_errors=True)
        partial = Path(tempfile.mkdtemp(prefix=f".partial-{target.name}-", dir=target.parent))
        try:
            yield partial
            share_tree(partial)
            os.replace(partial, target)
        finally:
            shutil.rmtree(partial, ignore_errors=True)
