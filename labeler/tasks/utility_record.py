"""A utility record: made from a query's answers by the utility rule (`record_of`), and its
flags derived again from its own answers (`with_flags`, which `labeler validate` compares).

    known = has_answer(closed-book answer),  correct = has_answer(one-passage answer),
    utility = 1[correct and not known]
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from labeler.metrics.answers import has_answer

if TYPE_CHECKING:
    from labeler.llm.base import Completion
    from labeler.retrieval import Candidate
    from labeler.sources.types import Query


def utility(correct: bool, known: bool) -> int:
    """u(q, d): 1 where the passage's answer is right and the closed-book one is not."""
    return int(correct and not known)


def with_flags(record: dict) -> dict:
    """A copy of a written utility record with its flags derived again from its answers:
    `known`, each candidate's `correct` and `utility`, `utility_pids`, each rag answer's
    `correct`."""
    answers = record["answers"]
    known = has_answer(record["closed_book_answer"], answers)
    candidates = []
    for candidate in record["candidates"]:
        correct = has_answer(candidate["answer"], answers)
        candidates.append({**candidate, "correct": correct, "utility": utility(correct, known)})
    flagged = {**record, "known": known, "candidates": candidates,
               "utility_pids": [c["pid"] for c in candidates if c["utility"]]}
    if "rag" in record:
        flagged["rag"] = {setting: None if given is None else
                          {**given, "correct": has_answer(given["answer"], answers)}
                          for setting, given in record["rag"].items()}
    return flagged


def record_of(q: Query, closed: Completion, candidates: list[Candidate], answers: list[Completion],
              likelihoods: list[float] | None, *, llm: str, pool: str) -> dict:
    """The utility record of query `q`: its closed-book answer, each candidate's answer and
    flags (`utility`), its utilitarian pids; the `rag` answers are added after."""
    known = has_answer(closed.text, q.answers)
    rows = []
    for i, (c, answer) in enumerate(zip(candidates, answers)):
        correct = has_answer(answer.text, q.answers)
        row = {
            "pid": c.passage.pid,
            "title": c.passage.title,
            "text": c.passage.text,
            "source": c.source,
            "rank": c.rank,
            "gold": c.gold,
            "answer": answer.text,
            "capped": answer.capped,
            "correct": correct,
            "utility": utility(correct, known),
        }
        if likelihoods is not None:
            row["loglikelihood"] = likelihoods[i]
        rows.append(row)
    return {
        "qid": q.qid,
        "question": q.question,
        "answers": list(q.answers),
        "llm": llm,
        "pool": pool,
        "known": known,
        "closed_book_answer": closed.text,
        "closed_book_capped": closed.capped,
        "candidates": rows,
        "utility_pids": [r["pid"] for r in rows if r["utility"]],
    }
