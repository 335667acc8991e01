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

from labeler.artifacts.manifest import DATA, MANIFEST, data_files, read_manifest, table_of
from labeler.artifacts.reader import verify_artifact
from labeler.errors import InputError
from labeler.paths import atomic_file, cache_root

#: the fields of a record the query list shows and filters on (those a kind's records have)
SUMMARY = {"qid": pl.String, "question": pl.String, "query": pl.String, "known": pl.Boolean,
           "utility_pids": pl.List(pl.String)}


@dataclass
class VersionIndex:
    """One version folder: its manifest, a row per record (`rows`: key, question, known,
    utility) and each record's data file and byte offset; `others`: a row per record of the
    kind's other tables (table, key, file, offset), e.g. SEER's pairs."""

    folder: Path
    manifest: dict
    rows: pl.DataFrame
    files: list[Path]
    others: pl.DataFrame
    _position: dict[str, int] = field(repr=False)
    #: the positions of each key that more than one record has (a review's verdicts on a
    #: query); a key of one record is only in `_position`
    _repeated: dict[str, list[int]] = field(repr=False, default_factory=dict)

    @property
    def kind(self) -> str:
        """The artifact kind, e.g. "utility"."""
        return self.manifest["artifact"]

    def position(self, key: str) -> int | None:
        """The record position of `key` (a qid, or the line number of a record without one)."""
        return self._position.get(key)

    def repeated(self, key: str) -> list[dict] | None:
        """Every record of `key` where more than one has it, else None."""
        positions = self._repeated.get(key)
        return None if positions is None else [self.record(at) for at in positions]

    def record(self, position: int) -> dict:
        """The record at `position`, read from its offset."""
        row = self.rows.row(position, named=True)
        return _read(self.files[row["file"]], row["offset"])

    def table_records(self, key: str) -> dict[str, list[dict]]:
        """The records of query `key` in each other table: {table: records}."""
        found: dict[str, list[dict]] = {}
        for row in self.others.filter(pl.col("key") == key).iter_rows(named=True):
            found.setdefault(row["table"], []).append(
                _read(self.folder / row["name"], row["offset"]))
        return found


def _read(file: Path, offset: int) -> dict:
    with file.open("rb") as f:
        f.seek(offset)
        return json.loads(f.readline())


def open_version(folder: str | Path, *, cache_dir: str | Path | None = None) -> VersionIndex:
    """Index a version folder's data records, from the cache where its files are unchanged,
    else from the files once verified against the manifest."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError("expected an artifact version folder <out>/<artifact>/<dataset>/<llm>"
                         "/v<N>/", path=str(folder))
    manifest = read_manifest(folder)  # ArtifactError in one line where there is none
    files = data_files(folder, DATA)
    others = sorted(f for f in folder.glob("*.jsonl") if table_of(f.name) not in (DATA, None))
    stamp = {f.name: [(s := f.stat()).st_size, s.st_mtime_ns] for f in [*files, *others]}
    key = hashlib.sha256((folder / MANIFEST).read_bytes() + json.dumps(stamp).encode())
    cached = cache_root(cache_dir) / "view" / key.hexdigest()
    if (cached / "data.parquet").is_file():
        rows = pl.read_parquet(cached / "data.parquet")
        tables = pl.read_parquet(cached / "tables.parquet")
    else:
        manifest, rows, tables = verify_artifact(folder), _summaries(files), _keyed(others)
        for name, frame in (("data", rows), ("tables", tables)):
            with atomic_file(cached / f"{name}.parquet", "wb") as f:
                frame.write_parquet(f)
    keys = rows["key"].to_list()
    position = {k: i for i, k in enumerate(keys)}
    repeated: dict[str, list[int]] = {}
    if len(position) < len(keys):
        for at, key in enumerate(keys):
            repeated.setdefault(key, []).append(at)
    return VersionIndex(folder, manifest, rows, files, tables, position,
                        {k: v for k, v in repeated.items() if len(v) > 1})


def _keyed(files: list[Path]) -> pl.DataFrame:
    """A row per record of other tables' `files`: table, key (its qid), file name, offset."""
    frames = [pl.read_ndjson(file, schema={"qid": pl.String}).select(
        table=pl.lit(table_of(file.name)), key="qid", name=pl.lit(file.name),
        offset=pl.Series(_offsets(file), dtype=pl.Int64)) for file in files]
    return pl.concat(frames) if frames else pl.DataFrame(
        schema={"table": pl.String, "key": pl.String, "name": pl.String, "offset": pl.Int64})


def _offsets(file: Path) -> list[int]:
    """The byte offset of each record (non-blank line) of `file`."""
    offsets, offset = [], 0
    with file.open("rb") as f:
        for line in f:
            if line.strip():
                offsets.append(offset)
            offset += len(line)
    return offsets


def _summaries(files: list[Path]) -> pl.DataFrame:
    """A row per record of `files`: key (its qid, else its position), question, known,
    utility, and its file number and byte offset."""
    frames = []
    for number, file in enumerate(files):
        offsets = _offsets(file)
        frame = pl.read_ndjson(file, schema=SUMMARY) if offsets else pl.DataFrame(
            schema=SUMMARY)
        frames.append(frame.with_columns(file=pl.lit(number, pl.Int32),
                                         offset=pl.Series(offsets, dtype=pl.Int64)))
    rows = pl.concat(frames) if frames else pl.DataFrame(schema=SUMMARY)
    return rows.with_row_index("line").select(
        pl.coalesce("qid", pl.col("line").cast(pl.String)).alias("key"),
        pl.coalesce("question", "query", pl.lit("")).alias("question"), "known",
        pl.col("utility_pids").alias("utility"), "file", "offset")
