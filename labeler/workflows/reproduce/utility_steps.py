"""The steps of `labeler reproduce utility-paper` (`labeler.workflows.reproduce.utility_paper`): the
settings, and where each step writes.

For each dataset: `labeler build` of the utility labels on the pools the paper needs (rp,
and hgp and mcp on the datasets of its Section 4), every judge method of
`labeler.judges.methods.METHODS` with and without the pseudo-answer on rp, `labeler score`
of each submission against the LLM's rp labels (with --rag for the selections with the
pseudo-answer: Table 6), and `labeler compare` over the LLMs' mcp labels. Every step writes
under `<out>/utility-paper/` and is skipped when its output is complete; an unfinished build
resumes at its unfinished shards, and the call cache serves every answer already asked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from labeler.errors import InputError
from labeler.judges.methods import METHODS, JudgeConfig
from labeler.llm.config import LLMConfig
from labeler.report import paper
from labeler.tasks.utility import UtilityConfig

#: datasets the paper labels on the retrieved pool only (its Section 5); the others also get
#: the hgp and mcp pools of Section 4 (Tables 2, 3; Figures 1-5)
RP_ONLY = ("hotpotqa", "2wiki", "fever")
#: the entity-answer extractor msmarco-fqa needs, the paper's
EXTRACTOR = "qwen3-32b"
#: datasets whose comparison is the paper's Figure 1b (NQ) besides Figure 3
NQ = ("nq", "nq-sample")
#: the cap on every answer and judgment in the paper's code
MAX_NEW_TOKENS = 4096
#: the cap on AttR's answer, whose attention it reads (src/listwise_attention.py)
ATTENTION_TOKENS = 32
#: the corpus of a dataset whose own is not the paper's (MS MARCO v1 passages for msmarco-fqa)
CORPUS = {"msmarco-fqa": "msmarco-passage"}


@dataclass(frozen=True)
class ReproduceConfig:
    """What to reproduce the paper on; every other setting is the paper's."""

    datasets: tuple[str, ...] = paper.DATASETS  # the paper's six
    limit: int | None = None  # only the first N queries of each dataset
    k: int = 20  # retrieved passages per query (the paper's top 20)
    run: str | None = None  # a TREC or JSONL run instead of retrieval (one dataset only)
    encoder: str | None = None  # the retriever (default: bge-m3, offline the bundled minilm)
    corpus: str | None = None  # a corpus instead of the paper's (`CORPUS`, else the dataset's)
    index: str | None = None  # the dense index (flat by default)
    max_new_tokens: int = MAX_NEW_TOKENS  # cap on every answer and judgment

    def __post_init__(self) -> None:
        if not self.datasets:
            raise InputError("name at least one dataset", field_name="dataset")
        if len(set(self.datasets)) != len(self.datasets):
            raise InputError("a dataset is named twice", field_name="dataset")
        if self.run is not None and len(self.datasets) > 1:
            raise InputError("--run holds one dataset's queries: name that one dataset",
                             field_name="run")

    def pools(self, dataset: str) -> tuple[str, ...]:
        """The candidate pools `dataset` is labelled on."""
        return ("rp",) if dataset in RP_ONLY else ("rp", "hgp", "mcp")

    def _data(self, dataset: str, pool: str) -> dict:
        """The data options of `dataset` on `pool` (`--run` ranks the retrieved pools only)."""
        return {"dataset": dataset, "limit": self.limit, "pool": pool, "k": self.k,
                "run": None if pool == "hgp" else self.run, "encoder": self.encoder,
                "corpus": self.corpus or CORPUS.get(dataset), "index": self.index,
                "max_new_tokens": self.max_new_tokens}

    def utility(self, dataset: str, pool: str) -> UtilityConfig:
        """The build's config of `dataset` on `pool`."""
        extractor = EXTRACTOR if dataset == "msmarco-fqa" else None
        return UtilityConfig(**self._data(dataset, pool), answer_extractor=extractor)

    def judge(self, dataset: str, method: str, with_answer: bool) -> JudgeConfig:
        """The judge's config of `method` on `dataset`'s rp pool (AttR's answer capped as the
        paper's code caps it)."""
        data = self._data(dataset, "rp")
        if METHODS[method].operation == "attention":
            data["max_new_tokens"] = min(self.max_new_tokens, ATTENTION_TOKENS)
        return JudgeConfig(**data, method=method, with_answer=with_answer)


@dataclass(frozen=True)
class Step:
    """One unit of the run: its output is a version folder (build, compare) or a submission
    file (judge), and the step is done when that output is complete."""

    what: str  # "build" | "judge" | "compare"
    dataset: str
    output: Path
    pool: str | None = None
    llm: str | None = None  # the LLM alias (None: the step asks none, or all of them)
    method: str | None = None
    with_answer: bool | None = None
    llms: tuple[str, ...] = field(default=(), compare=False)  # compare: its LLMs, in order

    def done(self) -> bool:
        """Whether the output is complete (a version's manifest is written last; a
        submission is written atomically)."""
        return (self.output / "manifest.json").is_file() if self.what != "judge" \
            else self.output.is_file()


def work_folder(out: str | Path) -> Path:
    """Where the steps write: `<out>/utility-paper/`."""
    return Path(out) / "utility-paper"


def variants() -> list[tuple[str, bool]]:
    """(method, with the pseudo-answer) of every judge method: both variants where it has
    one with the answer, else the one it has."""
    return [(name, answer) for name, method in METHODS.items()
            for answer in ((False, True) if method.with_answer is not None else (False,))]


def steps(config: ReproduceConfig, aliases: Sequence[str], out: str | Path) -> list[Step]:
    """Every step of the run, in order: the builds, the judges, the comparisons."""
    work = work_folder(out)
    builds, judges, compares = [], [], []
    for dataset in config.datasets:
        for pool in config.pools(dataset):
            builds += [Step("build", dataset, utility_folder(work, pool, dataset, alias),
                            pool=pool, llm=alias) for alias in aliases]
        for method, answer in variants():
            asks = bool(METHODS[method].templates) or METHODS[method].needs_answer
            for alias in (aliases if asks else [None]):
                name = method + ("+answer" if answer else "")
                where = work / "judge" / dataset / (alias or "") / f"{name}.jsonl"
                judges.append(Step("judge", dataset, where, pool="rp", llm=alias,
                                   method=method, with_answer=answer))
        if "mcp" in config.pools(dataset):
            compares.append(Step("compare", dataset,
                                 work / "mcp" / "compare" / dataset / "+".join(aliases) / "v1",
                                 pool="mcp", llms=tuple(aliases)))
    return builds + judges + compares


def utility_folder(work: Path, pool: str, dataset: str, alias: str) -> Path:
    """The version folder of the utility labels of `alias` on `dataset`'s `pool`."""
    return work / pool / "utility" / dataset / alias / "v1"


def aliases_of(llms: Sequence[LLMConfig]) -> list[str]:
    """The LLMs' aliases (an unknown name fails here); InputError for one named twice."""
    from labeler.llm.models import resolve_model

    aliases = [resolve_model(llm.name).alias for llm in llms]
    if not aliases:
        raise InputError("name at least one LLM", field_name="llm")
    if len(set(aliases)) != len(aliases):
        raise InputError("an LLM is named twice", field_name="llm")
    return aliases

