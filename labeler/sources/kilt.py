"""`nq`, `tq`, `hotpotqa`, `fever`: the KILT dev sets the utility paper labels
(facebook/kilt_tasks, split `validation`), with KILT provenance as the human gold; and
`hotpotqa-train`, KILT's HotpotQA train, SEER's (Table 3: 88.9k train, 5.6k dev).

Filter: a record is kept when it has a question (or claim), at least one answer and at least
one provenance ("KILT dev with provenance"). On the Hub data this keeps every dev record of
NQ (2,837), TriviaQA (5,359) and HotpotQA (5,600), the sizes of the paper's Table 1. FEVER's
KILT dev has 10,444 claims, all with provenance; the paper reports 10,245, and its code does
not say which 199 it left out, so all 10,444 are loaded.

Gold: KILT provenance names a Wikipedia page (`wikipedia_id`, `title`) and a paragraph range
of the KILT knowledge source (kilt_wikipedia) but carries no passage text, so each query's
gold is a list of `GoldRef`s, not passages, and there is no corpus: pools come from
retrieval over `--corpus` (or a `--run`). `load_source` turns the references into gold
passages when that corpus holds their paragraphs as `<wikipedia_id>_<paragraph>`.

TriviaQA: KILT ships only the question ids; the questions come from TriviaQA itself
(mandarjoshi/trivia_qa, `unfiltered.nocontext`, validation), joined on the id as the
kilt_tasks card does. Answers are KILT's (the answer and its aliases).

Files: `hub_files.HUB_FILES` (the parquet files of kilt_tasks' main branch, pinned).
"""

from __future__ import annotations

from labeler.sources.hub_files import HUB_FILES
from labeler.sources.hubload import load_hub, read_from, rows
from labeler.sources.types import GoldRef, Query, Source

#: The questions' own licences, not the "mit" on facebook/kilt_tasks' card (KILT's, which
#: repackages them): Natural Questions CC BY-SA 3.0 (google-research-datasets/
#: natural-questions); TriviaQA's README: "The Apache 2.0 License applies to both the code
#: and the data"; HotpotQA CC BY-SA 4.0 (hotpotqa.github.io); FEVER: Wikipedia's terms, else
#: CC BY-SA 3.0 (the FEVER licence; the Hub's `fever` card).
LICENSE = {"nq": "cc-by-sa-3.0", "tq": "apache-2.0", "hotpotqa": "cc-by-sa-4.0",
           "fever": "cc-by-sa-3.0"}


def load_nq(*, limit: int | None = None) -> Source:
    """KILT Natural Questions dev."""
    return _load("nq", limit)


def load_hotpotqa(*, limit: int | None = None) -> Source:
    """KILT HotpotQA dev."""
    return _load("hotpotqa", limit)


def load_hotpotqa_train(*, limit: int | None = None) -> Source:
    """KILT HotpotQA train (88,869 questions), SEER's HotpotQA training set: every record
    with a question and an answer (Table 3 counts them all); its provenance, where it has
    some, is its gold."""
    spec = HUB_FILES["hotpotqa-train"]
    dataset, revision = load_hub(spec)
    return read_from(from_dataset(dataset, name="hotpotqa-train", revision=revision,
                                  license=LICENSE["hotpotqa"], limit=limit, provenance=False),
                     spec)


def load_fever(*, limit: int | None = None) -> Source:
    """KILT FEVER dev: claims, answered by a verdict (SUPPORTS / REFUTES)."""
    return _load("fever", limit, kind="claim")


def load_tq(*, limit: int | None = None) -> Source:
    """KILT TriviaQA dev, its questions joined from TriviaQA by question id."""
    spec = HUB_FILES["tq-questions"]
    trivia, trivia_revision = load_hub(spec)
    questions = dict(zip(trivia["question_id"], trivia["question"]))
    source = _load("tq", limit, questions=questions)
    source.revision = f"{source.revision}+{spec.repo}:{trivia_revision}"
    read_from(source, spec)
    return source


def _load(name: str, limit: int | None, **options) -> Source:
    dataset, revision = load_hub(HUB_FILES[name])
    return read_from(from_dataset(dataset, name=name, revision=revision, license=LICENSE[name],
                                  limit=limit, **options), HUB_FILES[name])


def from_dataset(
    dataset,
    *,
    name: str,
    revision: str,
    license: str = "unknown",
    limit: int | None = None,
    kind: str = "question",
    questions: dict[str, str] | None = None,
    provenance: bool = True,
) -> Source:
    """KILT-layout rows `{id, input, output[{answer, provenance[...]}]}` -> Source without
    corpus, keeping the records with a question, an answer and (unless not `provenance`) a
    provenance, the first `limit` of those. `questions` (id -> question) fills an empty
    `input` (TriviaQA)."""
    queries = []
    for row in dataset:
        if limit is not None and len(queries) >= limit:
            break
        query = query_from_record(row, questions, provenance=provenance)
        if query is not None:
            queries.append(query)
    return Source(name, revision, queries, None, license=license, kind=kind)


def query_from_record(row: dict, questions: dict[str, str] | None = None, *,
                      provenance: bool = True) -> Query | None:
    """One KILT record -> Query, or None when it lacks a question, an answer or (where
    `provenance`) provenance."""
    qid = str(row["id"])
    question = row.get("input") or (questions or {}).get(qid)
    outputs = rows(row.get("output"))
    answers = list(dict.fromkeys(o["answer"] for o in outputs if o.get("answer")))
    refs = list(dict.fromkeys(
        GoldRef(str(p["wikipedia_id"]), p["title"], int(p["start_paragraph_id"]),
                int(p["end_paragraph_id"]))
        for o in outputs for p in rows(o.get("provenance"))))
    if not question or not answers or (provenance and not refs):
        return None
    return Query(qid, question, answers, gold_refs=refs)
