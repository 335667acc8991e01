"""load_artifact / verify_artifact: sha256 checks against the manifest, clear errors."""

from __future__ import annotations

import json

import pytest

from labeler.artifacts import load_artifact, verify_artifact
from labeler.errors import ArtifactError, InputError


def test_verify_passes_on_an_untouched_version(write, records):
    path = write(records)
    assert verify_artifact(path)["counts"]["records"] == len(records)


def test_tampered_data_file_is_detected(write, records):
    path = write(records)
    data = path / "data-00000.jsonl"
    data.write_text(data.read_text(encoding="utf-8").replace('"utility": 1', '"utility": 0', 1),
                    encoding="utf-8")

    with pytest.raises(ArtifactError) as error:
        verify_artifact(path)
    assert str(error.value).startswith(f"{data}: sha256 mismatch: manifest.json says ")
    assert "rebuild the artifact or pull it again" in error.value.line()
    with pytest.raises(ArtifactError, match="sha256 mismatch"):
        load_artifact(path)
    with pytest.raises(ArtifactError, match="sha256 mismatch"):
        load_artifact(data)  # the file alone is still checked against its folder's manifest


def test_missing_and_unlisted_data_files_are_named(write, records):
    path = write(records)
    (path / "extra.jsonl").write_text(json.dumps(records[0]) + "\n", encoding="utf-8")
    with pytest.raises(ArtifactError, match=r"extra\.jsonl: file not listed in manifest"):
        verify_artifact(path)

    (path / "extra.jsonl").unlink()
    (path / "data-00000.jsonl").unlink()
    with pytest.raises(ArtifactError, match=r"data-00000\.jsonl: listed in manifest\.json but missing"):
        verify_artifact(path)


def test_folder_without_manifest_is_refused(tmp_path):
    with pytest.raises(ArtifactError) as error:
        verify_artifact(tmp_path)
    assert str(error.value) == f"{tmp_path}: no manifest.json here"


def test_bare_jsonl_loads_and_a_bad_line_is_named(tmp_path, records):
    file = tmp_path / "labels.jsonl"
    file.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    loaded = load_artifact(file)
    assert (loaded.manifest, loaded.records) == (None, records)

    file.write_text(json.dumps(records[0]) + "\n{\"qid\": \n", encoding="utf-8")
    with pytest.raises(InputError) as error:
        load_artifact(file)
    assert str(error.value) == f"{file}:2: invalid JSON: Expecting value (column 9)"


def test_missing_path_is_an_artifact_error(tmp_path):
    with pytest.raises(ArtifactError, match="no such file or folder"):
        load_artifact(tmp_path / "nope")


def test_a_folder_whose_manifest_miscounts_its_records_is_refused(write, records):
    from labeler.artifacts.manifest import MANIFEST

    path = write(records)
    manifest = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
    manifest["counts"]["records"] = 4
    (path / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(ArtifactError, match="counts 4 records but the data files hold 3"):
        load_artifact(path)
