"""`labeler score`: parse options, call labeler.scoring.score, render the report."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

import click

from labeler.cli.options import cache_dir_option, model_options, model_settings
from labeler.cli.output import emit, json_option, results_console
from labeler.errors import InputError
from labeler.progress import info
from labeler.scoring import MISSING, RAG_K
from labeler.scoring.submissions import KINDS
from labeler.terminal import markup_safe

if TYPE_CHECKING:  # rich is imported for the tables only, not for --json
    from rich.table import Table

    from labeler.scoring.report import Report

#: the utility paper's table of each submission kind's scores and its columns (--baseline
#: prints that layout); RAG accuracy (--rag) is its Table 6
PAPER_TABLES = {"selection": ("Table 4", ("precision", "recall", "f1", "rag_accuracy")),
                "ranking": ("Table 5", ("ndcg@5", "ndcg@10", "mrr@5", "recall@5",
                                        "rag_accuracy"))}

#: Table 6's rows of a --rag report: (label, summary row), the submission's and baseline's
#: rows first
RAG_ROWS = (("all candidates (artifact)", "rag_all_accuracy"),
            ("gold utilitarian (artifact)", "rag_utilitarian_accuracy"))


@click.command()
@click.argument("submissions", nargs=-1, required=True,
                type=click.Path(exists=True, path_type=Path))
@click.option("--against", "references", required=True, multiple=True,
              metavar="PATH|hub:REPO[:CONFIG][@REV]",
              help="Reference: a utility artifact folder or its data.jsonl, a TREC qrels file, "
                   "or a Hub dataset. Several SUBMISSIONS: one --against each, in order, and "
                   "an Overall row over all their queries (the paper's Tables 4-6).")
@click.option("--kind", type=click.Choice(KINDS), help="Submission kind [default: from fields].")
@click.option("--k", "ks", type=click.IntRange(min=1), multiple=True, default=(5, 10),
              show_default=True, help="Ranking cut-offs (repeat the option).")
@click.option("--missing", type=click.Choice(MISSING),
              help="Reference queries absent from the submission: score 0, or leave out "
                   "[default: zero against an artifact, which lists the queries it labelled; "
                   "skip against qrels, as trec_eval does without -c].")
@click.option("--include-empty", is_flag=True,
              help="Rankings against a utility artifact: also average over the queries with no "
                   "gold utilitarian passage (0 on every metric) [default: leave them out, as "
                   "the utility paper does].")
@click.option("--baseline", "baselines", multiple=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Another submission of the same kind: paired t-test and win/tie/loss "
                   "(several SUBMISSIONS: one each, in order).")
@click.option("--lenient", is_flag=True, help="Skip bad lines (and count them) instead of failing.")
@click.option("--drop-invalid-pids", "drop_invalid", is_flag=True,
              help="Selections: drop pids outside their query's candidates and repeated ones "
                   "(and count them) instead of failing.")
@click.option("--rag", is_flag=True,
              help="Selection or ranking against a utility artifact: the artifact's LLM "
                   "answers with only the selected passages, or the ranking's top --rag-k in "
                   "its order; accuracy over all queries, known (answered right closed-book) "
                   "and unknown ones, beside the artifact's with all its candidates and with "
                   "its gold utilitarian ones (the paper's Table 6). "
                   "Extraction against a utility or seer artifact: SEER's Table 1, the "
                   "generator's EM (F1 on HotpotQA) and evidence tokens with the evidence, "
                   "closed-book, with the artifact's passages and its rank-1 extractions.")
@click.option("--rag-k", type=click.IntRange(min=1),
              help=f"--rag on a ranking: answer with its top K passages [default: {RAG_K}, "
                   "the paper's].")
@click.option("--max-new-tokens", type=click.IntRange(min=1),
              help="--rag on an extraction against a seer artifact: cap on each answer's new "
                   "tokens [default: 256; against a utility artifact its own cap].")
@click.option("--llm", help="Extraction: count tokens and run SEER's experts with this model. "
                            "--rag: answer with this model instead of the artifact's.")
@model_options()
@cache_dir_option
@json_option
@click.option("--per-query", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write one JSONL row of metrics per query to this file.")
def score(submissions: tuple[Path, ...], references: tuple[str, ...], kind: str | None,
          ks: tuple[int, ...], missing: str | None, include_empty: bool, baselines: tuple[Path, ...],
          lenient: bool, drop_invalid: bool, llm: str | None,
          cache_dir: Path | None, as_json: bool, per_query: Path | None,
          rag: bool, rag_k: int | None, max_new_tokens: int | None, **model) -> None:
    """Score SUBMISSIONS against reference labels.

    A submission is JSONL, one query a line: a selection {qid, selected: [pid, ...]}, a
    ranking {qid, ranking: [pid, ...]} or {qid, scores: {pid: score}} (or a TREC run file),
    or an extraction {qid, evidence}. Several submissions (one a dataset, each with its
    --against): each dataset's row and the Overall row over all their queries.

    Against a utility artifact, a query's gold set is its utility_pids and a candidate's
    ranking label its utility (1 or 0); against qrels, the label is the judgment and the
    gold set the documents with label > 0. Rankings are scored per query exactly as trec_eval
    does (NDCG@k, MRR@k, Recall@k) and averaged, against a utility artifact, over the queries
    with a gold utilitarian passage only, as the utility paper does (--include-empty: over
    all); selections as the utility paper does (P, R and F1 over queries with gold, accuracy
    on the others); extractions by length, answer coverage and, with --llm, SEER's
    faithfulness (the model as judge), helpfulness and conciseness; with --rag, as SEER
    evaluates evidence (its Table 1): the generator answers with the evidence prepended.

    A `review` version folder (verdicts made in `labeler view`) against the labels version it
    names: verdicts and agreement, agree / (agree + disagree), per reviewer and per thing
    judged (query, candidate, extraction), and Cohen's kappa between each two reviewers over
    the items both judged.
    """
    if any(path.is_dir() for path in submissions):
        if len(submissions) != 1 or len(references) != 1:
            raise InputError("a folder is scored alone: one review version folder, with one "
                             "--against (the labels version it names)", field_name="submissions")
        return _agreement(submissions[0], Path(references[0]), as_json)
    if len(references) != len(submissions) or len(baselines) not in (0, len(submissions)):
        raise InputError(f"{len(submissions)} submissions, {len(references)} --against and "
                         f"{len(baselines)} --baseline: give one --against (and, if any, one "
                         "--baseline) per submission, in the same order", field_name="against")
    from labeler.llm.config import LLMConfig
    from labeler.scoring.overall import overall
    from labeler.scoring.report import write_per_query
    from labeler.scoring.score import score_datasets

    reports = score_datasets(
        list(zip(submissions, references, baselines or [None] * len(submissions))),
        kind=kind, ks=ks, missing=missing, lenient=lenient, include_empty=include_empty,
        drop_invalid=drop_invalid, cache_dir=cache_dir, rag=rag, rag_k=rag_k,
        max_new_tokens=max_new_tokens,
        llm=None if llm is None else LLMConfig(llm, **model_settings(model)),
    )
    report = reports[0] if len(reports) == 1 else overall(reports)
    if per_query is not None:
        write_per_query(report, per_query)
    _report_left_out(reports)
    if as_json:
        out = report.as_dict() if len(reports) == 1 else {
            "datasets": [r.as_dict() for r in reports], "overall": report.as_dict()}
        click.echo(json.dumps(out, indent=2, ensure_ascii=False))
        return
    _print(reports, report)


def _report_left_out(reports: list) -> None:
    """A line on stderr for each submission's skipped lines and dropped pids, if any."""
    for run in (r for one in reports for r in (one, one.baseline) if r is not None):
        if run.counts["skipped_lines"]:
            first = "; ".join(markup_safe(e.line()) for e in run.skipped[:3])
            info(f"[yellow]skipped {run.counts['skipped_lines']} bad lines in "
                 f"{markup_safe(run.submission)}[/]: {first}")
        if run.counts.get("dropped_pids"):
            info(f"[yellow]dropped {run.counts['dropped_pids']} selected pids in "
                 f"{markup_safe(run.submission)}[/]: outside their query's candidates or "
                 "repeated")


