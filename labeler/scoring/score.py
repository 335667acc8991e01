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
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from labeler.errors import InputError, UnknownNameError
from labeler.formats import Run
from labeler.llm.config import LLMConfig
from labeler.metrics.ranking import rank_metrics
from labeler.metrics.seer.experts import load_experts
from labeler.metrics.seer.faithfulness import DEFAULT_FAITHFULNESS
from labeler.metrics.selection import selection_metrics
from labeler.scoring import MISSING, RAG_K
from labeler.scoring.reference import Reference, load_reference
from labeler.scoring.report import Report, paired_tests, summarize
from labeler.scoring.submissions import Submission, gc_paused, read_submission


@dataclass(frozen=True)
class ScoreOptions:
    """How `score` reads, checks and scores: its keywords, in one object (see `score`)."""

    kind: str | None = None
    ks: Sequence[int] = (5, 10)
    missing: str | None = None
    lenient: bool = False
    drop_invalid: bool = False  # drop a selection's pids outside its pool or repeated, counted
    include_empty: bool = False
    llm: LLMConfig | None = None
    faithfulness: str = DEFAULT_FAITHFULNESS
    sbert: str | None = None
    cache_dir: str | Path | None = None
    rag: bool = False
    rag_k: int | None = None
    max_new_tokens: int | None = None


def score(submission: str | Path, against: str | Path | Reference, *,
          baseline: str | Path | None = None, **options) -> Report:
    """Read, check and score `submission` (and `baseline`, paired) against `against`; the
    keywords are `ScoreOptions`'.

    `missing`: "zero" scores reference queries absent from the submission 0 on every metric
    (trec_eval -c); "skip" leaves them out; None: the reference's `default_missing` ("skip"
    against qrels, as trec_eval; "zero" against an artifact). A ranking against a reference that averages over
    non-empty gold (a utility artifact) leaves out the queries with empty gold, counted as
    `empty_gold_left_out`, unless `include_empty`; against qrels every query counts. `llm`
    (extraction only) loads that model to count tokens and run SEER's three experts with it
    as the generator: faithfulness by the scorer `faithfulness` names
    (labeler.metrics.seer.faithfulness), helpfulness, and conciseness with the SBERT model
    `sbert` (default the bundled MiniLM).
    `rag`, a selection or ranking against a utility artifact: `rag_accuracy` of the artifact's
    LLM (or `llm`) answering with only the selected candidates, or the ranking's top `rag_k`
    (default RAG_K) in its order, over every query (a ranking's metrics stay NaN on the
    empty-gold ones unless `include_empty`), beside the artifact's `rag_all_accuracy` and
    `rag_utilitarian_accuracy`, each split into known and unknown queries
    (`labeler.scoring.report` names the rows; `labeler.scoring.rag`); an extraction
    against a utility or SEER artifact: SEER's Table 1 in `report.qa` and `rag_em` (`rag_f1`)
    per query (`labeler.scoring.evidence_qa`), answers capped at `max_new_tokens`.
    A selection's pids must each be one of its query's candidates (against an artifact) and
    selected once, else InputError at its line; `drop_invalid` drops them instead, counted
    as `dropped_pids`. Every input is read and checked before any model is loaded.
    """
    [report] = score_datasets([(submission, against, baseline)], ScoreOptions(**options))
    return report


def score_datasets(pairs: Sequence[tuple[str | Path, str | Path | Reference, str | Path | None]],
                   options: ScoreOptions | None = None, **keywords) -> list[Report]:
    """`score` of each (submission, against, baseline or None) with the same `options` (or
    `ScoreOptions(**keywords)`): every input of every pair is read and checked before any
    model is loaded (a model loads once per process). `labeler.scoring.overall.overall` pools
    the reports into the paper's Overall."""
    options = options or ScoreOptions(**keywords)
    plans = [_read(sub, against, baseline, options) for sub, against, baseline in pairs]
    return [_scored(plan, options) for plan in plans]


@dataclass
class _Plan:
    """One submission (and baseline) read and checked against its reference: what `_scored`
    scores."""

    reference: Reference
    runs: list[tuple[Submission | None, _Ranked | None]]  # the submission's, the baseline's
    setting: object  # how --rag asks the reference's LLM (`_rag_setting`), or None
    missing: str  # the policy for absent queries, the reference's default where unset


