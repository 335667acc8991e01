"""AttR, the attention-based utility ranking of the utility paper (Zhang et al., §5.3, Tables 5
and 6), as its code computes it (src/listwise_attention.py, src/dataset.py's
ListAttentionEncodeDataset): the LLM answers the question greedily with all of the query's
candidates in the utility task's with-passage prompt, and each passage scores the attention
that answer pays to its tokens (`labeler.llm.attention` says which attention). A question's
passage texts are first cut to their first 100 space-separated words, as that code cuts them;
a claim's (src/fever) are not. The prompt keeps its first 3,048 tokens (4,096 for a claim).
"""

from __future__ import annotations

from labeler.llm.base import AttentionRequest
from labeler.llm.calls import Calls
from labeler.retrieval import Candidate
from labeler.sources.passage import Passage
from labeler.tasks.base import Shard
from labeler.tasks.utility import passage_prompt

#: words of a question's passage text the prompt shows (None: all)
WORDS = {"question": 100, "claim": None}
#: the rendered prompt's tokens kept (the paper's tokenizer max_length)
TRUNCATE = {"question": 3048, "claim": 4096}


def attention_ranking(judge, llm: Calls, shard: Shard, answers: dict[str, str]) -> list[dict]:
    """One {qid, scores, candidates, output} record per query of `shard`: each candidate's
    attention weight (higher ranks first) and the answer it was read from; `judge.answer`
    caps the answer (the paper's code: 32 new tokens). `answers` is unused: AttR asks no
    pseudo-answer."""
    asked = [q for q in shard.queries if shard.pools[q.qid]]
    requests = []
    for q in asked:
        shown = [cut(c, WORDS[shard.kind]) for c in shard.pools[q.qid]]
        requests.append(AttentionRequest(passage_prompt(q.question, shown, shard.kind),
                                         tuple(p.contents for p in shown),
                                         max_tokens=judge.answer.max_tokens,
                                         truncate=TRUNCATE[shard.kind]))
    qids = [q.qid for q in asked]
    results = dict(zip(qids, llm.attention(requests, "attention weights", qids)))
    records = []
    for q in shard.queries:
        pool, result = shard.pools[q.qid], results.get(q.qid)
        records.append({"qid": q.qid, "candidates": len(pool),
                        "scores": {c.passage.pid: w for c, w in
                                   zip(pool, result.weights if result else ())},
                        "output": result.text if result else ""})
    return records


def cut(candidate: Candidate, words: int | None) -> Passage:
    """The candidate's passage with its text cut to its first `words` space-separated words,
    then stripped (the paper's format_passage strips it).

    >>> from labeler.sources.passage import Passage
    >>> cut(Candidate(Passage("p1", "T", "a b  c d"), "retrieved", 1), 3).contents
    'T a b'
    """
    passage = candidate.passage
    if words is None:
        return passage
    return Passage(passage.pid, passage.title, " ".join(passage.text.split(" ")[:words]).strip())
