"""The rubric's P(yes) chats: a document's state as the rubric experiment renders it
(`labeler.sources.search_experiments`), then one yes/no question, and how P(yes) is read from
the next-token probabilities of the answer words."""

from __future__ import annotations

from labeler.llm.base import Chat, Message, yes_probability
from labeler.sources.passage import Passage
from labeler.sources.search_experiments import (
    BAG_STATE,
    DIRECT_CRITERIA,
    DIRECT_QUESTION,
    DIRECT_STATE,
    render_state,
)

#: The P(yes) chat (ours: the experiment's decision model is shown a state and questions, in
#: a form its API does not publish): the state as the experiment renders it, then a question.
JUDGE_SYSTEM = "You are a search relevance decision engine. Answer each question about the " \
    "document with yes or no."
JUDGE_QUESTION = "{question}\n\nAnswer yes or no."
#: Ours: how the direct question's true/false criteria (the experiment's `NoulCriteria`) are put.
JUDGE_CRITERIA = "{question}\n\nYes: {true}\nNo: {false}\n\nAnswer yes or no."
#: each answer word's casing and leading-space variants, whose probabilities are summed
YES, NO = ("yes", "Yes", " yes", " Yes"), ("no", "No", " no", " No")


def judge_prompt(state: str, question: str) -> Chat:
    """The document's state first, then the question: all questions of a state share its
    prefix."""
    return (Message("system", JUDGE_SYSTEM), Message("user", state),
            Message("user", JUDGE_QUESTION.format(question=question)))


def direct_prompt(query: str, passage: Passage) -> Chat:
    """The direct arm's chat: its state, then its question with the criteria."""
    state = render_state(DIRECT_STATE, title=passage.title, description=passage.text,
                         query=query)
    question = JUDGE_CRITERIA.format(question=DIRECT_QUESTION.format(query=query),
                                     **DIRECT_CRITERIA)
    return (Message("system", JUDGE_SYSTEM), Message("user", state),
            Message("user", question))


def bag_state(query: str, passage: Passage) -> str:
    """A document's state for the bag's questions, as the experiment renders it."""
    return render_state(BAG_STATE, title=passage.title, description=passage.text, query=query)


def p_yes(probs: dict[str, float]) -> float:
    """P(yes) from one `choice_probs` answer over YES + NO, each word's variants summed."""
    return yes_probability({"yes": sum(probs[c] for c in YES), "no": sum(probs[c] for c in NO)},
                           "yes", "no")