def _agreement(review: Path, labels: Path, as_json: bool) -> None:
    """The review's agreement with the labels, per reviewer and per thing judged, and
    between reviewers."""
    from labeler.scoring.agreement import review_agreement

    found = review_agreement(review, labels)
    tables = (_agreement_table(f"Agreement of {markup_safe(review)} with {markup_safe(labels)}",
                               found["reviewers"]),
              _agreement_table("Agreement with the labels per thing judged", found["about"]),
              _agreement_table("Agreement between reviewers, over the items both judged "
                               "(Cohen's kappa)", found["between"]))
    emit(found, [table for table in tables if table.row_count], as_json=as_json)


def _agreement_table(title: str, rows: list[dict]) -> Table:
    """A table of agreement rows: the first column a name, shares in percent, kappa as is."""
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for n, column in enumerate(rows[0] if rows else ()):
        table.add_column(column, justify="left" if n == 0 else "right")
    for row in rows:
        table.add_row(*("n/a" if v is None else f"{100 * v:.1f}%" if k in ("agreement", "same")
                        else f"{v:.3f}" if k == "kappa" else str(v) for k, v in row.items()))
    return table


def _print(reports: list[Report], report: Report) -> None:
    """The rich tables of one report, or of several datasets' and their Overall `report`."""
    console = results_console()
    if len(reports) > 1:
        console.print(_datasets_table(reports, report))
    else:
        console.print(_metrics_table(report))
    if report.qa is not None:
        console.print(_qa_table(report))
    if report.baseline is not None and report.kind in PAPER_TABLES:
        console.print(_paper_table(report))
    if "rag_accuracy_known" in report.summary:
        console.print(_rag_table(report))
    if report.tests:
        console.print(_tests_table(report))


