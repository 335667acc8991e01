"""SEER's QA evaluation of evidence (Zhao et al. 2024, §4.1 and Table 1), for `labeler score
--rag` on an extraction: the generator answers each query greedily with the evidence prepended,
and is scored by EM (NQ, TriviaQA: some gold answer occurs in the response, `has_answer`) or,
for HotpotQA, by unigram F1 (`answer_f1`); 'Tok' is the evidence's mean length in the
generator's tokens.

Table 1's rows: Zero (closed-book, no evidence), Full (every passage the artifact holds for the
query, in its order), the artifact's own best extraction (a SEER artifact's rank-1 one), and
the submission (and its baseline); the kind names its own best evidence
(`ArtifactKind.best_evidence`). SEER does not publish its generator's prompt: the evidence
is asked as the utility task's with-passage prompt asks a passage (labeler.tasks.utility
`evidence_prompt`), with the evidence as the passage's text; blank evidence is asked
closed-book. Against a utility artifact its own prompts and answer decoding are used, so Zero
and Full are its closed-book and all-candidate answers, served by the call cache.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from labeler.artifacts.kinds import ArtifactKind
from labeler.errors import InputError
from labeler.llm.base import Chat, Sampling
from labeler.llm.calls import Calls
from labeler.metrics.answers import answer_f1, has_answer
from labeler.sources.passage import Passage
from labeler.tasks.utility import ANSWER, evidence_prompt

#: metric name -> (its column header, the function of (response, gold answers))
METRICS = {"em": ("EM", has_answer), "f1": ("F1", answer_f1)}
#: evidence of one query: its text; passages (Full); None: not submitted (scores 0, no call)
Evidence = str | Sequence[Passage] | None


@dataclass(frozen=True)
class QASetting:
    """How the generator is asked and scored against one artifact."""

    artifact: type[ArtifactKind]  # the artifact's kind, one whose records --rag answers from
    kind: str  # the prompt pair's kind: question | claim
    sampling: Sampling  # greedy answer decoding
    metric: str  # a METRICS name


@dataclass
class QARow:
    """One row of Table 1: a method's score and evidence tokens per query."""

    method: str
    evidence: str  # what the generator was shown
    scores: np.ndarray
    tokens: np.ndarray

    def as_dict(self, metric: str) -> dict:
        return {"method": self.method, "evidence": self.evidence,
                metric: float(self.scores.mean()) if self.scores.size else None,
                "tokens": float(self.tokens.mean()) if self.tokens.size else None}


def qa_metric(manifest: dict) -> str:
    """"f1" when the artifact's queries are HotpotQA's (its dataset or source names hotpot:
    hotpotqa, hotpotqa-distractor, a HotpotQA train split, a jsonl: file of them), else
    "em"."""
    names = (manifest.get("dataset"), manifest.get("source_dataset"),
             (manifest.get("config") or {}).get("dataset"))
    return "f1" if any("hotpot" in str(name or "").lower() for name in names) else "em"


def qa_setting(manifest: dict, where: str, *, max_tokens: int | None = None) -> QASetting:
    """The QA setting of an artifact whose kind --rag answers from: the artifact's own prompts
    and answer decoding where its manifest records them (a utility artifact's; labeler.scoring.
    rag `artifact_setting`), else questions asked with the utility task's greedy decoding
    (`ANSWER`), capped at `max_tokens` new tokens when given. InputError for a kind --rag does
    not answer from, or a cap other than the artifact's own recorded one."""
    from labeler.tasks import KINDS, load_kind

    artifact = manifest.get("artifact")
    kind = load_kind(artifact) if artifact in KINDS else None
    if kind is None or not kind.answers_from:
        able = [name for name, kind in KINDS.loaded().items() if kind.answers_from]
        raise InputError(f"--rag evaluates evidence against a {' or '.join(able)} artifact, "
                         f"this is a {artifact}", where, field_name="against")
    if kind.own_answer_prompts:
        from labeler.scoring.rag import artifact_setting

        queries, sampling = artifact_setting(manifest, where)
        if max_tokens not in (None, sampling.max_tokens):
            raise InputError(f"a {artifact} artifact's answers are asked with its own cap, "
                             f"{sampling.max_tokens} new tokens (its cached answers serve Zero "
                             "and Full)", where, field_name="max_new_tokens",
                             hint="leave out --max-new-tokens")
    else:
        queries, sampling = "question", replace(ANSWER, max_tokens=max_tokens or ANSWER.max_tokens)
    return QASetting(kind, queries, sampling, qa_metric(manifest))


