"""The staging folder of a version being written (`.v<N>.<build id>.partial`): who writes
it, the lock that keeps a second identical build out of it, and the ones left behind.

Its writer holds an exclusive flock on the folder's `.writer.json` (which names its process)
while it runs: the system releases a dead process's lock, so the next build with the same
settings takes a killed one's folder over, while one started beside a live build is refused
in one line naming that build's process.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
from pathlib import Path
from typing import IO

from labeler.errors import ArtifactError
from labeler.progress import info

#: an unfinished version's folder: `.v<version>.<build id: 32 hex digits>.partial`
PARTIAL = re.compile(r"\.v(?P<version>.+)\.(?P<build>[0-9a-f]{32})\.partial")
#: in a partial version: who writes it ({"pid", "host"}), to tell an abandoned one; flock-ed
#: by its writer while it runs, so two identical builds never write one folder at once
OWNER = ".writer.json"
#: in a partial version: its shard plan, so that a resumed build cuts the same shards
PLAN = ".shards.json"


def abandoned_partials(root: Path) -> list[tuple[Path, str]]:
    """Unfinished version folders under `root` whose writer is gone, each with a line saying
    why (its process no longer runs on this machine, or it names no writer) and what to do:
    a build with the same settings resumes one; nothing else ever finishes it."""
    found = []
    for folder in sorted(root.rglob(".v*.partial")) if root.is_dir() else []:
        if not (folder.is_dir() and PARTIAL.fullmatch(folder.name)):
            continue
        try:
            owner = json.loads((folder / OWNER).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            found.append((folder, "it names no writer"))
            continue
        if owner.get("host") == socket.gethostname() and not _running(owner.get("pid")):
            found.append((folder, f"its writer, process {owner.get('pid')}, has ended"))
    return [(folder, (f"an unfinished build whose writer is gone ({why}): rerun its command to "
                     "resume it, or delete the folder")) for folder, why in found]


def _running(pid: object) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def sweep_sealed(parent: Path) -> None:
    """Remove the writer's own files (`PLAN`, `OWNER`) from the finished versions in `parent`:
    a writer killed between its folder's final rename and their removal leaves them there."""
    for folder in parent.glob("v*") if parent.is_dir() else ():
        for name in (PLAN, OWNER):
            if (folder / name).is_file():
                info(f"{folder}: removing {name}, left by a build killed as it finished")
                (folder / name).unlink(missing_ok=True)


def partial_of(parent: Path, build_id: str, version: str | None) -> str | None:
    """The version of an unfinished build with `build_id` under `parent`, if there is one.
    One whose version exists (left by a build that lost a race to an identical one, before
    builds locked their folders) is removed: nothing could ever finish it."""
    if not parent.is_dir():
        return None
    for p in sorted(parent.iterdir()):
        m = PARTIAL.fullmatch(p.name)
        if not (m and m["build"] == build_id and version in (None, m["version"])):
            continue
        if not (parent / f"v{m['version']}").exists():
            return m["version"]
        lock = hold(p)  # where a build still runs in it, that is said
        if lock is not None:
            info(f"{p}: removing this unfinished copy of v{m['version']}, which exists")
            shutil.rmtree(p)
            lock.close()
    return None


def hold(staging: Path) -> IO | None:
    """The staging folder (created if missing) locked for this process: its `OWNER` file,
    open, flock-ed and naming this process; None where the folder was renamed or removed
    meanwhile (its build finished). ArtifactError naming the holder where another live
    process holds it; the system releases a dead process's lock, so the next build takes a
    killed one's folder over."""
    import fcntl  # POSIX, as labeler.paths.locked

    staging.mkdir(parents=True, exist_ok=True)
    try:
        handle = (staging / OWNER).open("a+", encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        try:
            owner = json.loads(handle.read())
            holder = f"process {owner['pid']} on {owner['host']}"
        except (ValueError, KeyError, TypeError):
            holder = "a process"
        handle.close()
        raise ArtifactError(f"another build ({holder}) is writing this version now",
                            path=str(staging), hint="wait for it to end: the same command "
                            "then finds its version written") from None
    try:
        same = os.stat(staging / OWNER).st_ino == os.fstat(handle.fileno()).st_ino
    except FileNotFoundError:
        same = False
    if not same:  # the folder was finished (renamed) while this waited for its lock
        handle.close()
        return None
    handle.seek(0)
    handle.truncate()
    handle.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname()}))
    handle.flush()
    return handle
