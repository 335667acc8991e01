"""A dry run's look at a dataset file it does not download: the file's first rows, read by
HTTP range requests through huggingface_hub's `HfFileSystem`, and how many rows the whole file
holds: a parquet file's footer says exactly; a JSON-lines file's count is the one recorded
beside its pin (`HubFiles.rows`), else estimated from its size.

    with heads_only() as heads:          # load_hub reads a big uncached file's head
        source = load_nq(limit=None)
    heads[0].rows, heads[0].read         # the file's rows, the rows read
"""

from __future__ import annotations

import gzip
import io
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from labeler.sources.hub_files import HubFiles

#: a dry run downloads a dataset file up to this size whole (it is cheap, and every count
#: stays exact); a bigger one it reads only the head of
WHOLE_BYTES = 8 * 2**20
#: about how much of a big file's head a dry run reads: the rows its averages come from
HEAD_BYTES = 2 * 2**20
#: the bytes of one range request
BLOCK_BYTES = 2**20

#: the heads read so far, inside `heads_only()`; None outside it
_HEADS: ContextVar[list[Head] | None] = ContextVar("heads", default=None)


@dataclass(frozen=True)
class Head:
    """The first rows of a dataset file a dry run did not download."""

    spec: HubFiles
    read: int  # the rows read
    rows: int  # the rows the whole file holds: exact, or an estimate that says so
    known: str  # how `rows` is known, as a plan row says it

    @property
    def whole(self) -> bool:
        """Whether the head is the whole file."""
        return self.read >= self.rows and self.exact

    @property
    def exact(self) -> bool:
        return self.known.startswith("exact")


@contextmanager
def heads_only() -> Iterator[list[Head]]:
    """Within: `hubload.load_hub` reads a file bigger than `WHOLE_BYTES` that the Hub cache
    lacks by its head only (`read_head`); the list yielded collects each head read."""
    heads: list[Head] = []
    token = _HEADS.set(heads)
    try:
        yield heads
    finally:
        _HEADS.reset(token)


def wants_head(spec: HubFiles) -> bool:
    """Whether `spec`'s file is to be read by its head: inside `heads_only()`, one file, not
    in the Hub cache, and bigger than `WHOLE_BYTES`."""
    from huggingface_hub import try_to_load_from_cache

    if _HEADS.get() is None or len(spec.files) != 1:
        return False
    cached = try_to_load_from_cache(spec.repo, spec.files[0], revision=spec.revision,
                                    repo_type="dataset")
    return not isinstance(cached, str) and _filesystem().info(_path(spec))["size"] > WHOLE_BYTES


def read_head(spec: HubFiles) -> list[dict]:
    """The first rows of `spec`'s file (about `HEAD_BYTES` of it), read by range requests;
    records the `Head` in the open `heads_only()`."""
    path = _path(spec)
    with _filesystem().open(path, block_size=BLOCK_BYTES, cache_type="readahead") as file:
        if spec.format == "parquet":
            rows, total, known = _parquet_head(file)
        else:
            size = _filesystem().info(path)["size"]
            rows, used = _json_head(file, gzipped=spec.files[0].endswith(".gz"))
            total, known = _json_rows(spec, len(rows), used, size)
    _HEADS.get().append(Head(spec, len(rows), total, known))
    return rows


def _parquet_head(file) -> tuple[list[dict], int, str]:
    """The first row groups (at least one, about `HEAD_BYTES`) and the footer's row count."""
    import pyarrow.parquet as pq

    parquet = pq.ParquetFile(file)
    meta, groups, used = parquet.metadata, [], 0
    for i in range(meta.num_row_groups):
        if groups and used >= HEAD_BYTES:
            break
        groups.append(i)
        group = meta.row_group(i)
        used += sum(group.column(c).total_compressed_size for c in range(group.num_columns))
    return (parquet.read_row_groups(groups).to_pylist(), meta.num_rows,
            "exact: the parquet footer's, read by range (not downloaded)")


def _json_head(file, *, gzipped: bool) -> tuple[list[dict], int]:
    """The first JSON lines of about `HEAD_BYTES` (compressed, for a gzip file): the rows and
    the file's bytes they took (the whole file's, if they are all of it)."""
    import json

    stream = gzip.GzipFile(fileobj=file) if gzipped else file
    rows = []
    for line in io.TextIOWrapper(stream, encoding="utf-8"):
        if line.strip():
            rows.append(json.loads(line))
        if file.tell() >= HEAD_BYTES:  # the compressed position: what was fetched
            return rows, file.tell()
    return rows, -1


def _json_rows(spec: HubFiles, read: int, used: int, size: int) -> tuple[int, str]:
    """How many rows a JSON-lines file holds: all were read (`used` -1), recorded beside its
    pin, or estimated from its size at the head's bytes a row."""
    if used < 0:
        return read, "exact: every row read, by range"
    if spec.rows is not None:
        return spec.rows, "exact: recorded beside its pin (not downloaded)"
    return round(size / used * read), "estimate: from the file's size (not downloaded)"


def _filesystem():
    """A `HfFileSystem` on the endpoint huggingface_hub is set to now (not a cached one)."""
    from huggingface_hub import HfFileSystem, constants

    return HfFileSystem(endpoint=constants.ENDPOINT, skip_instance_cache=True)


def _path(spec: HubFiles) -> str:
    """`spec`'s file as `HfFileSystem` names it (a branch such as refs/convert/parquet quoted)."""
    from urllib.parse import quote

    return f"datasets/{spec.repo}@{quote(spec.revision, safe='')}/{spec.files[0]}"

