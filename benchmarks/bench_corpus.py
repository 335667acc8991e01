"""Benchmark corpus-scale dense retrieval: encoding cost per passage against the encoder
library's own batched `encode`, and the build time, search time and disk per passage of the
flat, ivf and hnsw indexes (not a test).

    python benchmarks/bench_corpus.py [--encoder minilm] [--device cpu] [--passages 512]
        [--vectors 200000] [--queries 100] [--k 20]

Everything is measured in one run on this machine:
- encoding: `--passages` real nq-sample passages (the bundled corpus, repeated if more are
  asked) through the encoder on `--device`, as `labeler build` encodes a corpus (batches of
  32, longest first): seconds and tokens per passage, and labeler's passages per second over
  FlagEmbedding's own `encode_corpus` (tokenised once, sorted by token length, padded per
  batch; at its default batch of 256 and at labeler's 32) on the same passages, threads and
  max length, timed in turns in this run (target >= 0.9). Run it with `--encoder bge-m3 --device
  cuda:0` on a GPU machine to replace docs/measurements.md's assumed GPU cost by a measured one.
- indexes: the encoded passages' real embeddings tiled to `--vectors` vectors by mixing
  random pairs of them with small Gaussian noise (real text cannot be encoded at that scale
  on 2 CPU cores; the tiled vectors time the indexes faithfully, but their recall is not
  that of a real corpus: tests/retrieval/test_ann.py measures recall on nq-sample), written as
  the embedding shards `labeler` writes, then indexed and searched with the real questions
  of nq-sample as queries. Per kind: build seconds per passage, disk bytes per passage,
  search seconds per query, and recall@k against flat search; flat search (the shards
  re-scored exactly) against FAISS's IndexFlatIP over the same vectors in memory.
Ends with the arithmetic docs/measurements.md extrapolates to 32M passages from.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import click
import numpy as np
from rich.console import Console
from rich.table import Table

from labeler.retrieval.ann import AnnIndex, IndexSpec, recall_at_k
from labeler.retrieval.dense import BATCH, MAX_LENGTH, load_encoder
from labeler.retrieval.index import SHARD_SIZE, EmbeddingIndex
from labeler.settings import cpu_threads
from labeler.sources.registry import load_source

#: the corpus scale docs/measurements.md extrapolates to, and BGE-M3's dimension
TARGET_PASSAGES, TARGET_DIM = 32_000_000, 1024


def _encode(encoder, texts: list[str]) -> tuple[np.ndarray, float, float, dict[int, float]]:
    """(vectors, seconds per passage, tokens per passage, {library batch size: its seconds per
    passage}) of encoding `texts` by labeler and by the library's `encode_corpus`, after one
    warm-up batch of each; the library's vectors must be labeler's up to float rounding."""
    import torch

    torch.set_num_threads(cpu_threads())  # the library's threads: those labeler encodes with
    library = encoder.embedder
    encoder.embed(texts[:32])
    library.encode_corpus(texts[:32], batch_size=32, max_length=MAX_LENGTH)
    start = time.perf_counter()
    vectors = encoder.embed(texts)
    seconds = time.perf_counter() - start
    own = {}
    for batch in (library.batch_size, BATCH):
        start = time.perf_counter()
        theirs = library.encode_corpus(texts, batch_size=batch, max_length=MAX_LENGTH)
        theirs = theirs["dense_vecs"] if isinstance(theirs, dict) else theirs  # BGE-M3's
        own[batch] = (time.perf_counter() - start) / len(texts)
        assert np.allclose(theirs, vectors, atol=1e-5), "labeler's vectors differ from encode's"
    tokens = sum(len(ids) for ids in library.tokenizer(
        texts, truncation=True, max_length=MAX_LENGTH)["input_ids"])
    return vectors, seconds / len(texts), tokens / len(texts), own


def _tile(vectors: np.ndarray, count: int, seed: int = 0) -> np.ndarray:
    """`count` unit vectors: `vectors` themselves, then mixtures (1 - w) x_i + w x_j of two
    random ones (w uniform in [0, 0.5]) plus Gaussian noise of 0.1/sqrt(dim) a coordinate,
    re-normalised: spread over the real embeddings' region, not piled on copies of them."""
    rng = np.random.default_rng(seed)
    n, dim = vectors.shape
    out = np.empty((count, dim), dtype=np.float32)
    out[:n] = vectors[:count]
    for start in range(n, count, 65_536):
        size = min(65_536, count - start)
        i, j = rng.integers(0, n, size), rng.integers(0, n, size)
        w = rng.uniform(0, 0.5, (size, 1)).astype(np.float32)
        part = (1 - w) * vectors[i] + w * vectors[j]
        part += rng.standard_normal((size, dim), dtype=np.float32) * (0.1 / np.sqrt(dim))
        out[start : start + size] = part / np.linalg.norm(part, axis=1, keepdims=True)
    return out


def _timed(function):
    start = time.perf_counter()
    result = function()
    return result, time.perf_counter() - start


def _disk(paths) -> int:
    return sum(p.stat().st_size for p in paths if p.is_file())


@click.command()
@click.option("--encoder", "encoder_name", default="minilm", show_default=True)
@click.option("--device", help="cpu, cuda:0, ... [default: the first GPU, else cpu]")
@click.option("--passages", default=512, show_default=True, help="Real passages encoded.")
@click.option("--vectors", default=200_000, show_default=True,
              help="Vectors the indexes are built over (the embeddings tiled).")
