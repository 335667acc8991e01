"""A version folder opened for viewing: its manifest, and where each record starts on disk.

Opening keeps per record only its data file, byte offset and the few fields the query list
filters on, in an Arrow table (polars reads just those fields of the JSONL); a record itself is
read from its offset when a page asks for it, so neither the browser nor the server holds the
whole artifact. The table is built once, from files verified against the manifest's sha256, and
kept in the cache (`<cache>/view/`) with each file's size and modification time: a later open
whose files still match them reads it back instead of reading and hashing the data again.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from labeler.artifacts.manifest import DATA, MANIFEST, data_files, read_manifest
from labeler.artifacts.reader import verify_artifact
from labeler.errors import InputError
from labeler.paths import atomic_file, cache_root

#: the fields of a record the query list shows and filters on (those a kind's records have)
SUMMARY = {"qid": pl.String, "question": pl.String, "query": pl.String, "known": pl.Boolean,
           "utility_pids": pl.List(pl.String)}


@dataclass
class VersionIndex:
    """One version folder: its manifest, a row per record (`rows`: key, question, known,
    utility) and each record's data file and byte offset."""

    folder: Path
    manifest: dict
    rows: pl.DataFrame
    files: list[Path]
    _position: dict[str, int] = field(repr=False)

    @property
    def kind(self) -> str:
        """The artifact kind, e.g. "utility"."""
        return self.manifest["artifact"]

    def position(self, key: str) -> int | None:
        """The record position of `key` (a qid, or the line number of a record without one)."""
        return self._position.get(key)

    def record(self, position: int) -> dict:
        """The record at `position`, read from its offset."""
        row = self.rows.row(position, named=True)
        with self.files[row["file"]].open("rb") as f:
            f.seek(row["offset"])
            return json.loads(f.readline())


def open_version(folder: str | Path, *, cache_dir: str | Path | None = None) -> VersionIndex:
    """Index a version folder's data records, from the cache where its files are unchanged,
    else from the files once verified against the manifest."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError("expected an artifact version folder <out>/<artifact>/<dataset>/<llm>"
                         "/v<N>/", path=str(folder))
    files = data_files(folder, DATA)
    stamp = {f.name: [(s := f.stat()).st_size, s.st_mtime_ns] for f in files}
    key = hashlib.sha256((folder / MANIFEST).read_bytes() + json.dumps(stamp).encode())
    cached = cache_root(cache_dir) / "view" / f"{key.hexdigest()}.parquet"
    if cached.is_file():
        manifest, rows = read_manifest(folder), pl.read_parquet(cached)
    else:
        manifest, rows = verify_artifact(folder), _summaries(files)
        with atomic_file(cached, "wb") as f:
            rows.write_parquet(f)
    position = {k: i for i, k in enumerate(rows["key"].to_list())}
    return VersionIndex(folder, manifest, rows, files, position)


def _summaries(files: list[Path]) -> pl.DataFrame:
    """A row per record of `files`: key (its qid, else its position), question, known,
    utility, and its file number and byte offset."""
    frames = []
    for number, file in enumerate(files):
        offsets, offset = [], 0
        with file.open("rb") as f:
            for line in f:
                if line.strip():
                    offsets.append(offset)
                offset += len(line)
        frame = pl.read_ndjson(file, schema=SUMMARY) if offsets else pl.DataFrame(
            schema=SUMMARY)
        frames.append(frame.with_columns(file=pl.lit(number, pl.Int32),
                                         offset=pl.Series(offsets, dtype=pl.Int64)))
    rows = pl.concat(frames) if frames else pl.DataFrame(schema=SUMMARY)
    return rows.with_row_index("line").select(
        pl.coalesce("qid", pl.col("line").cast(pl.String)).alias("key"),
        pl.coalesce("question", "query", pl.lit("")).alias("question"), "known",
        pl.col("utility_pids").alias("utility"), "file", "offset")
