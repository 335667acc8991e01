"""Entity answers from sentence answers: `--answer-extractor MODEL` for msmarco-fqa.

MS MARCO's answers are written sentences ("South Bend is a city in Pacific County,
Washington, United States."), which an LLM's short answer never matches under has_answer.
The utility paper had an LLM (Qwen3-32B) extract the entity answer from each sentence; its
code runs that step (src/exact_answer.py) but does not publish the prompt, so the prompt
below is this project's. Each (question, sentence) is one greedy request, batched and asked
once, through the call cache like every LLM call; the template and the model go into the
manifest. An empty extraction keeps the sentence as the answer.

Runs in `build` after the models load and before retrieval and labelling; `check` refuses a
sentence-answer source without an extractor, and an extractor for any other source, before
any model loads.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from labeler.errors import InputError
from labeler.llm.base import Sampling, chat
from labeler.llm.calls import Calls
from labeler.progress import info
from labeler.sources.types import Query, Source

#: (question, one sentence answer) -> the entity answer
EXTRACT_ANSWER = (
    "Question: {question}\n"
    "Answer: {answer}\n\n"
    "The answer above is a sentence. Extract from it the short answer to the question: only "
    "the entity, name, place, date or number, copied from the answer, without explanation.\n"
    "Short answer:"
)
#: greedy; an entity answer is a few words
EXTRACTION = Sampling(temperature=0.0, max_tokens=32)
#: what the paper used
SUGGESTED = "qwen3-32b"


def extract_answers(llm: Calls, queries: Sequence[Query]) -> list[Query]:
    """`queries` with each sentence answer replaced by the entity `llm` extracts from it
    (deduplicated, in order), all in one batched call."""
    pairs = [(q, a) for q in queries for a in q.answers]
    prompts = [chat(EXTRACT_ANSWER.format(question=q.question, answer=a)) for q, a in pairs]
    outputs = llm.generate(prompts, EXTRACTION, "answer extraction",
                           [f"{q.qid}, answer {a!r}" for q, a in pairs])
    extracted: dict[str, list[str]] = {q.qid: [] for q in queries}
    empty = 0
    for (q, sentence), out in zip(pairs, outputs):
        entity = parse_answer(out[0].text)
        empty += not entity
        extracted[q.qid].append(entity or sentence)
    if empty:
        info(f"answer extraction: {empty} of {len(pairs)} came back empty; their sentences kept")
    return [replace(q, answers=list(dict.fromkeys(extracted[q.qid]))) for q in queries]


def parse_answer(output: str) -> str:
    """The entity in an extractor's output: after any `</think>`, the first non-empty line,
    without a leading "Short answer:" / "Answer:", quotes or a final full stop."""
    text = output.split("</think>")[-1]
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    line = re.sub(r"^(short answer|answer)\s*:\s*", "", line, flags=re.IGNORECASE)
    return line.strip().strip("\"'“”").rstrip(".").strip()


def check(source: Source, extractor: str | None) -> None:
    """InputError unless an extractor is given exactly when the source's answers are
    sentences."""
    if source.sentence_answers and not extractor:
        raise InputError(f"the answers of '{source.name}' are sentences, which a short answer "
                         "never matches", field_name="answer_extractor",
                         hint=f"pass --answer-extractor MODEL to extract entity answers first "
                              f"(the paper used {SUGGESTED})")
    if extractor and not source.sentence_answers:
        raise InputError(f"--answer-extractor applies to datasets with sentence answers "
                         f"(msmarco-fqa), not '{source.name}'", field_name="answer_extractor",
                         hint="leave it out")


def add_to_manifest(manifest: dict, model_describe: dict, model_revision: str | None) -> dict:
    """`manifest` with the extraction in it: its template under `prompt_templates` and its
    decoding under `sampling` (both named "answer_extraction"), the model under
    `answer_extraction`."""
    return {
        **manifest,
        "prompt_templates": {**manifest["prompt_templates"], "answer_extraction": EXTRACT_ANSWER},
        "sampling": {**manifest["sampling"], "answer_extraction": EXTRACTION.key()},
        "answer_extraction": {"model": model_describe["model"], "model_revision": model_revision,
                              "llm_config": model_describe},
    }