@click.option("--queries", default=100, show_default=True, help="nq-sample questions searched.")
@click.option("--k", default=20, show_default=True)
@click.option("--gpus", default=8, show_default=True, help="N in the 32M extrapolation.")
@click.option("--gpu-seconds", default=0.002, show_default=True,
              help="ASSUMED bge-m3 seconds per passage on one GPU in float32, as labeler "
                   "encodes (see docs/measurements.md; replace it by one measured with "
                   "--device cuda:0).")
def main(encoder_name, device, passages, vectors, queries, k, gpus, gpu_seconds) -> None:
    import faiss  # imported before any timing

    console = Console(width=150)
    source = load_source("nq-sample", limit=queries)
    corpus = source.corpus.passages
    texts = [corpus[i % len(corpus)].contents for i in range(passages)]
    encoder = load_encoder(encoder_name, device=device)
    embedded, per_passage, tokens, own = _encode(encoder, texts)
    query_vectors = encoder.encode_queries(source.queries)
    dim = embedded.shape[1]

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "shards"
        folder.mkdir()
        tiled = _tile(embedded, vectors)
        index = EmbeddingIndex(folder, vectors, SHARD_SIZE)
        _, write = _timed(lambda: [np.save(index.path(s), tiled[index.span(s)])
                                   for s in range(index.shards)])
        shards = [index.path(s) for s in range(index.shards)]
        index.search(query_vectors[:1], k)  # warm: the shards in the page cache, as FAISS's below
        exact, flat_s = _timed(lambda: index.search(query_vectors, k))
        exact_ids = [ids for ids, _ in exact]
        in_memory = faiss.IndexFlatIP(dim)
        in_memory.add(tiled)
        _, faiss_s = _timed(lambda: in_memory.search(query_vectors, k))
        in_memory = tiled = None  # free them before the ANN builds
        rows.append(("flat (shards, exact)", write / vectors, _disk(shards) / vectors,
                     flat_s / queries, 1.0, 1.0))
        for spec in ("ivf", f"ivf:pq={_pq(dim)},refine=8", "hnsw"):
            ann = AnnIndex.of(index, IndexSpec.parse(spec))
            _, build = _timed(ann.open)
            found, search_s = _timed(lambda ann=ann: ann.search(query_vectors, k))  # + opening
            recall = recall_at_k([ids for ids, _ in found], exact_ids, k)
            label = " ".join([ann.kind] + [f"{p}={v}" for p, v in ann.params.items()
                                           if v is not None])
            rows.append((label, build / vectors, _disk(ann.files()) / vectors,
                         search_s / queries, recall, flat_s / search_s))
            for path in ann.files():
                path.unlink()
        shutil.rmtree(folder)

    console.print(_encoding_table(encoder, passages, per_passage, tokens, own))
    console.print(_index_table(rows, vectors, dim, queries, k))
    console.print(f"flat search over the shards / FAISS IndexFlatIP in memory: "
                  f"{flat_s / faiss_s:.2f}x the time")

    hours = TARGET_PASSAGES * per_passage / 3600
    console.print(
        f"32M passages, measured here ({encoder.model_id}, {encoder.device}): "
        f"{TARGET_PASSAGES:,} x {per_passage:.5f} s = {hours:,.1f} h on one device.\n"
        f"32M passages with bge-m3 on {gpus} GPUs at an ASSUMED {gpu_seconds} s/passage each: "
        f"{TARGET_PASSAGES * gpu_seconds / gpus / 3600:.1f} h (time = passages x s/passage / "
        f"GPUs).\nflat disk at {TARGET_DIM}-d float32: {TARGET_PASSAGES * TARGET_DIM * 4 / 1e9:.0f}"
        f" GB; ivf pq=64: {TARGET_PASSAGES * (64 + 8) / 1e9:.1f} GB of lists.", highlight=False)


def _encoding_table(encoder, passages: int, per_passage: float, tokens: float,
                    own: dict[int, float]) -> Table:
    import torch

    table = Table(title=f"encoding {passages:,} passages ({tokens:.0f} tokens each) with "
                        f"{encoder.model_id} on {encoder.device}, {torch.get_num_threads()} "
                        f"torch threads, max length {MAX_LENGTH}")
    for column in ("encoder", "batch", "seconds / passage", "passages / s",
                   "labeler / library"):
        table.add_column(column, justify="right")
    table.add_row("labeler (Encoder.embed)", str(BATCH), f"{per_passage:.5f}",
                  f"{1 / per_passage:.1f}", "")
    for batch, seconds in own.items():
        table.add_row("FlagEmbedding encode_corpus", str(batch), f"{seconds:.5f}",
                      f"{1 / seconds:.1f}", f"{seconds / per_passage:.2f}x")
    return table


def _index_table(rows: list[tuple], vectors: int, dim: int, queries: int, k: int) -> Table:
    table = Table(title=f"indexes over {vectors:,} tiled {dim}-d vectors, {queries} queries, "
                        f"k = {k}")
    for column in ("index", "build s / passage", "disk bytes / passage", "search s / query",
                   f"recall@{k} vs flat", "speed-up vs flat"):
        table.add_column(column, justify="right")
    for label, build, disk, search, recall, speed in rows:
        table.add_row(label, f"{build:.2e}", f"{disk:.0f}", f"{search:.2e}", f"{recall:.3f}",
                      f"{speed:.1f}x")
    return table


def _pq(dim: int) -> int:
    """PQ sub-quantizers for 1/32 of float32's bytes: dim / 8 bytes a vector."""
    return max(1, dim // 8)


if __name__ == "__main__":
    main()
