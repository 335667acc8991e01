"""A package's entry points made visible as pip installing it would make them: a dist-info
folder that importlib.metadata finds on sys.path (how a test adds a plugin method or backend).
"""

from __future__ import annotations

from pathlib import Path


def install(site: Path, project: dict, monkeypatch) -> None:
    """A dist-info folder in `site` holding the pyproject `project`'s name, version and
    entry points ({group: {name: "module:attribute"}}), `site` on sys.path for the test."""
    info = site / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\n"
                                   f"Version: {project['version']}\n")
    (info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{name} = {value}\n" for name, value in points.items())
        for group, points in project["entry-points"].items()))
    monkeypatch.syspath_prepend(str(site))
