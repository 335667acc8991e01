"""Score a submission (selection, ranking or extraction) against reference labels.

The reference is a utility artifact (a version folder, its data.jsonl, or `hub:` spec) or
a TREC qrels file. From a utility record, the gold set of a query is its `utility_pids` and
the ranking label of a candidate is its `utility` (1 or 0; candidates are the judged
documents); from qrels, the label is the judgment and the gold set the documents with
label > 0.

Rankings against a utility artifact are averaged over the queries whose gold set is not empty,
as the utility paper does (its qrels hold the gold utilitarian passages only, so pytrec_eval
never sees the others); `include_empty` scores the others too, 0 on every metric. Against
qrels, every judged query counts, as in trec_eval.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from functools import cached_property
from itertools import chain
from pathlib import Path

import numpy as np

from labeler.errors import InputError, UnknownNameError
from labeler.formats import Qrels, is_jsonl
from labeler.llm.config import LLMConfig
from labeler.metrics.ranking import rank_metrics
from labeler.metrics.seer.experts import load_experts
from labeler.metrics.seer.faithfulness import DEFAULT_FAITHFULNESS
from labeler.metrics.selection import selection_metrics
from labeler.metrics.significance import PairedTest, paired_t_test
from labeler.paths import atomic_file
from labeler.scoring.submissions import Submission, gc_paused, read_submission

HUB_PREFIX = "hub:"
MISSING = ("zero", "skip")


@dataclass
class Reference:
    """Labels to score against, one entry per query, in the reference's order."""

    source: str
    qrels: dict[str, dict[str, int]]  # qid -> {pid: label} over the judged documents
    gold: dict[str, list[str]]  # qid -> gold set (utility_pids, or label > 0)
    rank_nonempty_gold: bool = False  # rankings average over queries with gold only (Task's)
    manifest: dict | None = None  # the artifact's manifest; None for qrels or a bare .jsonl
    artifact: Path | None = None  # the artifact's folder or .jsonl; None for qrels

    @property
    def qids(self) -> list[str]:
        return list(self.qrels)

    @cached_property
    def records(self) -> dict[str, dict]:
        """qid -> the artifact's record ({} for qrels), read again when first asked for: only
        extractions and --rag need them, and holding every record while a ranking is scored
        cost more than the scoring (a third of `labeler score`'s time on 10k queries)."""
        if self.artifact is None:
            return {}
        from labeler.artifacts.reader import load_artifact

        return {record["qid"]: record for record in load_artifact(self.artifact).records}


@dataclass
class Report:
    """The scores of one submission; `tests` compare it with `baseline`, query by query."""

    kind: str
    submission: str
    reference: str
    qids: list[str]  # the scored queries
    missing: list[str]  # reference queries the submission lacks
    per_query: dict[str, np.ndarray]  # metric -> value per scored query (NaN: does not apply)
    summary: dict[str, float]
    counts: dict[str, int]
    skipped: list[InputError] = field(default_factory=list)  # bad lines skipped (--lenient)
    baseline: Report | None = None
    tests: dict[str, PairedTest] = field(default_factory=dict)

    def as_dict(self) -> dict:
        """JSON-ready: NaN becomes null."""
        out = {
            "kind": self.kind,
            "submission": self.submission,
            "reference": self.reference,
            "counts": self.counts,
            "metrics": _clean(self.summary),
        }
        if self.baseline is not None:
            out["baseline"] = {
                "submission": self.baseline.submission,
                "counts": self.baseline.counts,
                "metrics": _clean(self.baseline.summary),
                "tests": {name: _clean(t.as_dict()) for name, t in self.tests.items()},
            }
        return out

    def rows(self) -> list[dict]:
        """One dict per scored query: qid, whether it was missing, each metric."""
        missing = set(self.missing)
        columns = list(self.per_query.items())
        return [
            {"qid": qid, "missing": qid in missing,
             **_clean({name: float(values[i]) for name, values in columns})}
            for i, qid in enumerate(self.qids)
        ]


