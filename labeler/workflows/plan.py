"""`labeler build --dry-run`: what a build would do, from its checks alone; no model is loaded.

Every row is exact, an upper bound or an estimate, and says which: before retrieval an `rp`
pool's candidates are at most queries × k; prompt tokens are estimated from characters
(about 4 per token) without the model's tokenizer; the call cache's keys hold the model's
revision and its rendered prompts, so the plan shows how many answers of each LLM the cache
holds, not which of them the build will ask again. A named corpus the cache does not hold is
not downloaded: its passages are the count recorded beside its pin (exact, or an estimate that
says so), its passages' length is estimated from its cut, and its KILT references are counted
as one gold passage each.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from labeler.llm.config import LLMConfig
from labeler.paths import cache_root
from labeler.retrieval.index import SHARD_SIZE
from labeler.sources.types import Source
from labeler.sources.unstored import UnstoredCorpus
from labeler.tasks.base import TaskConfig

#: characters per token of the estimate (English prose under a BPE vocabulary)
CHARS_PER_TOKEN = 4
#: requests a served model (--backend openai) gets per call of a kind; others 1: a P(yes)
#: scores " yes" and " no", one request each
REQUESTS_PER_CALL = {"P(yes)": 2}


def plan(artifact: str, config: TaskConfig, llms: Sequence[LLMConfig], *,
         out: str | Path = "out", version: str | None = None, cache_dir=None
         ) -> list[tuple[str, str, str]]:
    """(what, how many, how known) rows of the build `labeler build` would run with these
    options, after every check it makes before loading a model (`check_build`)."""
    from labeler.workflows.build import check_build

    task, source, _ = check_build(artifact, config, llms, out=out, version=version,
                                  stored_only=True)
    queries = source.queries
    corpus = source.corpus
    unstored = isinstance(corpus, UnstoredCorpus)
    rows = [("queries", f"{len(queries):,}", "exact")]
    retrieves = config.pool != "hgp" and config.run is None
    rows.append(("corpus passages", "n/a" if corpus is None else f"{len(corpus):,}",
                 "not searched" if not retrieves else corpus.known if unstored else "exact"))
    if retrieves and config.encoder != "bm25":
        cached = 0 if unstored else _cached_embeddings(source, config.encoder, cache_dir)
        rows.append(("corpus embeddings cached", f"{cached:,}", "exact: the corpus is not stored"
                     if unstored else "exact (the cache's shards)"))
        rows.append(("embeddings to compute", f"{len(corpus) - cached:,}",
                     "as the corpus passages" if unstored else "exact"))
    gold, known = _gold(source)
    if config.pool == "hgp":
        candidates = sum(gold)
    else:
        candidates = len(queries) * config.k + (sum(gold) if config.pool == "mcp" else 0)
        known = "upper bound: queries × k" + (" + gold" if config.pool == "mcp" else "")
    rows.append(("candidates", f"{candidates:,}", known))
    passage_chars = mean_chars(source)
    question_chars = sum(len(q.question) for q in queries) / max(len(queries), 1)
    requests = 0
    for what, calls, passages, how in task.planned_calls(source, candidates, gold):
        tokens = calls * (question_chars + passages * passage_chars) / CHARS_PER_TOKEN
        rows.append((f"LLM calls: {what}", f"{calls:,}", how))
        rows.append((f"  prompt tokens: {what}", f"~{int(tokens):,}",
                     "estimate from characters (no tokenizer loaded), templates excluded"))
        requests += calls * REQUESTS_PER_CALL.get(what, 1)
    if any(llm.backend == "openai" for llm in llms):
        rows.append(("requests to the server, per served LLM", f"{requests:,}",
                     ("upper bound: one per call, one per choice of a P(yes); none for an "
                      "answer the call cache holds")))
    rows += _cached_calls(llms, cache_dir)
    rows.append(("LLMs", ", ".join(llm.name for llm in llms), "none loaded by a dry run"))
    return rows


def _gold(source: Source) -> tuple[list[int], str]:
    """Each query's human gold passages, and how known: a dry run's undownloaded corpus of
    KILT pages counts each reference as one passage (it may span more)."""
    corpus = source.corpus
    if isinstance(corpus, UnstoredCorpus) and corpus.maps_references:
        return ([len(q.gold) + len(q.gold_refs) for q in source.queries],
                "estimate: a KILT reference as one passage (corpus not downloaded)")
    return [len(q.gold) for q in source.queries], "exact"


def _cached_calls(llms: Sequence[LLMConfig], cache_dir) -> list[tuple[str, str, str]]:
    """Per LLM, the answers the call cache holds for it by operation: the most a build can be
    served (which of them it asks again needs its rendered prompts, so the model)."""
    from labeler.llm.call_store import cache_stats
    from labeler.llm.models import resolve_model

    held = cache_stats(cache_dir).by_model
    rows = []
    for llm in llms:
        alias = resolve_model(llm.name).alias
        ops = [f"{count:,} {op}" for model, op, count in held if model == alias]
        rows.append((f"answers of {alias} in the call cache", ", ".join(ops) or "0",
                     "exact; which this build asks again needs its prompts rendered"))
    return rows


def mean_chars(source: Source, sample: int = 1000) -> float:
    """Mean characters of a passage: the corpus's first `sample`, else the gold passages;
    an undownloaded corpus's estimate where there are none."""
    corpus = source.corpus
    if isinstance(corpus, UnstoredCorpus):
        gold = [p.contents for q in source.queries for p in q.gold]
        return sum(map(len, gold)) / len(gold) if gold else corpus.mean_chars()
    texts = corpus.contents(range(min(sample, len(corpus)))) if corpus is not None and len(
        corpus) else [p.contents for q in source.queries for p in q.gold]
    return sum(map(len, texts)) / max(len(texts), 1)


def _cached_embeddings(source: Source, encoder: str | None, cache_dir) -> int:
    """Passages of `source.corpus` whose embeddings an index in the cache holds under an
    encoder of that name (found by the model's name in the index folder, so without loading
    it: its key's hash needs its pooling)."""
    from labeler.retrieval.dense import DEFAULT_ENCODER, ENCODERS, key_slug

    slug = key_slug(ENCODERS.get(encoder or DEFAULT_ENCODER, encoder or DEFAULT_ENCODER))
    corpus = source.corpus
    best = 0
    for folder in (cache_root(cache_dir) / "embeddings").glob(
            f"{slug}-*/{corpus.fingerprint}-s{SHARD_SIZE}"):
        shards = sorted(folder.glob("shard-*.npy"))
        best = max(best, sum(min(SHARD_SIZE, len(corpus) - int(p.stem[6:]) * SHARD_SIZE)
                             for p in shards))
    return best