def _datasets_table(reports: list[Report], pooled: Report) -> Table:
    """A row per dataset and the Overall row (pooled over every query), the summary's
    metrics as columns, in percent; counts of queries."""
    from rich.table import Table

    columns = [name for name in pooled.summary if not name.startswith(("rag_all", "rag_util"))]
    table = Table(title=f"{pooled.kind} per dataset and Overall (%), all queries pooled",
                  title_justify="left", caption=_datasets_caption(reports, pooled))
    for column in ("dataset", "queries", *columns):
        table.add_column(column, justify="left" if column == "dataset" else "right")
    for i, run in enumerate([*reports, pooled]):
        if i == len(reports):
            table.add_section()
        table.add_row(markup_safe(run.dataset or run.reference), str(run.counts["queries"]),
                      *(_fmt(100 * run.summary.get(name, math.nan), 2) for name in columns))
    return table


def _datasets_caption(reports: list[Report], pooled: Report) -> str:
    """Which queries each row's means are over: the --missing rule in force on each dataset
    (an artifact's default is zero, qrels' skip) and how many absent queries it counted."""
    rules = []
    for rule, how in (("zero", "scored 0"), ("skip", "left out")):
        runs = [run for run in reports if run.missing_rule == rule]
        if runs:
            names = ", ".join(markup_safe(run.dataset or run.reference) for run in runs)
            absent = sum(len(run.missing) for run in runs)
            rules.append(f"--missing {rule} on {names}: {absent} not in the submission {how}")
    return f"Overall over {pooled.counts['queries']} queries; " + "; ".join(rules)


def _rag_table(report: Report) -> Table:
    """The paper's Table 6 / Figure 4 layout: RAG accuracy (%) on the unknown and known
    queries and on all, a row per evidence: the submission's, its baseline's, and the
    artifact's with all its candidates and with its gold utilitarian passages."""
    from rich.table import Table

    counts = report.counts
    table = Table(title="RAG accuracy (%), the paper's Table 6 layout: vs "
                        f"{markup_safe(report.reference)}",
                  title_justify="left", caption="known: answered right closed-book")
    table.add_column("evidence")
    for column in (f"Unknown (n={counts['unknown_queries']})",
                   f"Known (n={counts['known_queries']})", f"All (n={counts['queries']})"):
        table.add_column(column, justify="right")
    rows = [(Path(run.submission).stem, run.summary, "rag_accuracy")
            for run in (report, report.baseline) if run is not None]
    rows += [(label, report.summary, name) for label, name in RAG_ROWS]
    for label, summary, name in rows:
        table.add_row(label, *(_fmt(100 * summary[name + suffix], 2)
                               for suffix in ("_unknown", "_known", "")))
    return table