def _read(submission: str | Path, against: str | Path | Reference,
          baseline: str | Path | None, options: ScoreOptions) -> _Plan:
    o = options
    if o.missing is not None and o.missing not in MISSING:
        raise UnknownNameError("--missing policy", o.missing, list(MISSING))
    reference = against if isinstance(against, Reference) else load_reference(against)
    known = set(reference.qrels)
    top = (o.rag_k or RAG_K) if o.rag else None
    ranked = _Ranked(reference.qrels, o.ks, top)
    pools = reference.qrels if reference.artifact is not None else None  # its candidates
    sub = read_submission(submission, kind=o.kind, known=known, lenient=o.lenient,
                          consume=ranked, pools=pools, drop_invalid=o.drop_invalid)
    base = base_ranked = None
    if baseline is not None:
        base_ranked = _Ranked(reference.qrels, o.ks, top)
        base = read_submission(baseline, kind=sub.kind, known=known, lenient=o.lenient,
                               consume=base_ranked, pools=pools, drop_invalid=o.drop_invalid)
    setting = _check_request(sub, reference, llm=o.llm, rag=o.rag,
                             include_empty=o.include_empty, max_new_tokens=o.max_new_tokens,
                             rag_k=o.rag_k)
    return _Plan(reference, [(sub, ranked), (base, base_ranked)], setting,
                 o.missing or reference.default_missing)


def _scored(plan: _Plan, options: ScoreOptions) -> Report:
    """Score a `_read` plan: load what it needs, the report and its baseline's, --rag's
    answers, the paired tests."""
    reference, setting, llm = plan.reference, plan.setting, options.llm
    (sub, ranked), (base, base_ranked) = plan.runs
    experts = None if llm is None or options.rag else load_experts(options.faithfulness,
                                                                   sbert=options.sbert)
    model = _load_model(llm, setting, reference, options.cache_dir)
    with gc_paused() if model is None else nullcontext():
        scoring = {"missing": plan.missing, "include_empty": options.include_empty,
                   "rag": options.rag, "model": model, "experts": experts}
        report = _report(sub, reference, ranked, **scoring)
        if base is not None:
            report.baseline = _report(base, reference, base_ranked, **scoring)
        if setting is not None:
            _add_rag_answers(report, plan.runs, reference, model, setting)
        if base is not None:
            report.tests = paired_tests(report, report.baseline)
    return report


def _check_request(sub: Submission, ref: Reference, *, llm: LLMConfig | None, rag: bool,
                   include_empty: bool, max_new_tokens: int | None, rag_k: int | None):
    """InputError for options that do not apply to this submission and reference; the
    reference's `rag` setting (`_rag_setting`) with `rag`, else None."""
    if rag_k is not None and not (rag and sub.kind == "ranking" and rag_k >= 1):
        raise InputError(f"--rag-k {rag_k}: how many of a ranking's passages --rag answers "
                         f"with, at least 1; this is a {sub.kind}{'' if rag else ' without --rag'}",
                         field_name="rag_k")
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
    if sub.kind == "extraction" and (llm is not None or rag):  # evidence lengths in tokens
        from labeler.llm import check_operation
        from labeler.scoring.rag import reader_config

        backend = (llm or reader_config(ref.manifest)).backend
        check_operation(backend, "count_tokens", "scoring an extraction with an LLM")
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
    """How --rag asks the reference's LLM: a selection's or ranking's (kind, sampling) of the
    utility artifact's `rag` answers, an extraction's `QASetting`; InputError where --rag
    cannot apply, or (without `llm`) the artifact's LLM is not found here."""
    from labeler.scoring.rag import artifact_setting, reader_config

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


def _add_rag_answers(report: Report, runs: list[tuple[Submission | None, _Ranked | None]],
                     ref: Reference, model, setting) -> None:
    """`_add_rag` (a selection's passages, a ranking's top k) or `_add_qa` (an extraction) to
    the report and to its baseline's, through one `Calls` of `model`; `runs`: the submission
    and the baseline (None when there is none), each with its `_Ranked`."""
    from labeler.llm.calls import Calls

    calls = Calls(model)
    (sub, _), (base, _) = runs
    if sub.kind == "extraction":
        _add_qa(report, sub, base, ref, calls, setting)
        return
    for run, (entries, ranked) in zip((report, report.baseline), runs):
        if run is not None:
            chosen = ranked.top if sub.kind == "ranking" else entries.entries
            what = (f"answers with the top {ranked.keep} of {Path(entries.path).name}"
                    if sub.kind == "ranking" else
                    f"answers with the selection of {Path(entries.path).name}")
            _add_rag(run, chosen, ref, calls, *setting, ranked=sub.kind == "ranking", what=what)


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


def _add_rag(report: Report, chosen: dict[str, Sequence[str]], ref: Reference, llm, kind: str,
             sampling, *, ranked: bool, what: str) -> None:
    """`rag_accuracy` per scored query with its `chosen` candidates only (0 for a query not
    chosen for), and the artifact's own `rag_all_accuracy` and `rag_utilitarian_accuracy`
    (`reference_per_query`), each split by the record's `known`; their means in the summary
    and the known and unknown queries counted."""
    from labeler.scoring.rag import known_split, prompt_version, rag_correct

    asked = [q for q in report.qids if q in chosen]
    correct = dict(zip(asked, rag_correct(
        llm, [ref.records[q] for q in asked], [chosen[q] for q in asked], kind=kind,
        sampling=sampling, what=what, ranked=ranked, version=prompt_version(ref.manifest))))
    records = [ref.records[q] for q in report.qids]
    known = [bool(r["known"]) for r in records]
    own = known_split("rag_accuracy", [float(correct.get(q, False)) for q in report.qids],
                      known)
    given = {name: column for key, name in (("all", "rag_all_accuracy"),
                                            ("utilitarian", "rag_utilitarian_accuracy"))
             for name, column in known_split(name, [float(r["rag"][key]["correct"])
                                                    for r in records], known).items()}
    report.per_query |= own
    report.reference_per_query |= given
    report.summary |= summarize(report.kind, own | given)
    report.counts |= {"known_queries": sum(known), "unknown_queries": len(known) - sum(known)}