def score(
    submission: str | Path,
    against: str | Path | Reference,
    *,
    kind: str | None = None,
    ks: Sequence[int] = (5, 10),
    missing: str = "zero",
    lenient: bool = False,
    baseline: str | Path | None = None,
    include_empty: bool = False,
    llm: LLMConfig | None = None,
    faithfulness: str = DEFAULT_FAITHFULNESS,
    sbert: str | None = None,
    cache_dir: str | Path | None = None,
    rag: bool = False,
) -> Report:
    """Read, check and score `submission` (and `baseline`, paired) against `against`.

    `missing`: "zero" scores reference queries absent from the submission 0 on every metric
    (trec_eval -c); "skip" leaves them out. A ranking against a reference that averages over
    non-empty gold (a utility artifact) leaves out the queries with empty gold, counted as
    `empty_gold_left_out`, unless `include_empty`; against qrels every query counts. `llm`
    (extraction only) loads that model to count tokens and run SEER's three experts with it
    as the generator: faithfulness by the scorer `faithfulness` names (labeler.metrics.seer.faithfulness),
    helpfulness, and conciseness with the SBERT model `sbert` (default the bundled MiniLM).
    `rag` (selections against a utility artifact): the artifact's LLM (`llm` overrides it)
    answers each query with only the selected candidates, as the artifact's own `rag` answers
    are asked (`labeler.scoring.rag`); `rag_accuracy` is reported beside the artifact's
    `rag_all_accuracy` (all candidates) and `rag_utilitarian_accuracy` (its gold utilitarian
    ones), over the same queries (a missing one scores 0 under "zero").
    Every input is read and checked before any model is loaded.
    """
    if missing not in MISSING:
        raise UnknownNameError("--missing policy", missing, list(MISSING))
    reference = against if isinstance(against, Reference) else load_reference(against)
    known = set(reference.qrels)
    ranked = _Ranked(reference.qrels, ks)
    sub = read_submission(submission, kind=kind, known=known, lenient=lenient, consume=ranked)
    base = base_ranked = None
    if baseline is not None:
        base_ranked = _Ranked(reference.qrels, ks)
        base = read_submission(baseline, kind=sub.kind, known=known, lenient=lenient,
                               consume=base_ranked)
    if sub.kind == "extraction" and not reference.records:
        raise InputError("extraction is scored against a reference with questions and answers "
                         "(a utility artifact), not qrels", reference.source)
    if llm is not None and sub.kind != "extraction" and not rag:
        raise InputError(f"--llm scores extraction submissions only, this is a {sub.kind}",
                         field_name="llm")
    setting = _rag_setting(sub, reference) if rag else None
    if include_empty and sub.kind != "ranking":
        raise InputError(f"--include-empty applies to rankings only, this is a {sub.kind} (a "
                         "selection already scores empty-gold queries, as accuracy)",
                         field_name="include_empty")
    experts = None if llm is None or rag else load_experts(faithfulness, sbert=sbert)
    if setting is not None and llm is None:
        from labeler.scoring.rag import load_reader

        model = load_reader(reference.manifest, cache_dir=cache_dir)
    else:
        model = None if llm is None else llm.load(cache_dir)
    with gc_paused() if model is None else nullcontext():
        options = {"missing": missing, "include_empty": include_empty,
                   "model": None if setting else model, "experts": experts}
        report = _report(sub, reference, ranked, **options)
        if base is not None:
            report.baseline = _report(base, reference, base_ranked, **options)
        if setting is not None:
            from labeler.llm.calls import Calls

            calls = Calls(model)
            for run, entries in ((report, sub), (report.baseline, base)):
                if run is not None:
                    _add_rag(run, entries, reference, calls, *setting)
        if base is not None:
            report.tests = _paired(report, report.baseline)
    return report


def _rag_setting(sub: Submission, ref: Reference) -> tuple:
    """(kind, sampling) of the reference's `rag` answers; InputError where --rag cannot apply."""
    from labeler.scoring.rag import artifact_setting

    if sub.kind != "selection":
        raise InputError(f"--rag answers with a selection's passages, this is a {sub.kind}",
                         field_name="rag")
    if ref.manifest is None:
        raise InputError("--rag needs the utility artifact's manifest (its LLM, prompts and "
                         "decoding): give its version folder or a hub: reference", ref.source,
                         field_name="against")
    return artifact_setting(ref.manifest, ref.source)


