"""A real process killed at a chosen moment, for the tests of resumption."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable


def kill_when(command: list[str], ready: Callable[[], bool], what: str, *,
              within: float = 300) -> int:
    """Start `command` and SIGKILL it once `ready()` is true (or after `within` seconds);
    returns its pid. `what` names it if it ended by itself first, which fails the test."""
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline and process.poll() is None and not ready():
            time.sleep(0.02)
        assert process.poll() is None, f"{what} ended before it was killed"
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        return process.pid
    finally:
        if process.poll() is None:
            process.kill()
