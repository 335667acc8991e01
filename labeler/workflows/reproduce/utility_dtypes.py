"""The dtype each call kind of `labeler reproduce utility-paper` runs in: the one the paper's
script for that call loads its model in (hengran/LLM_specific_utility at `COMMIT`), each row
naming the script and line. A script whose `dtype=torch.float16` line is commented out runs
vLLM's default, the model's own dtype (`OWN`: bfloat16 for Llama 3.1 and Qwen3).

A call kind is a call's `what` (`labeler.llm.calls.Calls`); `LLMConfig.call_dtypes` routes each
to the model loaded in its dtype, and the manifest records them (`llm_config.call_dtypes`).
"""

from __future__ import annotations

from typing import NamedTuple

from labeler.scoring.rag import SELECTION_ANSWERS

REPO = "hengran/LLM_specific_utility"
COMMIT = "27a07e31b1c0c10d39085465a0fd6ec6476cf54a"
#: the model's own dtype: vLLM's "auto", what a script that sets no dtype loads
OWN = "own"


class ScriptDtype(NamedTuple):
    """Where a call kind's script loads its model, and in which dtype."""

    script: str  # the file in REPO
    line: int  # the line that sets (or leaves commented out) the dtype
    dtype: str  # float16, bfloat16, or OWN


FP16 = "float16"
#: call kind -> the paper's script for it, the line, its dtype
PAPER_DTYPES: dict[str, ScriptDtype] = {
    "closed-book answers": ScriptDtype("src/without_passage_answer.py", 45, OWN),
    "one-passage answers": ScriptDtype("src/pointwise_performance_answerem.py", 39, FP16),
    "all-passage answers": ScriptDtype("src/answer.py", 45, OWN),
    "human-gold answers": ScriptDtype("src/answer.py", 45, OWN),
    "utilitarian-passage answers": ScriptDtype("src/answer.py", 45, OWN),
    "answer likelihoods": ScriptDtype("src/pointwise_likelihood.py", 68, OWN),
    "answer extraction": ScriptDtype("src/exact_answer.py", 45, OWN),
    "pseudo-answers": ScriptDtype("src/answer.py", 45, OWN),
    # the judges (their with-answer scripts, pointwise_verberlized_answer.py:35,
    # list_answer_utility_verberlized.py:47, listwise_ranking_with_answer.py:46, set float16 too)
    "pointwise judgments": ScriptDtype("src/point_run_verberlized.py", 36, FP16),
    "pointwise P(yes)": ScriptDtype("src/point_run_verberlized.py", 36, FP16),
    "listwise selections": ScriptDtype("src/listwise_verberlized.py", 46, FP16),
    "listwise rankings": ScriptDtype("src/listwise_ranking.py", 46, FP16),
    "pseudo-answer likelihoods": ScriptDtype("src/pointwise_likelihood.py", 68, OWN),
    "attention weights": ScriptDtype("src/listwise_attention.py", 207, "bfloat16"),
    SELECTION_ANSWERS: ScriptDtype("src/select_answer.py", 45, OWN),
}


def paper_settings(backend: str, dtype: str | None) -> dict:
    """The LLM settings of the reproduction: `dtype` for every call where given (--dtype),
    else the paper's per call kind (`paper_call_dtypes`)."""
    if dtype is not None:
        return {"dtype": dtype}
    own, kinds = paper_call_dtypes(backend)
    return {"dtype": own, "call_dtypes": kinds}


def paper_call_dtypes(backend: str) -> tuple[str | None, tuple[tuple[str, str | None], ...]]:
    """(the dtype the model loads in, each call kind's dtype) for `backend` as the paper's
    scripts set them: the model's own is the backend's "auto" where it has one, else its
    default (None), and a dtype the backend does not take is its default too."""
    from labeler.llm import BACKENDS

    taken = BACKENDS[backend].dtypes

    def resolved(dtype: str) -> str | None:
        wanted = "auto" if dtype == OWN else dtype
        return wanted if wanted in taken else None

    return resolved(OWN), tuple((kind, resolved(row.dtype)) for kind, row in PAPER_DTYPES.items())
