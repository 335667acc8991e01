"""`labeler build --dry-run`: what a build would do, from its checks alone; no model is loaded.

Every row is exact, an upper bound or an estimate, and says which: before retrieval an `rp`
pool's candidates are at most queries × k; prompt tokens are estimated from characters
(about 4 per token) without the model's tokenizer; the call cache's keys hold the model's
revision and its rendered prompts, so the plan shows how many answers of each LLM the cache
holds, not which of them the build will ask again. A named corpus the cache does not hold is
not downloaded: its passages are the count recorded beside its pin (exact, or an estimate that
says so), its passages' length is estimated from its cut, and its KILT references are counted
as one gold passage each. Nor is a dataset file over 8 MB the Hub cache lacks: its head is read
by range requests, its queries counted from the parquet footer or the count recorded beside its
pin (exact), else estimated, and the counts that follow the queries scaled from the head's
(`labeler.sources.heads`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from labeler.llm.config import LLMConfig
from labeler.paths import cache_root
from labeler.retrieval.index import SHARD_SIZE
from labeler.sources.types import Source
from labeler.sources.unstored import UnstoredCorpus
from labeler.tasks.base import TaskConfig, requests_of

#: characters per token of the estimate (English prose under a BPE vocabulary)
CHARS_PER_TOKEN = 4


def plan(artifact: str, config: TaskConfig, llms: Sequence[LLMConfig], *,
         out: str | Path = "out", version: str | None = None, cache_dir=None
         ) -> list[tuple[str, str, str]]:
    """(what, how many, how known) rows of the build `labeler build` would run with these
    options, after every check it makes before loading a model (`check_build`). Where only
    the head of the dataset's file was read, the counts that follow its queries are scaled
    from the head's to the whole file's, as estimates (`labeler.sources.heads`)."""
    from labeler.workflows.build import check_build

    task, source, _ = check_build(artifact, config, llms, out=out, version=version,
                                  stored_only=True)
    queries, counted = queries_count(source, config.limit)
    scale = queries / max(len(source.queries), 1)  # the queries read -> all of them
    rows = [("queries", f"{queries:,}", counted), *_corpus_rows(source, config, cache_dir)]
    gold, known = _gold(source)
    if config.pool == "hgp":
        candidates = sum(gold) * scale
    else:
        candidates = queries * config.k + (sum(gold) * scale if config.pool == "mcp" else 0)
        known = "upper bound: queries × k" + (" + gold" if config.pool == "mcp" else "")
    rows.append(("candidates", f"{round(candidates):,}",
                 known if config.pool == "rp" else _scaled(known, source, scale)))
    rows += _call_rows(task, source, llms, candidates / scale if scale else 0, gold, scale,
                       _known_pools(source, config))
    rows += _cached_calls(llms, cache_dir)
    rows.append(("LLMs", ", ".join(llm.name for llm in llms) or "none",
                 "none loaded by a dry run" if llms else f"--artifact {artifact} asks no LLM"))
    return rows


def _corpus_rows(source: Source, config: TaskConfig, cache_dir) -> list[tuple[str, str, str]]:
    """The corpus's passages, and the embeddings cached and to compute for a dense search."""
    corpus = source.corpus
    unstored = isinstance(corpus, UnstoredCorpus)
    retrieves = config.pool != "hgp" and config.run is None
    pooled = pooled_scale(source)  # a corpus pooled from the head of the dataset's file
    passages = 0 if corpus is None else round(len(corpus) * pooled)
    how = ("not searched" if not retrieves else corpus.known if unstored else "exact"
           if pooled == 1 else f"estimate: the passages of the first {source.head.read:,} "
           f"rows, scaled to the file's {source.head.rows:,} (not downloaded)")
    rows = [("corpus passages", "n/a" if corpus is None else f"{passages:,}", how)]
    if retrieves and config.encoder != "bm25":
        cached = 0 if unstored or pooled != 1 else _cached_embeddings(source, config.encoder,
                                                                      cache_dir)
        rows.append(("corpus embeddings cached", f"{cached:,}", "exact: the corpus is not stored"
                     if unstored or pooled != 1 else "exact (the cache's shards)"))
        rows.append(("embeddings to compute", f"{passages - cached:,}",
                     "as the corpus passages" if unstored or pooled != 1 else "exact"))
    return rows


