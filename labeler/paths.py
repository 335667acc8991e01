"""Where labeler keeps its per-user state (the LLM call cache, converted models)."""

from __future__ import annotations

import errno
import hashlib
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from labeler import settings
from labeler.errors import StorageError, short_write


def cache_root(cache_dir: str | Path | None = None) -> Path:
    """The cache folder: `cache_dir` (--cache-dir), else `settings.cache_dir()`
    ($LABELER_CACHE_DIR, else $XDG_CACHE_HOME/labeler, else ~/.cache/labeler). Created if
    missing."""
    root = settings.cache_dir() if cache_dir is None else Path(cache_dir).expanduser()
    root.mkdir(parents=True, exist_ok=True)
    return root


#: what a disk that cannot take a file says: full, over quota, read-only, forbidden, too large
STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM,
                            errno.EFBIG})

def refused(error: OSError) -> bool:
    """Whether `error` is a disk that cannot take a write (STORAGE_ERRNOS, or numpy's short
    write: `short_write`), not a bug."""
    return error.errno in STORAGE_ERRNOS or short_write(error) is not None


#: bytes `check_writable` writes and removes again: one block
PROBE_BYTES = 4096


def umask_mode(mode: int) -> int:
    """`mode` as this process's umask leaves it, as `open` and `mkdir` apply it: 0o666 gives
    0644 and 0o777 gives 0755 under the usual 022."""
    try:  # Linux says it without changing it (os.umask can only read it by setting it)
        with open("/proc/self/status", encoding="ascii") as status:
            mask = next(int(line.split()[1], 8) for line in status if line.startswith("Umask:"))
    except (OSError, StopIteration, ValueError):
        mask = os.umask(0o022)
        os.umask(mask)
    return mode & ~mask


def share_tree(folder: Path) -> None:
    """Give `folder` and everything under it the modes the umask allows (0755 folders, 0644
    files under the usual 022): mkdtemp makes folders 0700 and safetensors writes its files
    0600, which would hide a model folder from colleagues on shared storage."""
    folder.chmod(umask_mode(0o777))
    for path in folder.rglob("*"):
        path.chmod(umask_mode(0o777 if path.is_dir() else 0o666))


@contextmanager
def atomic_file(path: str | Path, mode: str = "w") -> Iterator[IO]:
    """Open a temp file beside `path` for writing; rename it into place only if the block
    succeeds, so readers never see a half-written file (it is removed on any failure).

    A place that cannot be written (a full or read-only disk, a missing or forbidden folder)
    raises StorageError naming `path`."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        os.fchmod(fd, umask_mode(0o666))  # mkstemp's 0600 would hide it from colleagues
    except OSError as error:
        raise _unwritable(error, path, path.parent) from error
    try:
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as f:
            yield f
        os.replace(tmp, path)
    except OSError as error:
        Path(tmp).unlink(missing_ok=True)
        if error.errno not in STORAGE_ERRNOS:
            raise
        raise StorageError.from_os(error, str(path)) from error
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextmanager
def locked(path: str | Path) -> Iterator[None]:
    """Hold an exclusive lock on the file `path` (created if missing) for the block: a second
    process asking for it waits until the first's block ends, or the first dies (the system
    releases a dead process's lock, so a killed holder never blocks the next)."""
    import fcntl  # POSIX; imported here so that importing labeler.paths stays portable

    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def check_writable(folder: str | Path) -> None:
    """StorageError unless a PROBE_BYTES file can be written, synced and removed in `folder`, or
    in the nearest folder above it that exists (where the missing ones would be made): a
    read-only, forbidden or full place fails before any work. Nothing is left behind."""
    folder = Path(folder)
    base = _nearest(folder)
    try:
        fd, probe = tempfile.mkstemp(dir=base, prefix=".labeler-probe.", suffix=".tmp")
    except OSError as error:
        raise _unwritable(error, folder, folder) from error
    try:
        os.write(fd, bytes(PROBE_BYTES))
        os.fsync(fd)
    except OSError as error:
        raise StorageError.from_os(error, str(folder)) from error
    finally:
        os.close(fd)
        os.unlink(probe)


def check_free(folder: str | Path, needed: int, what: str) -> None:
    """StorageError naming `folder` unless its disk (that of the nearest folder above it that
    exists) has `needed` bytes free for `what` ("the converted model"): a write that cannot
    fit fails before it starts, not when the disk is full, minutes in."""
    import shutil

    folder = Path(folder)
    free = shutil.disk_usage(_nearest(folder)).free
    if free < needed:
        raise StorageError(str(folder), f"{what} needs about {_size(needed)} and the disk has "
                           f"{_size(free)} free",
                           "free some space, or point --cache-dir (or $LABELER_CACHE_DIR) at a "
                           "disk with room, then run the same command again")


def _size(count: int) -> str:
    """A byte count as people read it: 512 B, 3.2 MiB, 1.5 GiB."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} B"


def _nearest(folder: Path) -> Path:
    """`folder`, or the nearest folder above it that exists (a file where one is in the way)."""
    return next((p for p in (folder, *folder.absolute().parents) if p.exists()), Path("/"))


def _unwritable(error: OSError, path: Path, folder: Path) -> StorageError:
    """The StorageError of `error` when writing `path` in `folder`: a file in the way of the
    folder is named as such (the system says "File exists" or "Not a directory")."""
    base = _nearest(folder)
    if not base.is_dir():
        return StorageError(str(path), f"{base} is a file, not a folder")
    return StorageError.from_os(error, str(path))


def published_file(path: str | Path) -> dict | str:
    """A local file as a published manifest records it: {name, sha256}, never its path; a
    folder by its name alone."""
    path = Path(path).expanduser()
    return {"name": path.name, "sha256": file_sha256(path)} if path.is_file() else path.name


def file_label(value) -> str:
    """How a card or a message names a manifest's file: a record's name and short sha256; an
    older manifest's path (or a name) as it is."""
    if isinstance(value, dict) and "name" in value:
        return f"{value['name']} (sha256 {value['sha256'][:12]})" if value.get("sha256") \
            else str(value["name"])
    return str(value)


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()
