"""The steps of `labeler reproduce seer-paper` (`labeler.workflows.reproduce.seer_paper`): the
settings, and where each step writes.

For each dataset: `labeler build --artifact seer` on SEER's training split (the pairs),
`labeler train-extractor` on those pairs (LoRA, SEER's settings), `labeler build --artifact
seer` on the test split with one sample a query (the reference that `labeler score --rag`
answers from: its questions, answers and top-k passages, which are Table 1's Full), then the
base and the trained extractor's greedy evidence of the test split's passages, each a
`{qid, evidence}` submission. Every step writes under `<out>/seer-paper/<dataset>/` and is
skipped when its output is complete.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from labeler.errors import InputError
from labeler.tasks.seer import MAX_EVIDENCE_TOKENS, SAMPLES, SeerConfig
from labeler.train.config import TrainConfig
from labeler.workflows.steps import dataset_folder

#: the paper's datasets (its Table 1)
DATASETS = ("nq", "tq", "hotpotqa")
#: dataset -> (the split the pairs are built on, the split Table 1 is measured on): SEER's
#: Table 3's, DPR's NQ-open and TriviaQA train and test splits (FlashRAG's uploads: NQ-open
#: test 3,610, TriviaQA test 11,313) and KILT's HotpotQA train and dev (its test is not
#: public). Any other dataset (nq-sample, jsonl:PATH) is both.
SPLITS = {"nq": ("nq-open-train", "nq-open-test"), "tq": ("tq-train", "tq-test"),
          "hotpotqa": ("hotpotqa-train", "hotpotqa")}
#: SEER's corpus for its datasets: "all Wikipedia passages" of DPR (its Implementation
#: Details, after FilCo), DPR's 21M psgs_w100; any other dataset keeps its own
CORPUS = "wiki-dpr"
#: SEER's base extractor, and the generator of Table 1's Llama2 rows
GENERATOR = "llama2-7b-chat"
#: SEER's faithfulness expert
FAITHFULNESS = "alignscore"
#: the preset's settings SEER does not state, each with where ours comes from (the card
#: lists them)
UNSTATED = {
    "beta": "DPO's β 0.1: TRL's default",
    "lora": "LoRA rank 8, α 16, dropout 0, every linear layer: Llama-Factory's defaults",
    "tau": "τ 1.0 of the CoV softmax: SEER tuned it in {0.2, 0.5, 1, 2, 5} and names none",
    "max_new_tokens": f"{MAX_EVIDENCE_TOKENS} new tokens an extraction or answer",
    "prompts": "the extraction and answer prompts: SEER publishes neither",
    "duplicates": "near-duplicates at Kondrak 2-gram similarity ≥ 0.8",
    "sbert": "conciseness's SBERT: the bundled all-MiniLM-L6-v2",
    "full_answer": "the full-length answer by the generator, not GPT-3.5-turbo",
    "retriever": "the top 5 by --encoder (BGE-M3, offline MiniLM), not adversarial DPR: its "
                 "checkpoint (facebookresearch/DPR's single-adv-hn.nq.bert-base-encoder) is "
                 "a separate question and passage encoder outside the Hub",
}


@dataclass(frozen=True)
class SeerPaperConfig:
    """What to run SEER's Table 1 on; every other setting is the paper's where it states one
    (`UNSTATED`: where it does not)."""

    datasets: tuple[str, ...] = DATASETS
    limit: int | None = None  # only the first N test queries
    train_limit: int | None = None  # only the first N training queries
    k: int = 5  # SEER's top 5
    samples: int = SAMPLES  # SEER's M = 10
    extractor: str | None = None  # the base extractor (None: the generator, as SEER's)
    faithfulness: str = FAITHFULNESS
    tau: float = 1.0
    max_new_tokens: int = MAX_EVIDENCE_TOKENS
    encoder: str | None = None
    index: str | None = None
    corpus: str | None = None  # the corpus retrieved from (None: `corpus_of`)
    run: str | None = None  # a run of the one dataset whose train and test split are one
    train: TrainConfig = field(default_factory=TrainConfig)

    def __post_init__(self) -> None:
        if not self.datasets:
            raise InputError("name at least one dataset", field_name="dataset")
        if len(set(self.datasets)) != len(self.datasets):
            raise InputError("a dataset is named twice", field_name="dataset")
        if self.run is not None and (len(self.datasets) > 1
                                     or len(set(splits(self.datasets[0]))) > 1):
            raise InputError("--run ranks one split's queries: give it with one dataset whose "
                             "pairs and Table 1 share their queries (e.g. nq-sample)",
                             field_name="run")
        self.pairs(self.datasets[0])  # every bound checked now

    def corpus_of(self, dataset: str) -> str | None:
        """The corpus `dataset`'s splits retrieve from: --corpus, else SEER's (`CORPUS`) for
        its datasets, else the dataset's own (None)."""
        return self.corpus or (CORPUS if dataset in SPLITS else None)

    def _seer(self, dataset: str, split: str, limit: int | None, samples: int) -> SeerConfig:
        return SeerConfig(dataset=split, corpus=self.corpus_of(dataset), limit=limit, k=self.k,
                          samples=samples,
                          extractor=self.extractor, faithfulness=self.faithfulness,
                          tau=self.tau, max_new_tokens=self.max_new_tokens,
                          encoder=self.encoder, index=self.index, run=self.run)

    def pairs(self, dataset: str) -> SeerConfig:
        """The pairs' build on `dataset`'s training split."""
        return self._seer(dataset, splits(dataset)[0], self.train_limit, self.samples)

    def reference(self, dataset: str) -> SeerConfig:
        """The test split's build, one sample a query: the reference Table 1 is scored on."""
        return self._seer(dataset, splits(dataset)[1], self.limit, 1)


def splits(dataset: str) -> tuple[str, str]:
    """(training split, test split) of `dataset`."""
    return SPLITS.get(dataset, (dataset, dataset))


@dataclass(frozen=True)
class Step:
    """One unit of the run: "pairs" and "reference" write a build's version folder,
    "extractor" a model folder, "base" and "trained" an evidence file; done when that output
    is complete (each appears whole: a version's manifest is written last, a model folder and
    a file are renamed into place)."""

    what: str
    dataset: str
    output: Path

    def done(self) -> bool:
        if self.what in ("pairs", "reference"):
            return (self.output / "manifest.json").is_file()
        if self.what == "extractor":
            from labeler.train.extractor import TRAINING

            return (self.output / TRAINING).is_file()
        return self.output.is_file()

    @property
    def root(self) -> Path:
        """The `--out` of a build step."""
        return self.output.parents[3]


def work_folder(out: str | Path) -> Path:
    """Where the steps write: `<out>/seer-paper/`."""
    return Path(out) / "seer-paper"


def steps(config: SeerPaperConfig, alias: str, out: str | Path) -> list[Step]:
    """Every step, in the order they run."""
    plan = []
    for dataset in config.datasets:
        work = work_folder(out) / dataset_folder(dataset)
        train, test = (dataset_folder(name) for name in splits(dataset))
        plan += [Step("pairs", dataset, work / "pairs" / "seer" / train / alias / "v1"),
                 Step("extractor", dataset, work / "extractor"),
                 Step("reference", dataset, work / "test" / "seer" / test / alias / "v1"),
                 Step("base", dataset, work / "evidence" / "base.jsonl"),
                 Step("trained", dataset, work / "evidence" / "trained.jsonl")]
    return plan