def _add_rag(report: Report, sub: Submission, ref: Reference, llm, kind: str, sampling) -> None:
    """`rag_accuracy` per scored query, with the selected candidates only (0 for a missing
    query); its mean, and the artifact's own `rag_all_accuracy` and
    `rag_utilitarian_accuracy` over the same queries, in the summary."""
    from labeler.scoring.rag import rag_correct

    asked = [q for q in report.qids if q in sub.entries]
    correct = dict(zip(asked, rag_correct(
        llm, [ref.records[q] for q in asked], [sub.entries[q] for q in asked], kind=kind,
        sampling=sampling, what=f"answers with the selection of {Path(sub.path).name}")))
    report.per_query["rag_accuracy"] = np.array([float(correct.get(q, False))
                                                 for q in report.qids])
    rag = [ref.records[q]["rag"] for q in report.qids]
    for name, values in (("rag_accuracy", report.per_query["rag_accuracy"]),
                         ("rag_all_accuracy", [r["all"]["correct"] for r in rag]),
                         ("rag_utilitarian_accuracy", [r["utilitarian"]["correct"] for r in rag])):
        report.summary[name] = float(np.mean(values)) if len(values) else math.nan


def _report(sub: Submission, ref: Reference, ranked: _Ranked, *, missing: str,
            include_empty: bool, model, experts) -> Report:
    considered = ref.qids
    if sub.kind == "ranking" and ref.rank_nonempty_gold and not include_empty:
        considered = [q for q in considered if ref.gold[q]]
    absent = [q for q in considered if q not in sub.entries]
    qids = considered if missing == "zero" else [q for q in considered if q in sub.entries]
    counts = {"queries": len(qids), "missing": len(absent), "skipped_lines": len(sub.skipped)}
    if sub.kind == "selection":
        scores = selection_metrics(sub.entries, ref.gold, qids=qids)
        per_query, summary = scores.per_query(), scores.summary()
        counts |= scores.counts()
    elif sub.kind == "ranking":
        per_query = ranked.per_query(qids)
        summary = {name: float(v.mean()) if v.size else math.nan for name, v in per_query.items()}
        counts["queries_without_relevant"] = sum(
            1 for q in qids if max(ref.qrels[q].values(), default=0) < 1
        )
        counts["empty_gold_left_out"] = len(ref.qids) - len(considered)
    else:
        from labeler.metrics.extraction import extraction_metrics  # imports `regex`

        records = [ref.records[q] for q in qids]
        per_query = extraction_metrics(
            [sub.entries.get(q) for q in qids],
            questions=[r["question"] for r in records],
            answers=[r["answers"] for r in records],
            passages=[[f"{c['title']} {c['text']}" for c in r["candidates"]] for r in records],
            qids=qids,
            backend=model,
            experts=experts,
            weights=((ref.manifest or {}).get("settled") or {}).get("weights"),
        )
        summary = {name: float(v.mean()) if v.size else math.nan for name, v in per_query.items()}
    return Report(sub.kind, sub.path, ref.source, qids, absent, per_query, summary, counts,
                  sub.skipped)


class _Ranked:
    """A ranking's per-query metrics, computed chunk by chunk as `read_submission` reads it (its
    `consume`), so that its documents are never all in memory at once."""

    def __init__(self, qrels: dict[str, dict[str, int]], ks: Sequence[int]) -> None:
        self.qrels, self.ks = qrels, ks
        self.qids: list[str] = []  # the queries scored so far, in the order of `parts`
        self.parts: list[dict[str, np.ndarray]] = []  # rank_metrics of each chunk

    def __call__(self, chunk: dict[str, dict[str, float]]) -> None:
        self.parts.append(rank_metrics(chunk, self.qrels, ks=self.ks, qids=list(chunk)))
        self.qids += chunk

    def per_query(self, qids: list[str]) -> dict[str, np.ndarray]:
        """metric -> value per query of `qids`; those the ranking lacks score as rank_metrics
        scores a query absent from the run."""
        where = {q: i for i, q in enumerate(self.qids)}
        absent = [q for q in qids if q not in where]
        parts = self.parts
        if absent:
            parts = [*parts, rank_metrics({}, self.qrels, ks=self.ks, qids=absent)]
            where.update((q, len(self.qids) + i) for i, q in enumerate(absent))
        index = np.fromiter((where[q] for q in qids), dtype=np.int64, count=len(qids))
        return {name: np.concatenate([part[name] for part in parts])[index] for name in parts[0]}


