"""The steps of `labeler reproduce rubric-experiment` (`labeler.workflows.reproduce.
rubric_experiment`): the settings, and where each step writes.

For each dataset (WANDS and ESCI, the experiment's two), with each arm's settings from the one
table of the experiment's configs (`labeler.sources.search_experiments.ARMS`): the BM25 top K
of the experiment's seeded query sample as its BM25 baseline ranks it (title^9.3, text^4.1;
zero-score products kept: `bm25.trec`); the same as its decision arms retrieve
(`bm25_boosted`, title^9.4, text^4: `bm25_boosted.trec`); `labeler build --artifact rubric` on
that run with the direct arm beside the bag of questions (direct alone and fused, bag summed
and fused); the same build with the threshold variant (only P(yes) > t counted), whose calls
the call cache serves. Every step writes under `<out>/rubric-experiment/<dataset>/` and is
skipped when its output is complete.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from labeler.errors import InputError
from labeler.sources.sampling import SEED
from labeler.sources.search_experiments import ARMS
from labeler.tasks.rubric import RubricConfig

#: the experiment's two datasets
DATASETS = ("wands", "esci")
#: queries sampled per dataset: ours (neither the seed nor the configs state the number)
QUERIES = 100
#: questions kept per query: ours (the experiment keeps every question its LLM writes)
MAX_QUESTIONS = 10
#: the BM25 run each step writes, and the arm whose fields it ranks by
RUNS = {"bm25": ("bm25.trec", "bm25"), "bm25_boosted": ("bm25_boosted.trec", "bag")}


@dataclass(frozen=True)
class RubricExperimentConfig:
    """What to run the experiment on; the rest is the experiment's."""

    datasets: tuple[str, ...] = DATASETS
    queries: int = QUERIES  # the seeded sample's size
    seed: int = SEED  # cheat_at_search run_strategy's
    rerank_k: int = ARMS["bag"].k  # the configs' k
    weight: float = ARMS["bag"].decision_weight  # the configs' decision_weight
    max_questions: int = MAX_QUESTIONS
    threshold: float = ARMS["threshold"].threshold  # the bag's at 8306f4f

    def __post_init__(self) -> None:
        if not self.datasets:
            raise InputError("name at least one dataset", field_name="dataset")
        if len(set(self.datasets)) != len(self.datasets):
            raise InputError("a dataset is named twice", field_name="dataset")
        self.rubric(self.datasets[0], None)  # every bound checked now

    def rubric(self, dataset: str, run: Path | None, *, threshold: bool = False
               ) -> RubricConfig:
        """The rubric build's config of `dataset` over the boosted BM25 `run`, with the direct
        arm asked; `threshold`: the threshold variant."""
        return RubricConfig(dataset=dataset, run=None if run is None else str(run),
                            k=self.rerank_k, rerank_k=self.rerank_k, weight=self.weight,
                            max_questions=self.max_questions, direct=True,
                            sample=self.queries, sample_seed=self.seed,
                            threshold=self.threshold if threshold else None)


@dataclass(frozen=True)
class Step:
    """One unit of the run: "bm25" and "bm25_boosted" write a run file, "rubric" and
    "threshold" a build's version folder; done when that output is complete (each is written
    atomically, a version's manifest last)."""

    what: str
    dataset: str
    output: Path

    def done(self) -> bool:
        return self.output.is_file() if self.what in RUNS \
            else (self.output / "manifest.json").is_file()

    @property
    def root(self) -> Path:
        """The `--out` of a build step."""
        return self.output.parents[3]


def work_folder(out: str | Path) -> Path:
    """Where the steps write: `<out>/rubric-experiment/`."""
    return Path(out) / "rubric-experiment"


def steps(config: RubricExperimentConfig, alias: str, out: str | Path) -> list[Step]:
    """Every step, in the order they run."""
    work = work_folder(out)
    return [Step(what, dataset, work / dataset / RUNS[what][0] if what in RUNS
                 else work / dataset / what / "rubric" / dataset / alias / "v1")
            for dataset in config.datasets
            for what in ("bm25", "bm25_boosted", "rubric", "threshold")]