def _report(sub: Submission, ref: Reference, ranked: _Ranked, *, missing: str,
            include_empty: bool, model, experts, rag: bool) -> Report:
    """The submission's scores over the reference's queries: with --rag over all of them, a
    ranking's metrics NaN on those it leaves out (`_rankable`: no gold, or a ranking line that
    ranks nothing, which has no run lines, as pytrec_eval sees the paper's runs)."""
    has_gold = _rankable(sub, ref, include_empty)
    ranks_none = ranked.empty if sub.kind == "ranking" else set()
    rankable = lambda q: has_gold(q) and q not in ranks_none
    considered = ref.qids if rag else [q for q in ref.qids if rankable(q)]
    absent = [q for q in considered if q not in sub.entries]
    qids = considered if missing == "zero" else [q for q in considered if q in sub.entries]
    counts = {"queries": len(qids), "missing": len(absent), "skipped_lines": len(sub.skipped)}
    if sub.dropped is not None:
        counts["dropped_pids"] = sub.dropped
    if sub.kind == "selection":
        scores = selection_metrics(sub.entries, ref.gold, qids=qids)
        per_query = scores.per_query()
        counts |= scores.counts()
    elif sub.kind == "ranking":
        per_query = _ranking_metrics(ranked, [rankable(q) for q in qids], qids)
        counts["queries_without_relevant"] = sum(
            1 for q in qids if rankable(q) and max(ref.qrels[q].values(), default=0) < 1
        )
        counts["empty_gold_left_out"] = sum(1 for q in ref.qids if not has_gold(q))
        counts["empty_rankings_left_out"] = sum(1 for q in ref.qids
                                                if has_gold(q) and q in ranks_none)
    else:
        from labeler.metrics.extraction import extraction_metrics  # imports `regex`

        records = [ref.records[q] for q in qids]
        counts["blank_evidence"] = sum(1 for q in qids if q in sub.entries
                                       and not (sub.entries[q] or "").strip())
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
    return Report(sub.kind, sub.path, ref.source, qids, absent, per_query,
                  summarize(sub.kind, per_query), counts, sub.skipped,
                  dataset=(ref.manifest or {}).get("dataset"), missing_rule=missing)


def _rankable(sub: Submission, ref: Reference, include_empty: bool):
    """Whether a query counts in a ranking's metrics: against a reference that averages over
    non-empty gold (a utility artifact), only one with gold, unless `include_empty`."""
    if sub.kind == "ranking" and ref.rank_nonempty_gold and not include_empty:
        return lambda q: bool(ref.gold[q])
    return lambda q: True


def _ranking_metrics(ranked: _Ranked, rankable: list[bool], qids: list[str]
                     ) -> dict[str, np.ndarray]:
    """`ranked`'s metrics per query of `qids`, NaN where not `rankable`."""
    keep = np.array(rankable, dtype=bool)
    values = ranked.per_query([q for q, r in zip(qids, rankable) if r])
    if keep.all():
        return values
    out = {}
    for name, column in values.items():
        out[name] = np.full(len(qids), np.nan)
        out[name][keep] = column
    return out


class _Ranked:
    """A ranking's per-query metrics, computed chunk by chunk as `read_submission` reads it (its
    `consume`), so that its documents are never all in memory at once; with `keep`, each
    query's first `keep` documents too (`top`, what --rag answers with)."""

    def __init__(self, qrels: dict[str, dict[str, int]], ks: Sequence[int],
                 keep: int | None = None) -> None:
        self.qrels, self.ks, self.keep = qrels, ks, keep
        self.qids: list[str] = []  # the queries scored so far, in the order of `parts`
        self.empty: set[str] = set()  # queries whose line ranks no passage: no run lines
        self.parts: list[dict[str, np.ndarray]] = []  # rank_metrics of each chunk
        self.top: dict[str, list[str]] = {}  # qid -> its best `keep` docids, best first

    def __call__(self, chunk: Run) -> None:
        self.parts.append(rank_metrics(chunk, self.qrels, ks=self.ks, qids=list(chunk)))
        self.empty.update(q for q, docs in chunk.items() if not docs)
        self.qids += chunk
        if self.keep is not None:
            self.top.update((q, [d for d, _ in chunk.ranking(q)[:self.keep]]) for q in chunk)

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

