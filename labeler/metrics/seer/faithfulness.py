"""SEER's faithfulness expert: s_f ∈ [0, 1], that the passages entail the evidence.

Pluggable, by a spec (`load_faithfulness`): `llm` (the offline default: the generator as
judge, P(yes)), `alignscore[:CHECKPOINT]` (SEER's choice) or `nli:MODEL`
(labeler.metrics.seer.alignscore).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from labeler.errors import InputError, UnknownNameError
from labeler.lazy import LazyModule, load_entry
from labeler.llm.base import ChoiceRequest, Message, chat, yes_probability

if TYPE_CHECKING:
    from labeler.llm.calls import Calls
    from labeler.metrics.seer.extraction import Extraction

#: imported on first use, so that reading this module (`build --help` does) stays cheap
np = LazyModule("numpy")

#: The faithfulness question, asked after the passages and the evidence.
FAITHFULNESS = (
    "Passages:\n{passages}\n\n"
    "Evidence: {evidence}\n\n"
    "Is every statement in the evidence supported by the passages? Answer yes or no."
)
#: The assistant turn starts with this; the next token is " yes" or " no".
ANSWER_PREFIX = "Answer:"
#: the choices whose first tokens P(yes) is read from
FAITHFULNESS_CHOICES = (" yes", " no")

#: faithfulness scorer kind -> "module:class", imported only when asked for; a class takes
#: the part of the spec after the colon (None when there is none)
FAITHFULNESS_SCORERS = {
    "llm": "labeler.metrics.seer.faithfulness:LLMJudge",
    "alignscore": "labeler.metrics.seer.alignscore:AlignScore",
    "nli": "labeler.metrics.seer.alignscore:NLIEntailment",
}
#: the offline default: it needs no model beyond the generator
DEFAULT_FAITHFULNESS = "llm"


class Faithfulness(Protocol):
    """A faithfulness scorer: `name` (its spec, for the manifest) and P(passages ⊨ evidence)
    per item; `llm` is the generator's calls, which only the LLM judge uses."""

    name: str

    def __call__(self, llm: Calls, items: Sequence[Extraction]) -> np.ndarray: ...


class LLMJudge:
    """Faithfulness by the generator as judge: P(yes) / (P(yes) + P(no)) (`yes_probability`;
    0.5 when both are 0) for "Is every statement in the evidence supported by the passages?",
    from the next-token probabilities after "Answer:", in one batched call. No model of its
    own: the card calls it an LLM judge, not AlignScore.

    E.g. P(" yes") = 0.3 and P(" no") = 0.1 give 0.75.
    """

    name = DEFAULT_FAITHFULNESS

    def __init__(self, argument: str | None = None) -> None:
        if argument is not None:
            raise InputError(f"the llm faithfulness judge is the generator itself and takes no "
                             f"model, got 'llm:{argument}'", field_name="faithfulness",
                             hint="use 'llm'")

    def __call__(self, llm: Calls, items: Sequence[Extraction]) -> np.ndarray:
        if not items:
            return np.zeros(0)
        requests = [
            ChoiceRequest(
                chat(FAITHFULNESS.format(passages="\n".join(x.passages), evidence=x.evidence))
                + (Message("assistant", ANSWER_PREFIX),),
                FAITHFULNESS_CHOICES,
            )
            for x in items
        ]
        probs = llm.choice_probs(requests, "faithfulness (LLM judge)", [x.name for x in items])
        return np.array([yes_probability(p) for p in probs], dtype=np.float64)


def faithfulness_spec(spec: str) -> tuple[str, str | None]:
    """`KIND[:ARGUMENT]` -> (kind, argument or None), checked without loading anything:
    UnknownNameError for an unknown kind.

    >>> faithfulness_spec("nli:cross-encoder/nli-deberta-v3-base")
    ('nli', 'cross-encoder/nli-deberta-v3-base')
    """
    kind, colon, argument = spec.strip().partition(":")
    if kind not in FAITHFULNESS_SCORERS:
        raise UnknownNameError("faithfulness scorer", kind, list(FAITHFULNESS_SCORERS),
                               hint="alignscore[:CHECKPOINT] and nli:MODEL take a model")
    if colon and not argument:
        raise InputError(f"faithfulness '{spec}' names no model after the colon",
                         field_name="faithfulness")
    return kind, argument or None


def load_faithfulness(spec: str = DEFAULT_FAITHFULNESS) -> Faithfulness:
    """The faithfulness scorer `spec` names, its model loaded: `llm`, `alignscore[:CKPT]`
    (a .ckpt file, a folder holding one, a Hub repo or REPO/FILE.ckpt), `nli:MODEL` (a Hub
    id or local folder). UnknownNameError / InputError for a bad spec, ModelLoadError for a
    model that cannot load."""
    kind, argument = faithfulness_spec(spec)
    return load_entry(FAITHFULNESS_SCORERS[kind])(argument)
