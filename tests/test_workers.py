"""make test's pytest-xdist workers (-n 2 --dist loadgroup, support.workers): a file's tests on
one worker, the Ray executor files on one together."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from support.workers import group

ROOT = Path(__file__).resolve().parents[1]


def test_a_test_s_group_is_its_file_or_its_one_worker_folder():
    assert group("tests/test_formats.py::test_x[a::b]") == "tests/test_formats.py"
    assert group("tests/executors/test_ray.py::test_x") == "tests/executors/"
    assert group("tests/executors/test_ray_encode.py::test_y") == "tests/executors/"
    assert group("tests/llm/test_cache.py::test_z") == "tests/llm/test_cache.py"


def test_make_test_runs_each_file_on_one_worker():
    """Two files on two workers: each file's tests all on one (xdist's own loadgroup spread
    them one by one: its groups are lost on pytest 9.2)."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-n", "2",
         "--dist", "loadgroup", "tests/test_formats.py", "tests/executors/test_ray.py",
         "-k", "formats or options_that_do_not_apply"],
        cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "scheduling tests via FileGroups" in done.stdout
    ran = re.findall(r"^\[(gw\d)\] \[ *\d+%\] PASSED ([^:]+)::", done.stdout,
                     re.MULTILINE)
    assert len(ran) == done.stdout.count(" PASSED ") > 3, done.stdout
    workers = {path: {worker for worker, where in ran if where == path} for _, path in ran}
    assert sorted(workers) == ["tests/executors/test_ray.py", "tests/test_formats.py"]
    assert all(len(each) == 1 for each in workers.values()), done.stdout
