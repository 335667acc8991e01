"""The real local Ray cluster the executor tests run on."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def ray_cluster():
    """A real Ray cluster on this machine, 2 CPUs; its address.

    `ray start --head --block` in its own process group; stopping it stops every process it
    started (never `ray stop`, which would stop other users' Ray too). The workers import this
    checkout's labeler (PYTHONPATH) and see the test session's environment.
    """
    pytest.importorskip("ray")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # no token: ray start would take the user's ~/.ray/auth_token; the cluster lives for
    # this module only, and the drivers here say the same mode
    auth = {"RAY_AUTH_MODE": "disabled"}
    temp = tempfile.mkdtemp(prefix="ray-", dir="/tmp")  # short: Ray's socket paths must fit
    env = {**os.environ, **auth, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    ray = Path(sys.executable).with_name("ray")
    head = subprocess.Popen(
        [str(ray), "start", "--head", "--block", "--num-cpus", "2", "--port", str(port),
         "--include-dashboard", "false", "--disable-usage-stats", "--temp-dir", temp],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    with pytest.MonkeyPatch.context() as patch:
        for name, value in {**auth, "PYTHONPATH": env["PYTHONPATH"]}.items():
            patch.setenv(name, value)  # the drivers (this process and its children) log in
        try:
            _wait_for(port, head, temp)
            yield f"127.0.0.1:{port}"
        finally:
            head.send_signal(signal.SIGTERM)
            try:
                head.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(head.pid, signal.SIGKILL)
                head.wait()
            shutil.rmtree(temp, ignore_errors=True)


def _wait_for(port: int, head: subprocess.Popen, temp: str) -> None:
    """Until the head has written its address on `port` into its temp folder (once its GCS is
    up): a listener on the port alone may be another process's, which took the port between
    the probe and the head's start (ray start then ends, and this fails, rather than hang)."""
    address = Path(temp) / "ray_current_cluster"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert head.poll() is None, "ray start ended"
        if address.is_file() and address.read_text().strip().endswith(f":{port}"):
            return
        time.sleep(0.5)
    raise AssertionError("the Ray head did not start within 2 minutes")