def _metrics_table(report: Report) -> Table:
    from rich.table import Table

    base = report.baseline
    table = Table(title=f"{report.kind}: {markup_safe(report.submission)} vs "
                        f"{markup_safe(report.reference)}",
                  title_justify="left", caption=_missing_caption(report))
    table.add_column("metric")
    table.add_column("value", justify="right")
    if base is not None:
        table.add_column("baseline", justify="right")
    for name, value in report.summary.items():
        extra = [_fmt(base.summary.get(name, math.nan))] if base is not None else []
        table.add_row(name, _fmt(value), *extra)
    table.add_section()
    for name, count in report.counts.items():
        extra = [str(base.counts.get(name, ""))] if base is not None else []
        table.add_row(name.replace("_", " "), str(count), *extra, style="dim")
    return table


def _missing_caption(report: Report) -> str:
    """Which queries the means are over, and how the reference's absent ones counted."""
    absent = len(report.missing)
    if report.missing_rule == "zero":
        how = (f"--missing zero: {absent} not in the submission scored 0 (--missing skip "
               "would leave them out)")
    else:
        how = (f"--missing skip: {absent} of the reference's not in the submission left out, "
               "as trec_eval does (--missing zero would score them 0)")
    return f"means over {report.counts['queries']} queries; {how}"


def _paper_table(report: Report) -> Table:
    """The paper's Table 4 (selection) / Table 5 (ranking) layout: a row per method (the
    submission, then the baseline), a column per metric, in percent."""
    from rich.table import Table

    number, wanted = PAPER_TABLES[report.kind]
    columns = [name for name in wanted if name in report.summary]
    table = Table(title=f"{report.kind}, the paper's {number} layout (%): vs "
                        f"{markup_safe(report.reference)}",
                  title_justify="left")
    table.add_column("method")
    for name in columns:
        table.add_column(name, justify="right")
    for run in (report, report.baseline):
        table.add_row(markup_safe(Path(run.submission).stem),
                      *(_fmt(100 * run.summary.get(name, math.nan), 2) for name in columns))
    return table


def _qa_table(report: Report) -> Table:
    """SEER's Table 1 layout: a row per evidence (Zero, Full, the artifact's extractions, the
    submission, its baseline), the generator's EM or F1 (%) and the evidence's mean tokens."""
    from rich.table import Table

    qa = report.qa
    table = Table(title=f"SEER's Table 1 layout: {qa['header']} (%), {qa['queries']} queries",
                  title_justify="left", caption="the generator answers with each evidence; "
                  "Tok: its mean length in the generator's tokens")
    for column in ("method", "evidence", qa["header"], "Tok"):
        table.add_column(column, justify="right" if column in (qa["header"], "Tok") else "left")
    for row in qa["rows"]:
        score = math.nan if row[qa["metric"]] is None else 100 * row[qa["metric"]]
        tokens = math.nan if row["tokens"] is None else row["tokens"]
        table.add_row(row["method"], markup_safe(row["evidence"]), _fmt(score, 2),
                      _fmt(tokens, 1))
    return table


def _tests_table(report: Report) -> Table:
    from rich.table import Table

    table = Table(title="paired two-sided t-test vs "
                        f"{markup_safe(report.baseline.submission)}, per query",
                  title_justify="left",
                  caption="W/T/L: queries where the submission scores higher / equal / lower")
    for column in ("metric", "n", "mean", "baseline", "Δ", "t", "p", "W/T/L"):
        table.add_column(column, justify="left" if column == "metric" else "right", no_wrap=True)
    for name, t in report.tests.items():
        table.add_row(name, str(t.n), _fmt(t.mean_a), _fmt(t.mean_b),
                      _fmt(t.mean_a - t.mean_b), _fmt(t.t, 2), _fmt(t.p),
                      f"{t.wins}/{t.ties}/{t.losses}")
    return table


def _fmt(value: float, digits: int = 4) -> str:
    return "–" if value is None or math.isnan(value) else f"{value:.{digits}f}"
