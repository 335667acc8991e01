"""Score a submission (selection, ranking or extraction) against reference labels
(labeler.scoring.reference), into a Report (labeler.scoring.report).

Rankings against a utility artifact are averaged over the queries whose gold set is not empty,
as the utility paper does (its qrels hold the gold utilitarian passages only, so pytrec_eval
never sees the others); `include_empty` scores the others too, 0 on every metric. Against
qrels, every judged query counts, as in trec_eval. A ranking line that ranks no passage (an LVR
answer that named none) has no run lines: it is left out, as pytrec_eval leaves it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from contextlib import nullcontext
from pathlib import Path

import numpy as np

from labeler.errors import InputError, UnknownNameError
from labeler.llm.config import LLMConfig
from labeler.metrics.ranking import rank_metrics
from labeler.metrics.seer.experts import load_experts
from labeler.metrics.seer.faithfulness import DEFAULT_FAITHFULNESS
from labeler.metrics.selection import selection_metrics
from labeler.scoring.reference import Reference, load_reference
from labeler.scoring.report import Report, paired_tests
from labeler.scoring.submissions import Submission, gc_paused, read_submission

MISSING = ("zero", "skip")


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
    max_new_tokens: int | None = None,
) -> Report:
    """Read, check and score `submission` (and `baseline`, paired) against `against`.

    `missing`: "zero" scores reference queries absent from the submission 0 on every metric
    (trec_eval -c); "skip" leaves them out. A ranking against a reference that averages over
    non-empty gold (a utility artifact) leaves out the queries with empty gold, counted as
    `empty_gold_left_out`, unless `include_empty`; against qrels every query counts. `llm`
    (extraction only) loads that model to count tokens and run SEER's three experts with it
    as the generator: faithfulness by the scorer `faithfulness` names
    (labeler.metrics.seer.faithfulness), helpfulness, and conciseness with the SBERT model
    `sbert` (default the bundled MiniLM).
    `rag`, a selection against a utility artifact: `rag_accuracy` of the artifact's LLM (or
    `llm`) answering with only the selected candidates, beside the artifact's
    `rag_all_accuracy` and `rag_utilitarian_accuracy` (`labeler.scoring.rag`); an extraction
    against a utility or SEER artifact: SEER's Table 1 in `report.qa` and `rag_em` (`rag_f1`)
    per query (`labeler.scoring.evidence_qa`), answers capped at `max_new_tokens`.
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
    setting = _check_request(sub, reference, llm=llm, rag=rag, include_empty=include_empty,
                             max_new_tokens=max_new_tokens)
    experts = None if llm is None or rag else load_experts(faithfulness, sbert=sbert)
    model = _load_model(llm, setting, reference, cache_dir)
    with gc_paused() if model is None else nullcontext():
        options = {"missing": missing, "include_empty": include_empty, "model": model,
                   "experts": experts}
        report = _report(sub, reference, ranked, **options)
        if base is not None:
            report.baseline = _report(base, reference, base_ranked, **options)
        if setting is not None:
            _add_rag_answers(report, sub, base, reference, model, setting)
        if base is not None:
            report.tests = paired_tests(report, report.baseline)
    return report


def _check_request(sub: Submission, ref: Reference, *, llm: LLMConfig | None, rag: bool,
                   include_empty: bool, max_new_tokens: int | None):
    """InputError for options that do not apply to this submission and reference; the
    reference's `rag` setting (`_rag_setting`) with `rag`, else None."""
    if sub.kind == "extraction" and not ref.records:
        raise InputError("extraction is scored against a reference with questions and answers "
                         "(a utility or seer artifact), not qrels", ref.source)
    if llm is not None and sub.kind != "extraction" and not rag:
        raise InputError(f"--llm scores extraction submissions only, this is a {sub.kind}",
                         field_name="llm")
    if max_new_tokens is not None and not (rag and sub.kind == "extraction"):
        raise InputError("--max-new-tokens caps the answers of --rag on an extraction",
                         field_name="max_new_tokens")
    setting = _rag_setting(sub, ref, llm, max_new_tokens) if rag else None
    if include_empty and sub.kind != "ranking":
        raise InputError(f"--include-empty applies to rankings only, this is a {sub.kind} (a "
                         "selection already scores empty-gold queries, as accuracy)",
                         field_name="include_empty")
    return setting


