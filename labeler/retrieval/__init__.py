"""Candidate pools: dense retrieval (FlagEmbedding), human gold passages, or a given run."""

from labeler.retrieval.pools import POOLS, Candidate, Pools, build_pools, gold_recall

__all__ = ["POOLS", "Candidate", "Pools", "build_pools", "gold_recall"]
