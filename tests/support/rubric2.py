"""A small rubric version without a model: the real cisi-sample's first two queries over their
BM25 top 5, questions and P(yes) from a scripted LLM (P(yes) 0.6 against 0.2 where the
document mentions titles), the top 3 re-ranked with weight 2 and threshold 0.5."""

from __future__ import annotations

from pathlib import Path


def scripted_rubric(out: Path) -> Path:
    """Write the version into `out` (<out>/rubric/cisi-sample/scripted/v1); returns it."""
    from labeler.artifacts.writer import VersionWriter
    from labeler.retrieval import build_pools
    from labeler.sources.registry import load_source
    from labeler.tasks.base import make_shards
    from labeler.tasks.rubric import RubricConfig, RubricTask
    from labeler.workflows.steps import published_config, published_source
    from support.scripted import ScriptedBackend

    source = load_source("cisi-sample", limit=2)
    pools = build_pools(source, pool="rp", k=5, encoder="bm25")
    [shard] = make_shards(source.queries, pools, 2)

    def probs(text: str, choices) -> dict[str, float]:
        yes, no = (0.6, 0.2) if "title" in text.split("Answer yes or no.")[0] else (0.2, 0.6)
        return {c: {"Yes": yes, "No": no}.get(c, 0.05) for c in choices}

    config = RubricConfig(dataset="cisi-sample", k=5, rerank_k=3, weight=2.0, threshold=0.5)
    task = RubricTask(config)
    backend = ScriptedBackend(answer=lambda text: "1. Does the document discuss titles?\n"
                                                  "2. Is the document about libraries?",
                              probs=probs)
    writer = VersionWriter(out, kind=RubricTask, dataset="cisi-sample", llm="scripted",
                           build_id="b" * 32)
    writer.write_shard(0, task.derive(task.label(task.calls(backend), shard), {}))
    return writer.finish({"model_id": "scripted", "model_revision": None,
                          **published_source(source), **task.manifest(),
                          "config": published_config(config), **pools.describe()})
