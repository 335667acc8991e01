"""SEER's conciseness expert: how close the evidence is to the full-length answer.

s_c = cos(SBERT(t), SBERT(e)) ∈ [−1, 1], where t, the full-length answer, is the generator's
rewrite of (question, answer) as one declarative sentence, few-shot with the three examples
of SEER's appendix Table 4 (from NQ, TQA and HotpotQA), verbatim as printed (its curly
apostrophe included), greedy, through the call cache. The paper's prompt itself (its Table 5)
is an image we could not read, so the one-line instruction before the examples is ours.

The SBERT model defaults to the bundled all-MiniLM-L6-v2, resolved as dense retrieval
resolves its offline `minilm` encoder (labeler.retrieval.dense.load_encoder).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from labeler.lazy import LazyModule
from labeler.llm.base import Sampling, chat
from labeler.progress import info

if TYPE_CHECKING:
    from labeler.llm.calls import Calls
    from labeler.metrics.seer.extraction import Extraction
    from labeler.retrieval.dense import Encoder

#: imported on first use, so that reading this module (`build --help` does) stays cheap
np = LazyModule("numpy")

#: (question, answer) -> one declarative sentence; the examples are SEER's Table 4, verbatim
FULL_ANSWER = (
    "Rewrite the question and its answer as one declarative sentence that states the answer "
    "in full.\n\n"
    "Question: Which branch of philosophy is concerned with fundamental questions about the "
    "nature of reality?\n"
    "Answer: Metaphysics\n"
    "Full-length answer: Metaphysics is the branch of philosophy concerned with fundamental "
    "questions about the nature of reality.\n\n"
    "Question: What country used the Drachma as its currency, before switching to the Euro in "
    "2001?\n"
    "Answer: Greece\n"
    "Full-length answer: Greece used the Drachma as its currency before switching to the Euro "
    "in 2001.\n\n"
    "Question: Californian rock band Lit recorded A Place in the Sun in 1995, but what\u2019s "
    "their best known song?\n"
    "Answer: My Own Worst Enemy\n"
    "Full-length answer: The Californian rock band Lit recorded their album A Place in the Sun "
    "in 1995, and their best known song is My Own Worst Enemy.\n\n"
    "Question: {question}\n"
    "Answer: {answer}\n"
    "Full-length answer:"
)
#: greedy; one sentence (only its first line is read: a stop at "\n" would cut a reply that
#: opens with a blank line)
REWRITE = Sampling(temperature=0.0, max_tokens=48)
#: the SBERT model when none is named: the bundled all-MiniLM-L6-v2
DEFAULT_SBERT = "minilm"


def conciseness(llm: Calls, items: Sequence[Extraction], sbert: Encoder) -> np.ndarray:
    """cos(SBERT(t), SBERT(e)) per item, t = `full_answers`; one batched generate call and
    one batched embedding of the distinct texts. SBERT vectors are unit-normalised, so the
    cosine is their dot product.

    E.g. an evidence that restates t exactly scores 1.0.
    """
    if not items:
        return np.zeros(0)
    answers = full_answers(llm, items)
    texts = list(dict.fromkeys(answers + [x.evidence for x in items]))
    vectors = sbert.encode(texts, "conciseness: embedding")
    where = {text: i for i, text in enumerate(texts)}
    t = vectors[[where[a] for a in answers]].astype(np.float64)
    e = vectors[[where[x.evidence] for x in items]].astype(np.float64)
    return np.clip(np.einsum("ij,ij->i", t, e), -1.0, 1.0)


def full_answers(llm: Calls, items: Sequence[Extraction]) -> list[str]:
    """The full-length answer t of each item's (question, answer), one greedy request per
    distinct pair (`Calls` asks each once). An empty rewrite falls back to the answer itself,
    counted on stderr."""
    prompts = [chat(FULL_ANSWER.format(question=x.question, answer=x.answer)) for x in items]
    outputs = llm.generate(prompts, REWRITE, "conciseness: full-length answers",
                           [x.name for x in items])
    rewrites = [parse_sentence(out[0].text) for out in outputs]
    empty = sum(not r for r in rewrites)
    if empty:
        info(f"conciseness: {empty} of {len(items)} full-length answers came back empty; the "
             "answer itself stands in")
    return [r or x.answer for r, x in zip(rewrites, items)]


def parse_sentence(output: str) -> str:
    """The rewrite in a generator's output: after any `</think>`, the first non-empty line,
    without a leading "Full-length answer:".

    >>> parse_sentence(" Full-length answer: Paris is the capital of France.\\nQuestion: ...")
    'Paris is the capital of France.'
    """
    text = output.split("</think>")[-1]
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return re.sub(r"^full[- ]length answer\s*:\s*", "", line, flags=re.IGNORECASE).strip()


def load_sbert(name: str | None = None) -> Encoder:
    """The SBERT model `name` (an alias of labeler.retrieval.dense.ENCODERS, a Hub id or a
    local folder), default the bundled all-MiniLM-L6-v2; ModelLoadError when it cannot
    load (never replaced by another)."""
    from labeler.errors import ModelLoadError
    from labeler.retrieval.dense import load_encoder

    try:
        return load_encoder(name or DEFAULT_SBERT)
    except ModelLoadError as exc:
        if name not in (None, DEFAULT_SBERT):
            exc.hint = f"leave the SBERT model unset for the bundled {DEFAULT_SBERT}"
        raise