def _paired(a: Report, b: Report) -> dict[str, PairedTest]:
    """Per metric, a paired t-test over the queries both reports scored."""
    where_b = {q: i for i, q in enumerate(b.qids)}
    both = [(i, where_b[q]) for i, q in enumerate(a.qids) if q in where_b]
    ia = np.array([i for i, _ in both], dtype=np.int64)
    ib = np.array([j for _, j in both], dtype=np.int64)
    return {name: paired_t_test(values[ia], b.per_query[name][ib])
            for name, values in a.per_query.items()}


def write_per_query(report: Report, path: str | Path) -> None:
    """Write the per-query rows as JSONL, atomically (a temp file renamed into place)."""
    with atomic_file(path) as f:
        for row in report.rows():
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def parse_hub_spec(spec: str) -> tuple[str, str | None, str | None]:
    """``hub:REPO[:CONFIG][@REVISION]`` -> (repo, config, revision).

    >>> parse_hub_spec("hub:lab/labels:utility.nq-sample.smollm2-135m@main")
    ('lab/labels', 'utility.nq-sample.smollm2-135m', 'main')
    """
    body = spec.removeprefix(HUB_PREFIX)
    target, at, revision = body.partition("@")
    repo, colon, config = target.partition(":")
    if not repo or (colon and not config) or (at and not revision):
        raise InputError(f"bad Hub reference '{spec}': expected hub:REPO[:CONFIG][@REVISION]",
                         field_name="against")
    return repo, config or None, revision or None


@gc_paused()
def load_reference(against: str | Path) -> Reference:
    """A utility artifact (folder, .jsonl, or `hub:` spec) or a TREC qrels file."""
    spec = str(against)
    if spec.startswith(HUB_PREFIX):
        from labeler.hub import pull

        repo, config, revision = parse_hub_spec(spec)
        return _from_artifact(pull(repo, config=config, revision=revision), spec)
    path = Path(spec)
    if not path.exists():
        raise InputError("reference not found: give an artifact folder, its data.jsonl, a "
                         "TREC qrels file or hub:REPO[:CONFIG][@REVISION]", spec)
    if path.is_dir() or is_jsonl(path):
        return _from_artifact(path, spec)
    return read_qrels(path)


def read_qrels(path: str | Path) -> Reference:
    """A TREC qrels file, `qid iter docid label` per line (label an integer, may be <= 0)."""
    qrels = Qrels.from_file(path)
    if not qrels:
        raise InputError("empty qrels: no judgments", str(path))
    gold = {q: [d for d, label in judged.items() if label > 0] for q, judged in qrels.items()}
    return Reference(str(path), qrels, gold)


def _from_artifact(path: Path, source: str) -> Reference:
    """An artifact's labels as a reference, read by its task's `reference`: the task its
    manifest names, or for a bare .jsonl the first task that reads its first record. The
    records are read one at a time and not kept (`Reference.records` reads them again)."""
    from labeler.artifacts.reader import open_artifact
    from labeler.tasks import TASKS, load_task

    manifest, records = open_artifact(path)
    first = next(records, None)
    if first is None:
        raise InputError("empty reference: no records", source)
    kinds = [manifest["artifact"]] if manifest else list(TASKS)
    tasks = (load_task(kind) for kind in kinds if kind in TASKS)  # imported one at a time
    task = next((t for t in tasks if _labels(t, first) is not None), None)
    ref = Reference(source, {}, {}, rank_nonempty_gold=bool(task and task.rank_nonempty_gold),
                    manifest=manifest, artifact=path)
    for i, record in enumerate(chain([first], records), start=1):
        labels = None if task is None else _labels(task, record)
        if labels is None:
            raise InputError("reference records carry no labels: expected utility records "
                             "(candidates, utility_pids) or a TREC qrels file", source, i)
        qid = record["qid"]
        if qid in ref.qrels:
            raise InputError(f"duplicate qid '{qid}' in the reference", source, i, "qid")
        ref.qrels[qid], ref.gold[qid] = labels
    return ref


def _labels(task, record: dict) -> tuple[dict[str, int], list[str]] | None:
    """`task.reference(record)`, or None when the record is not one `task` can read."""
    try:
        return task.reference(record)
    except (KeyError, TypeError, InputError):
        return None


def _clean(values: dict) -> dict:
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v
            for k, v in values.items()}
