"""schemas/ and cards/ ship inside a built wheel, where labeler.resources finds them; the console
script's exit code follows `labeler validate`."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).parents[1]


def test_wheel_carries_schemas_and_cards_and_resources_find_them(tmp_path):
    src = tmp_path / "src"  # a copy, so the build leaves nothing in the checkout
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for name in ("labeler", "schemas", "cards"):
        shutil.copytree(ROOT / name, src / name, symlinks=True,
                        ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", str(src), "-w", str(tmp_path / "dist")], check=True, capture_output=True)
    wheel = next((tmp_path / "dist").glob("labeler-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for kind, suffix in (("schemas", ".schema.json"), ("cards", ".md.j2")):
        shipped = {f"labeler/{kind}/{p.name}" for p in (ROOT / kind).glob(f"*{suffix}")}
        assert shipped and shipped <= names

    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = (f"import sys; sys.path.insert(0, {str(site)!r}); "
            "from labeler.resources import card_path, load_schema, schema_path; "
            "load_schema('utility'); print(schema_path('utility')); print(card_path('utility'))")
    # -S: no site-packages, so the editable install of this checkout cannot answer instead
    found = subprocess.run([sys.executable, "-S", "-c", code], check=True, capture_output=True,
                           text=True).stdout.split()
    assert found == [str(site / "labeler" / "schemas" / "utility.schema.json"),
                     str(site / "labeler" / "cards" / "utility.md.j2")]
    assert not Path(found[0]).is_symlink()


def test_console_entry_point_exits_1_on_problems(tmp_path):
    file = tmp_path / "utility.jsonl"
    file.write_text('{"qid": "nq-open-dev-oracle-0"}\n', encoding="utf-8")
    run = subprocess.run([sys.executable, "-c", "from labeler.cli import main; main()",
                          "validate", str(file)], capture_output=True, text=True, check=False)
    assert run.returncode == 1
    assert run.stdout.startswith(f"{file}:1: field 'answers': 'answers' is a required property")