def qa_table(llm: Calls, records: Sequence[dict], setting: QASetting,
             evidence: Sequence[tuple[str, Sequence[Evidence]]]) -> list[QARow]:
    """Table 1 over `records` (one per query): Zero, Full, the artifact's best extraction (a
    SEER artifact's), then a row per `evidence` entry (its name, its evidence per record).
    Every answer in one batched call; tokens counted by the generator's tokenizer."""
    full = [[Passage(c["pid"], c["title"], c["text"]) for c in r["candidates"]]
            for r in records]
    rows: list[tuple[str, str, Sequence[Evidence]]] = [
        ("Zero", "no evidence (closed-book)", [""] * len(records)),
        ("Full", "the artifact's passages", full)]
    best = [setting.artifact.best_evidence(r) for r in records]
    if any(e is not None for e in best):
        rows.append(("artifact", "its rank-1 extraction", best))
    rows += [(name, "the submitted evidence", given) for name, given in evidence]
    scores = qa_scores(llm, records, [e for *_, e in rows], setting)
    tokens = evidence_tokens(llm, [e for *_, e in rows])
    return [QARow(method, shown, s, t)
            for (method, shown, _), s, t in zip(rows, scores, tokens)]


def qa_scores(llm: Calls, records: Sequence[dict], evidence: Sequence[Sequence[Evidence]],
              setting: QASetting) -> list[np.ndarray]:
    """Per evidence list (one item per record), the generator's score with each item: EM or
    F1 of its greedy answer against the record's gold answers; 0 for None. One call."""
    asked = [(i, j) for i, row in enumerate(evidence) for j, e in enumerate(row) if e is not None]
    prompts = [_prompt(records[j]["question"], evidence[i][j], setting.kind) for i, j in asked]
    outputs = llm.generate(prompts, setting.sampling, "answers with each evidence",
                           [records[j]["qid"] for _, j in asked])
    score = METRICS[setting.metric][1]
    out = [np.zeros(len(row)) for row in evidence]
    for (i, j), answer in zip(asked, outputs):
        out[i][j] = float(score(answer[0].text.strip(), records[j]["answers"]))
    return out


def evidence_tokens(llm: Calls, evidence: Sequence[Sequence[Evidence]]) -> list[np.ndarray]:
    """Per evidence list, each item's length in the generator's tokens: a text's, the sum of
    the passages' ("{title} {text}", as SEER's passage_tokens), 0 for None. One call."""
    texts: list[str] = []
    owners: list[tuple[int, int]] = []  # (evidence list, record) of each text
    for i, row in enumerate(evidence):
        for j, e in enumerate(row):
            parts = [] if e is None else [e] if isinstance(e, str) else [p.contents for p in e]
            texts += parts
            owners += [(i, j)] * len(parts)
    counts = llm.backend.count_tokens(texts) if texts else []
    out = [np.zeros(len(row)) for row in evidence]
    for (i, j), n in zip(owners, counts):
        out[i][j] += n
    return out


def _prompt(question: str, evidence: str | Sequence[Passage], kind: str) -> Chat:
    """The with-passage prompt with the evidence as the one passage's text (passages as they
    are), closed-book for blank evidence or none."""
    if isinstance(evidence, str):
        evidence = [Passage("evidence", "", evidence)] if evidence.strip() else []
    return evidence_prompt(question, evidence, kind)
