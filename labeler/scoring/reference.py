"""The labels a submission is scored against: a utility artifact (a version folder, its
data.jsonl, or `hub:` spec) or a TREC qrels file.

From a utility record, the gold set of a query is its `utility_pids` and the ranking label of a
candidate is its `utility` (1 or 0; candidates are the judged documents); from qrels, the label
is the judgment and the gold set the documents with label > 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from itertools import chain
from pathlib import Path

from labeler.errors import InputError
from labeler.formats import Qrels
from labeler.lines import is_jsonl
from labeler.scoring.submissions import gc_paused

HUB_PREFIX = "hub:"


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

    @property
    def default_missing(self) -> str:
        """How its queries absent from a submission count unless `--missing` says: against
        qrels "skip", as trec_eval does (its -c is "zero"), so a run of some queries (a
        --limit build's) scores over those, as its card does; against an artifact "zero":
        it lists the queries it labelled, a submission must answer each."""
        return "skip" if self.artifact is None else "zero"

    @cached_property
    def records(self) -> dict[str, dict]:
        """qid -> the artifact's record ({} for qrels), read again when first asked for: only
        extractions and --rag need them, and holding every record while a ranking is scored
        cost more than the scoring (a third of `labeler score`'s time on 10k queries)."""
        if self.artifact is None:
            return {}
        from labeler.artifacts.reader import load_artifact

        return {record["qid"]: record for record in load_artifact(self.artifact).records}


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
    tasks = ([load_task(manifest["artifact"])] if manifest["artifact"] in TASKS else []) \
        if manifest else TASKS.loaded().values()
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

