"""A corpus's missing embedding shards encoded by any executor's workers, each loading the
encoder once (`labeler.retrieval.dense.encode_here` is the default: here, with the loaded
encoder)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Protocol

import numpy as np

from labeler.errors import InputError
from labeler.retrieval.dense import Encoder, EncodeShards, Texts, load_encoder
from labeler.retrieval.index import EmbeddingIndex


class Mapper(Protocol):
    """What maps a worker over items (a `labeler.executors` executor)."""

    def map(self, worker: Callable, items: Sequence, **options) -> Iterator: ...


def encode_with(mapper: Mapper) -> EncodeShards:
    """Shards encoded by `mapper`'s workers, each loading the encoder once by its name on the
    driver's kind of device; each shard's texts go to a worker and its vectors come back, so
    the workers need no shared storage for embeddings."""

    def encode(index: EmbeddingIndex, shards: Sequence[int], texts: Texts, encoder: Encoder
               ) -> Iterator[tuple[int, np.ndarray]]:
        device = "cuda:0" if encoder.device.startswith("cuda") else "cpu"  # a worker's GPU
        return mapper.map(EncoderWorker(encoder.name, device, encoder.key),
                          _ShardTexts(index, shards, texts), what="corpus shards",
                          gpus=int(device != "cpu"),
                          total=sum(len(index.span(s)) for s in shards),
                          size=lambda result: len(result[1]))

    return encode


class EncoderWorker:
    """A worker: the encoder, loaded by name on the first shard and kept; (shard, its texts)
    in, (shard, its vectors) out."""

    def __init__(self, name: str, device: str, key: str) -> None:
        self.name, self.device, self.key = name, device, key
        self._encoder: Encoder | None = None

    def __call__(self, item: tuple[int, list[str]]) -> tuple[int, np.ndarray]:
        shard, texts = item
        if self._encoder is None:  # here, not when built: Ray loses an actor constructor's error
            self._encoder = load_encoder(self.name, device=self.device)
            if self._encoder.key != self.key:  # another model under the same name there
                raise InputError(f"encoder '{self.name}' loads as {self._encoder.key} on a "
                                 f"worker, as {self.key} here", field_name="encoder",
                                 hint="install the same model on every node")
        return shard, self._encoder.embed(texts)


class _ShardTexts(Sequence):
    """(shard, its passages' texts) for each of `shards`, each read only when asked for."""

    def __init__(self, index: EmbeddingIndex, shards: Sequence[int], texts: Texts) -> None:
        self.index, self.shards, self.texts = index, shards, texts

    def __len__(self) -> int:
        return len(self.shards)

    def __getitem__(self, position):
        shard = self.shards[position]
        return shard, self.texts(self.index.span(shard))