def _call_rows(task, source: Source, llms: Sequence[LLMConfig], candidates: float,
               gold: list[int], scale: float, pools) -> list[tuple[str, str, str]]:
    """Each kind of LLM call and its prompt tokens (and a served model's requests), from
    the task's calls over the queries read (`candidates` among them), times `scale`; a
    served model's requests counted by the task over `pools` where a dry run knows them."""
    passage_chars = mean_chars(source)
    question_chars = sum(len(q.question) for q in source.queries) / max(len(source.queries), 1)
    rows, planned = [], task.planned_calls(source, int(candidates), gold)
    for what, calls, passages, how, _ in planned:
        tokens = calls * scale * (question_chars + passages * passage_chars) / CHARS_PER_TOKEN
        rows.append((f"LLM calls: {what}", f"{round(calls * scale):,}",
                     _scaled(how, source, scale)))
        rows.append((f"  prompt tokens: {what}", f"~{int(tokens):,}",
                     "estimate from characters (no tokenizer loaded), templates excluded"))
    if any(llm.backend == "openai" for llm in llms):
        requests, how = (requests_of(planned),
                         "upper bound: the pools are not known before retrieval") \
            if pools is None else task.planned_requests(source, pools)
        rows.append(("requests to the server, per served LLM", f"{round(requests * scale):,}",
                     _scaled(f"{how}; each distinct request once, one per prompt (its samples "
                             "in one request), one per choice of a P(yes) scored from prompt "
                             "log-probabilities (one a P(yes) where the server gives only "
                             "top_logprobs), as if the call cache were empty: an answer it "
                             "holds (below) is not asked again", source, scale)))
    return rows


def _known_pools(source: Source, config: TaskConfig):
    """The candidate pools where a dry run knows them without retrieving (the human gold, or
    a run file's over a stored corpus); None where it does not."""
    if isinstance(source.corpus, UnstoredCorpus) or (config.pool != "hgp" and not config.run):
        return None
    from labeler.retrieval.pools import build_pools

    return build_pools(source, pool=config.pool, k=config.k, run=config.run)


def _scaled(how: str, source: Source, scale: float) -> str:
    """`how` a count is known, for a count scaled from the queries read to all of them."""
    if scale == 1:
        return how
    return f"estimate: the first {len(source.queries):,} queries' ({how}), scaled"


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


def queries_count(source: Source, limit: int | None) -> tuple[int, str]:
    """How many queries `source` holds once its whole file is read, and how that is known:
    the queries loaded where the head was the whole file or held the first `limit`; the file's
    rows where each row is a query; else the head's share of them, an estimate."""
    head, loaded = source.head, len(source.queries)
    if head is None or head.whole or (limit is not None and loaded >= limit):
        return loaded, "exact"
    if head.exact and loaded == head.read and not head.spec.filters:
        total, known = head.rows, head.known
    else:
        total = round(loaded * head.rows / max(head.read, 1))
        known = (f"estimate: the first {head.read:,} rows' queries, scaled to the file's "
                 f"{head.rows:,} (not downloaded)")
    return (total if limit is None else min(limit, total)), known


def pooled_scale(source: Source) -> float:
    """What a corpus pooled from the dataset's own rows (no named corpus) is multiplied by to
    estimate the whole file's: its rows over the rows read; 1 where all were read."""
    head, corpus = source.head, source.corpus
    if head is None or head.whole or corpus is None or getattr(corpus, "name", None):
        return 1.0
    return head.rows / max(head.read, 1)
