"""Writing artifact version folders: shard by shard, resumable, appearing all at once.

A version is written in a hidden folder beside its target, `.v<N>.<build id>.partial/`, one
file per shard and table (`data-00000.jsonl`, and e.g. `pairs-00000.jsonl` for a kind with a
second table), each renamed into place only when complete, so a killed build that starts again
with the same build id finds its finished shards there. Its writer holds an exclusive lock on
the folder's `.writer.json` (flock) while it runs: an identical build started meanwhile is
refused in one line naming the process, and a killed writer's folder (its lock released by
the system) is taken over by the next. A task whose final records depend on
the whole build (SEER's weights) first stages each labelled shard (`.labelled/00000.jsonl`)
and writes its tables once all are labelled. The shard plan (each shard's size) is recorded
in `.shards.json` when the folder is made, so a resumed build cuts the same shards. When every shard is written, the kind's extra
files, the manifest and the card are added and the folder is renamed to `v<N>/`: the version
appears complete or not at all, and is never overwritten.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from collections.abc import Iterable, Iterator, Mapping
from functools import partial
from pathlib import Path

import jsonlines

from labeler.artifacts.card import render_card
from labeler.artifacts.features import Shape, features
from labeler.artifacts.kinds import ArtifactKind
from labeler.artifacts.manifest import (
    CARD,
    DATA,
    MANIFEST,
    build_manifest,
    data_file,
    data_files,
    table_of,
    table_schema,
    tag_problem,
    version_tag,
)
from labeler.artifacts.staging import (
    OWNER,
    PARTIAL,
    PLAN,
    abandoned_partials,
    hold,
    partial_of,
    sweep_sealed,
)
from labeler.errors import ArtifactError, InputError
from labeler.lines import read_jsonl
from labeler.paths import atomic_file, file_sha256
from labeler.resources import card_path, load_schema, schema_path
from labeler.schemas import check

_DUMPS = partial(json.dumps, ensure_ascii=False, allow_nan=False)
#: the folder inside a partial version holding the labelled shards of a settling task
_LABELLED = ".labelled"
#: the folder inside a partial version holding each shard's queries left out (`leave_out`)
_LEFT_OUT = ".left-out"


class VersionWriter:
    """One version of artifact kind `kind` being written, shard by shard.

    `build_id` (32 hex digits) names what is being built, e.g. a hash of the build's settings:
    a writer with the build id of an unfinished earlier one resumes its folder and version
    number.
    """

    def __init__(self, out: str | Path, *, kind: type[ArtifactKind], dataset: str, llm: str,
                 version: str | None = None, build_id: str) -> None:
        if not re.fullmatch(r"[0-9a-f]{32}", build_id):
            raise ValueError(f"build id must be 32 lower-case hex digits, got {build_id!r}")
        self.kind, self.artifact, self.dataset, self.llm = kind, kind.name, dataset, llm
        self._passed = version is not None
        sweep_sealed(Path(out) / kind.name / dataset / llm)
        lock = None
        while lock is None:  # again where the folder it chose was finished meanwhile
            resumed = partial_of(Path(out) / kind.name / dataset / llm, build_id, version)
            self.target = artifact_dir(out, kind=kind, dataset=dataset, llm=llm,
                                       version=resumed or version)
            self.version = self.target.name[1:]
            self.staging = self.target.parent / f".{self.target.name}.{build_id}.partial"
            lock = hold(self.staging)
        self._lock = lock
        for tmp in self.staging.rglob(".*.tmp"):  # left by a killed writer
            tmp.unlink(missing_ok=True)

    def abandoned(self) -> list[tuple[Path, str]]:
        """The other unfinished builds beside this one whose writer is gone (see
        `abandoned_partials`)."""
        return [(p, why) for p, why in abandoned_partials(self.target.parent)
                if p != self.staging]

    def plan(self, sizes: list[int]) -> list[int]:
        """The sizes of this version's shards: those recorded when its folder was made (a
        resumed build keeps its shards), else `sizes`, recorded now."""
        path = self.staging / PLAN
        if path.exists():
            return json.loads(path.read_text(encoding="utf-8"))
        with atomic_file(path) as f:  # a killed writer leaves the plan whole or none
            f.write(_DUMPS(sizes))
        return sizes

    def completed(self) -> set[int]:
        """Indices of the shards whose tables are written."""
        return _indices(self.staging, r"data-(\d+)\.jsonl")

    def labelled(self) -> set[int]:
        """Indices of the shards staged with `stage`."""
        return _indices(self.staging / _LABELLED, r"(\d+)\.jsonl")

    def stage(self, index: int, records: Iterable[dict]) -> int:
        """Keep one shard's labelled records until the whole build is labelled (for a task that
        settles build-level values before writing its tables); their count."""
        return self._write(self.staging / _LABELLED / f"{index:05d}.jsonl", records, None)

    def staged(self, index: int | None = None) -> Iterator[dict]:
        """The staged records of shard `index`, or of every staged shard in order."""
        indices = sorted(self.labelled()) if index is None else [index]
        for i in indices:
            for _, record in read_jsonl(self.staging / _LABELLED / f"{i:05d}.jsonl"):
                yield record

    def leave_out(self, index: int, unanswered: list[dict]) -> None:
        """Record shard `index`'s queries left out ({qid, reason} each), before the shard
        itself is written or staged (so a resumed build that finds the shard finds them); none
        removes what a build killed before writing the shard recorded."""
        path = self.staging / _LEFT_OUT / f"{index:05d}.jsonl"
        if unanswered:
            self._write(path, unanswered, None)
        else:
            path.unlink(missing_ok=True)

    def left_out(self) -> list[dict]:
        """Every shard's queries left out, in shard order."""
        return [record for path in sorted((self.staging / _LEFT_OUT).glob("*.jsonl"))
                for _, record in read_jsonl(path)]

    def write_shard(self, index: int, tables: Iterable[dict] | Mapping[str, Iterable[dict]]
                    ) -> int:
        """Check every record against its table's schema and write the shard's files; the count
        of its data records. `tables` is the data records, or {table: records} with "data".

        The first invalid record raises InputError naming the file, line and field; nothing
        of that shard is kept. The data file is written last: it marks the shard complete.
        """
        if not isinstance(tables, Mapping):
            tables = {DATA: tables}
        if DATA not in tables:
            raise ValueError(f"a shard's tables must include '{DATA}', got {sorted(tables)}")
        for table in sorted(tables, key=lambda t: t == DATA):
            count = self._write(self.staging / data_file(index, table), tables[table],
                                table_schema(self.artifact, table))
        return count

    def _write(self, path: Path, records: Iterable[dict], schema: str | None) -> int:
        path.parent.mkdir(parents=True, exist_ok=True)
        count = 0
        with atomic_file(path) as f:
            writer = jsonlines.Writer(f, dumps=_DUMPS)
            for count, record in enumerate(records, 1):
                if schema:
                    check(record, schema, path=path.name, line=count)
                try:
                    writer.write(record)
                except ValueError as exc:  # NaN or infinity: not JSON
                    raise InputError(f"not valid JSON: {exc}", path=path.name,
                                     line_no=count) from exc
            f.flush()
            os.fsync(f.fileno())
        return count

    def finish(self, manifest: dict) -> Path:
        """Add the kind's extra files, manifest.json (counts and statistics recomputed from
        the written records; the tables' files in name order, then the extra files in the
        kind's order) and README.md, then rename the folder to its version; returns the
        version folder."""
        files = data_files(self.staging) if self.staging.is_dir() else []
        if not files:
            raise ArtifactError("no records were written", path=str(self.target))
        kind = self.kind
        names = {"artifact": self.artifact, "dataset": self.dataset, "llm": self.llm,
                 "version": self.version}
        shapes = {table: Shape() for table in (DATA, *kind.tables)}

        def read(table: str) -> Iterator[dict]:
            for file in data_files(self.staging, table):
                for _, record in read_jsonl(file):
                    yield record

        # one pass over each table: the data's statistics and count, the others' counts, and
        # the keys every table's records hold (for its features)
        data = _Counted(read(DATA), shapes[DATA])
        stats = kind.statistics(data)
        records = data.drain()
        counts = {table: _Counted(read(table), shapes[table]).drain() for table in kind.tables}

        attached = kind.attachments(read)
        for name, content in attached.items():
            _write_file(self.staging / name, content)
        shutil.rmtree(self.staging / _LABELLED, ignore_errors=True)
        shutil.rmtree(self.staging / _LEFT_OUT, ignore_errors=True)
        listed = [*sorted(p for p in self.staging.iterdir() if table_of(p.name)),
                  *(self.staging / name for name in attached)]
        final = build_manifest({**manifest, "counts": {**manifest.get("counts", {}), **counts}},
                               **names, records=records,
                               files={f.name: file_sha256(f) for f in listed}, stats=stats)
        typed = {table: features(table_schema(self.artifact, table), shape)
                 for table, shape in shapes.items() if data_files(self.staging, table)}
        _write_file(self.staging / CARD, render_card(final, kind.metadata,
                                                      kind.card_context(final), typed))
        final["card_sha256"] = file_sha256(self.staging / CARD)  # push checks the card too
        _write_file(self.staging / MANIFEST, json.dumps(final, indent=2, ensure_ascii=False) + "\n")
        _fsync(self.staging)
        if self.target.exists():
            raise _exists(self.target, passed=self._passed)
        os.rename(self.staging, self.target)
        (self.target / PLAN).unlink(missing_ok=True)
        # while locked: a build that waited finds it gone (or one starting swept it already)
        (self.target / OWNER).unlink(missing_ok=True)
        self._lock.close()
        _fsync(self.target.parent)
        return self.target

    def close(self) -> None:
        """Give up the folder's lock, the folder kept for a later build to resume (as a
        killed build's process gives it up); `finish` and `discard` close it themselves."""
        self._lock.close()

    def discard(self) -> None:
        """Remove the unfinished folder and the empty folders above it."""
        shutil.rmtree(self.staging, ignore_errors=True)
        self._lock.close()
        for folder in (self.target.parent, *self.target.parent.parents[:2]):
            try:
                folder.rmdir()
            except OSError:
                break


