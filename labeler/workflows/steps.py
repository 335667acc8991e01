"""The steps `build`, `judge` and `retrieve` share: the source and pools a config names, how
an executor encodes a corpus, and how a published manifest names them
without a local path."""

from __future__ import annotations

import re
from dataclasses import asdict
from pathlib import Path

from labeler.executors.base import Executor
from labeler.paths import published_file
from labeler.retrieval.dense import EncodeShards, encode_here
from labeler.retrieval.encoding import encode_with
from labeler.retrieval.pools import Pools, build_pools
from labeler.sources.registry import CORPORA, JSONL_PREFIX, SEARCH_PREFIX, load_source
from labeler.sources.types import Source
from labeler.tasks.base import TaskConfig


def config_source(config: TaskConfig, *, stored_only: bool = False) -> Source:
    """The queries and corpus `config` names (the queries it selects: `TaskConfig.select`):
    the first step of `build` and `judge`; `stored_only` (a dry run) downloads no named
    corpus (`load_source`)."""
    return config.select(load_source(config.dataset, corpus=config.corpus, limit=config.limit,
                                     qrels=config.qrels, stored_only=stored_only,
                                     sample=config.drawn()))


def config_pools(source: Source, config: TaskConfig, cache_dir: str | Path | None = None,
                 executor: Executor | None = None) -> Pools:
    """The candidate pools `config` asks for over `source`'s queries: the second step, so that
    `judge` ranks exactly the candidates `build` labels for the same options; `executor`
    encodes a dense corpus's missing shards (default: here)."""
    return build_pools(source, pool=config.pool, k=config.k, run=config.run,
                       encoder=config.encoder, index=config.index, cache_dir=cache_dir,
                       encode=corpus_encoding(executor), bm25=config.bm25())


def corpus_encoding(executor: Executor | None) -> EncodeShards:
    """How `executor` encodes a corpus's missing shards: here with the loaded encoder where
    its workers run in this process (or without one), else on its workers."""
    if executor is None or executor.in_process:
        return encode_here
    return encode_with(executor)


#: config fields that name a file even without a folder in the name (a CORPORA name aside)
_FILE_FIELDS = ("corpus", "run", "qrels")


def published_config(config: TaskConfig) -> dict:
    """`asdict(config)` as a published manifest records it, with no local path: the corpus
    file (not a CORPORA name), run and qrels as {name, sha256}, any other option naming an
    existing local file or folder by its name (a file also by sha256), a jsonl:/search:
    dataset by its file's name."""
    published = asdict(config)
    for name, value in published.items():
        if not isinstance(value, str) or (name == "corpus" and value in CORPORA):
            continue
        path = Path(value).expanduser()
        if name == "dataset":
            published[name] = published_dataset(value)
        elif path.exists() and (name in _FILE_FIELDS or len(path.parts) > 1):
            published[name] = published_file(path)
    return published


def published_source(source: Source) -> dict:
    """`source.describe()` with its name as `published_dataset` gives it."""
    described = source.describe()
    return {**described, "source_dataset": published_dataset(described["source_dataset"])}


def published_dataset(name: str) -> str:
    """A dataset name without a local path: jsonl:PATH and search:PATH by their file's name."""
    for prefix in (JSONL_PREFIX, SEARCH_PREFIX):
        if name.startswith(prefix):
            return prefix + Path(name[len(prefix):]).name
    return name


def dataset_folder(name: str) -> str:
    """The folder name of a dataset: its name, or for `jsonl:PATH` the file's stem."""
    if name.startswith(JSONL_PREFIX):
        name = Path(name[len(JSONL_PREFIX):]).name.split(".")[0]
    return re.sub(r"[^A-Za-z0-9._+-]", "-", name).lstrip("._+-") or "dataset"
