"""The judge methods' prompts, byte for byte the utility paper's code's (hengran/LLM_specific_utility
@ 27a07e31: src/dataset.py for questions, src/fever/dataset.py for claims), and how a passage
shows in them.

Typos and spacing are the paper's: "youself", "the ranked the passages", "verifing", "passages'
utility" with an answer, the listwise instruction's leading newline and eight-space indents (a
triple-quoted string in the paper's Dataset classes, appended as is). Its FEVER ranking prompts
keep the question wording (only their instruction speaks of the claim), and its FEVER likelihood
prompt has two spaces before "Verify": both are what the paper ran, so both are here.

A listwise passage turn shows the dataset row as the paper's code hands it over, `str()` of the
row {'docid', 'title', 'text'} (`paper`), or "{title} {text}" (`clean`); pointwise prompts and the
pseudo-answer's always show "{title} {text}", as the paper's `format_passage` does.
"""

from __future__ import annotations

from labeler.sources.passage import Passage
from labeler.tasks.utility import TEMPLATES_BY_KIND

#: how a listwise passage turn shows a passage (`render_passage`)
PASSAGE_FORMATS = ("paper", "clean")

_CRITERIA = (
    "Determine if the passage has utility based on two strict criteria: \n 1. Usefulness: The "
    "passage should not only be relevant to the question but also be useful in {use}.\n 2. "
    "Novelty: Is the useful information new to you? This means it must NOT be part of your "
    "pre-existing knowledge.\n"
)
_DIRECT = "Directly output your response. The format of the output is: 'Utility judgment: Yes/No.'"
_INTRO = "I will provide you with {num} passages, each indicated by number identifier []. "
_INDENT = "\n        "  # the triple-quoted instructions' own newline and indent


def _instruct(what: str, purpose: str, fmt: str, results: str) -> str:
    return (f"{_INDENT}Directly output {what} for yourself in {purpose}. The format of the output "
            f"is: '{fmt}'. Only response the {results} results, do not say any word or explain. "
            f"{_INDENT}")


def _listwise(intro: str, ready: str, last: str, instruct: str) -> dict[str, str]:
    return {"intro": intro, "ready": ready, "passage": "[{rank}] {passage}",
            "received": "Received passage [{rank}].", "question": last + instruct}


def _prompts(subject: str, use: str, purpose: str, reference: str, asked: str) -> dict:
    """method -> (templates, templates with the pseudo-answer) for one kind of query."""
    criteria = _CRITERIA.format(use=use)
    select = _instruct("the passages you selected that have utility", purpose,
                       "My selection:[[i],[j],...].", "selection")
    rank = _instruct("the ranked the passages in descending order of utility", purpose,
                     "[i]>[j]>...", "ranked")
    question = "answering the question: {question}."
    rank_last = ("Question: {question}.\n\n " + _CRITERIA.format(
        use="generating a correct, reasonable, and perfect answer to the question"))
    rank_last_answer = ("Question: {question}.\n\n Reference answer: {answer}\n\n "
                        + rank_last.removeprefix("Question: {question}.\n\n "))
    return {
        "pvs": ({"judgment": f"{subject}: {{question}} \n Passage: {{passage}} \n " + criteria
                 + _DIRECT},
                {"judgment": f"{subject}: {{question}} \n Passage: {{passage}} \n The reference "
                             f"{reference}: {{answer}} " + criteria + _DIRECT}),
        "lvs": (_listwise(_INTRO + f"\nSelect the passages that have utility for youself in "
                          f"{asked}", "Okay, please provide the passages.",
                          f"{subject}: {{question}}.\n\n " + criteria, select),
                _listwise(_INTRO + f"I will also give you {_GIVEN[subject]}. \nSelect the "
                          f"passages that have utility for youself in {asked}",
                          f"Okay, please provide the passages and the {_READY[subject]}.",
                          f"{subject}: {{question}}.\n\n Reference {reference}: {{answer}}\n\n "
                          + criteria, select)),
        "lvr": (_listwise(_INTRO + "\nRank the passages based on the passages utility for "
                          "youself in " + question, "Okay, please provide the passages.",
                          rank_last, rank),
                _listwise(_INTRO + "I will also give you a reference answer. \nRank the passages "
                          "based on the passages' utility for youself in " + question,
                          "Okay, please provide the passages and the reference answer.",
                          rank_last_answer, rank)),
    }


_GIVEN = {"Question": "a reference answer", "Claim": "the reference verification for the claim"}
_READY = {"Question": "reference answer", "Claim": "reference verification"}

#: query kind (`Source.kind`) -> method -> (its templates, the same with the pseudo-answer)
PROMPTS = {
    "question": _prompts("Question", "generating a correct, reasonable, and perfect answer to "
                         "the question", "answering the question", "answer",
                         "answering the question: {question}."),
    "claim": _prompts("Claim", "verifying the claim", "verifing the claim", "verification",
                      "verifying the claim: {question}."),
}
#: query kind -> the likelihood method's context, log P(pseudo-answer | it): the paper's
#: `generate_answer_prompt_passages_with_answer` (for claims, two spaces before "Verify")
LIKELIHOOD = {
    "question": TEMPLATES_BY_KIND["question"]["with_passage"],
    "claim": TEMPLATES_BY_KIND["claim"]["with_passage"].replace("\nVerify", "\n  Verify", 1),
}


def render_passage(passage: Passage, passage_format: str = "paper") -> str:
    """A passage as a listwise turn shows it: `paper`, the paper's dataset row as Python prints
    a dict; `clean`, "{title} {text}" as `format_passage` writes it.

    >>> p = Passage("7", "Reba", "It's a duet.")
    >>> render_passage(p), render_passage(p, "clean")
    ('{\\'docid\\': \\'7\\', \\'title\\': \\'Reba\\', \\'text\\': "It\\'s a duet."}', "Reba It's a duet.")
    """
    if passage_format == "paper":
        return str({"docid": passage.pid, "title": passage.title, "text": passage.text})
    return format_passage(passage)


def format_passage(passage: Passage) -> str:
    """The paper's `format_passage`: title and text, each stripped, joined by a space."""
    return passage.stripped