def _load_model(llm: LLMConfig | None, setting: object, ref: Reference,
                cache_dir: str | Path | None):
    """The backend scoring needs: `llm` loaded, else for --rag the artifact's own reader,
    else None."""
    if setting is not None and llm is None:
        from labeler.scoring.rag import load_reader

        return load_reader(ref.manifest, cache_dir=cache_dir)
    return None if llm is None else llm.load(cache_dir)


def _rag_setting(sub: Submission, ref: Reference, llm: LLMConfig | None,
                 max_new_tokens: int | None):
    """How --rag asks the reference's LLM: a selection's (kind, sampling) of the utility
    artifact's `rag` answers, an extraction's `QASetting`; InputError where --rag cannot
    apply, or (without `llm`) the artifact's LLM is not found here."""
    from labeler.scoring.rag import artifact_setting, reader_config

    if sub.kind == "ranking":
        raise InputError("--rag answers with a selection's passages or an extraction's "
                         "evidence, this is a ranking", field_name="rag")
    if ref.manifest is None:
        raise InputError("--rag needs the artifact's manifest (its LLM, prompts and "
                         "decoding): give its version folder or a hub: reference", ref.source,
                         field_name="against")
    if sub.kind == "extraction":
        from labeler.scoring.evidence_qa import qa_setting

        setting = qa_setting(ref.manifest, ref.source, max_tokens=max_new_tokens)
    else:
        setting = artifact_setting(ref.manifest, ref.source)
    if llm is None:
        reader_config(ref.manifest)
    return setting


def _add_rag_answers(report: Report, sub: Submission, base: Submission | None,
                     ref: Reference, model, setting) -> None:
    """`_add_rag` (a selection) or `_add_qa` (an extraction) to the report and to its
    baseline's, through one `Calls` of `model`."""
    from labeler.llm.calls import Calls

    calls = Calls(model)
    if sub.kind == "extraction":
        _add_qa(report, sub, base, ref, calls, setting)
        return
    for run, entries in ((report, sub), (report.baseline, base)):
        if run is not None:
            _add_rag(run, entries, ref, calls, *setting)


def _add_qa(report: Report, sub: Submission, base: Submission | None, ref: Reference, llm,
            setting) -> None:
    """SEER's Table 1 over the report's queries into `report.qa`; `rag_<metric>` per query of
    the submission (0 for a missing one) and of its baseline, and their means."""
    from labeler.scoring.evidence_qa import METRICS, qa_table

    runs = [(report, sub)] + ([(report.baseline, base)] if base is not None else [])
    qids = list(dict.fromkeys(q for run, _ in runs for q in run.qids))  # report's first
    rows = qa_table(llm, [ref.records[q] for q in qids], setting,
                    [(Path(entries.path).stem, [entries.entries.get(q) for q in qids])
                     for _, entries in runs])
    at = {q: i for i, q in enumerate(qids)}
    name = f"rag_{setting.metric}"
    for (run, _), row in zip(runs, rows[len(rows) - len(runs):]):
        run.per_query[name] = row.scores[[at[q] for q in run.qids]]
        run.summary[name] = float(run.per_query[name].mean()) if run.qids else math.nan
    n = len(report.qids)
    for row in rows:
        row.scores, row.tokens = row.scores[:n], row.tokens[:n]
    report.qa = {"metric": setting.metric, "header": METRICS[setting.metric][0],
                 "queries": n, "rows": [row.as_dict(setting.metric) for row in rows]}


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
    ranks_none = [q for q in considered if q in ranked.empty] if sub.kind == "ranking" else []
    considered = [q for q in considered if q not in ranked.empty]
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
        counts["empty_gold_left_out"] = len(ref.qids) - len(considered) - len(ranks_none)
        counts["empty_rankings_left_out"] = len(ranks_none)
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
        self.empty: set[str] = set()  # queries whose line ranks no passage: no run lines
        self.parts: list[dict[str, np.ndarray]] = []  # rank_metrics of each chunk

    def __call__(self, chunk: dict[str, dict[str, float]]) -> None:
        self.parts.append(rank_metrics(chunk, self.qrels, ks=self.ks, qids=list(chunk)))
        self.empty.update(q for q, docs in chunk.items() if not docs)
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