def write_artifact(records: Iterable[dict], *, out: str | Path, kind: type[ArtifactKind],
                   dataset: str, llm: str, version: str | None = None, manifest: dict) -> Path:
    """Write `records` as one version folder of `kind` in one shard and return it; on any
    failure (Ctrl-C included) nothing is left. `records` may be a generator: it is streamed.

    The manifest is checked before the records are consumed; statistics come from the kind's
    `statistics` over the written records.
    """
    writer = VersionWriter(out, kind=kind, dataset=dataset, llm=llm, version=version,
                           build_id=uuid.uuid4().hex)
    check_caller_manifest(manifest, artifact=kind.name, dataset=dataset, llm=llm,
                          version=writer.version)
    try:
        writer.write_shard(0, records)
        return writer.finish(manifest)
    except BaseException:
        writer.discard()
        raise


def check_caller_manifest(manifest: dict, *, artifact: str, dataset: str, llm: str,
                          version: str) -> None:
    """InputError for a caller manifest the writer would refuse, before any work."""
    build_manifest(manifest, artifact=artifact, dataset=dataset, llm=llm, version=version,
                   records=0, files={data_file(0): "0" * 64}, stats={})


def artifact_dir(
    out: str | Path, *, kind: type[ArtifactKind], dataset: str, llm: str,
    version: str | None = None
) -> Path:
    """The version folder of `kind` a write would create; raises before any work if it cannot.

    UnknownNameError for a kind without a card template or schema, InputError for a name
    that cannot be one folder or whose Hub tag git refuses, ArtifactError if the version exists. `version` None -> the next integer not taken
    by a version or an unfinished build; a leading "v" before a digit is dropped ("v2" and
    "2" both mean v2/).
    """
    card_path(kind.name)
    schema_path(kind.name)
    for field, value in (("dataset", dataset), ("llm", llm)):
        _check_segment(field, value)
    parent = Path(out) / kind.name / dataset / llm
    if version is None:
        version = str(_next_version(parent))
    version = re.sub(r"^v(?=\d)", "", str(version))
    _check_segment("version", version)
    problem = tag_problem(version_tag(kind.name, dataset, llm, version))
    if problem:  # a folder push could never publish
        if tag_problem(version_tag(kind.name, dataset, llm, "1")) is None:
            raise InputError(problem, field_name="version", hint="pass another --version")
        raise InputError(problem, hint="name the dataset or the LLM otherwise")
    target = parent / f"v{version}"
    if target.exists():
        raise _exists(target)
    return target


class _Counted:
    """`records`, read once: each is counted and taken into `shape` as it goes by."""

    def __init__(self, records: Iterable[dict], shape: Shape) -> None:
        self.records, self.shape, self.count = iter(records), shape, 0

    def __iter__(self) -> Iterator[dict]:
        for record in self.records:
            self.count += 1
            self.shape.add(record)
            yield record

    def drain(self) -> int:
        """Read what is left; how many records there were."""
        for _ in self:
            pass
        return self.count


def _indices(folder: Path, pattern: str) -> set[int]:
    if not folder.is_dir():
        return set()
    return {int(m.group(1)) for p in folder.iterdir() if (m := re.fullmatch(pattern, p.name))}


def _write_file(path: Path, content: str | bytes) -> None:
    text = isinstance(content, str)
    with path.open("w" if text else "wb", encoding="utf-8" if text else None) as f:
        f.write(content)
        f.flush()
        os.fsync(f.fileno())


def _fsync(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _next_version(parent: Path) -> int:
    """One more than every integer version, finished or being written."""
    if not parent.is_dir():
        return 1
    taken = [int(m["version"]) for p in parent.iterdir()
             if (m := re.fullmatch(r"v(?P<version>\d+)", p.name) or PARTIAL.fullmatch(p.name))
             and m["version"].isdigit()]
    return max(taken, default=0) + 1


def _check_segment(field: str, value: str) -> None:
    pattern = load_schema("manifest")["$defs"]["segment"]["pattern"]
    if not isinstance(value, str) or not re.fullmatch(pattern, value):
        raise InputError(f"{value!r} cannot be a folder name: use letters, digits, '.', '_', '+', '-'",
                         field_name=field)


def _exists(target: Path, passed: bool = True) -> ArtifactError:
    """The error of a version folder that exists; its hint names --version only where one
    was passed (`passed`), else the run that writes the next version."""
    then = f"v{_next_version(target.parent)}"
    return ArtifactError(
        "this version exists already", path=str(target),
        hint=(f"versions are never overwritten: pass another --version, or none to write {then}"
              if passed else f"versions are never overwritten: run again to write {then}"),
    )
