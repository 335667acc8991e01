"""write_artifact: folder layout, manifest, card, versions, and all-or-nothing writes."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import stat

import pytest
from huggingface_hub import DatasetCard

from labeler import __version__
from labeler.artifacts import load_artifact
from labeler.errors import ArtifactError, InputError, UnknownNameError
from labeler.tasks import load_kind
from labeler.tasks.utility import UtilityTask


def _tree(root):
    """Every path under root (hidden temp folders included), relative, as strings."""
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*")) if root.exists() else []


def test_writes_the_version_folder_with_data_manifest_and_card(write, records, manifest, tmp_path):
    path = write(iter(records))  # a generator, as a build streams its records

    assert path == tmp_path / "out" / "utility" / "nq-sample" / "smollm2-135m" / "v1"
    assert sorted(p.name for p in path.iterdir()) == ["README.md", "data-00000.jsonl", "manifest.json"]
    lines = (path / "data-00000.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == records
    assert "Röntgen" in lines[0]  # UTF-8, not \u escapes

    written = json.loads((path / "manifest.json").read_text(encoding="utf-8"))
    data_sha = hashlib.sha256((path / "data-00000.jsonl").read_bytes()).hexdigest()
    assert written["files"] == {"data-00000.jsonl": data_sha}
    assert written["counts"] == {"records": 3}
    assert (written["tool_version"], written["artifact"], written["dataset"], written["llm"],
            written["version"]) == (__version__, "utility", "nq-sample", "smollm2-135m", "1")
    for name, text in manifest["prompt_templates"].items():
        expected = hashlib.sha256(text.encode("utf-8")).hexdigest()
        assert written["prompt_templates"][name] == {"sha256": expected, "text": text}
    assert written["pool"] == "hgp" and written["sampling"] == manifest["sampling"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", written["created_at"])
    assert written["stats"]["queries"] == 3


def test_card_has_hub_metadata_and_the_build_statistics(write, records):
    path = write(records)
    card = DatasetCard.load(path / "README.md")

    assert card.data.license == "cc-by-sa-3.0"  # NQ-derived default
    assert card.data.size_categories == ["n<1K"]
    [config] = card.data.configs  # its description: tests/artifacts/test_card.py
    assert (config["config_name"], config["data_files"]) == ("default", "data-*.jsonl")
    assert "question-answering" in card.data.task_categories
    assert card.data.pretty_name == "LLM-specific gold utilitarian passages: nq-sample × smollm2-135m"
    text = card.text
    assert "| queries | 3 |" in text
    assert "| known queries (closed-book answer correct) | 0.0% |" in text
    assert "| gold utilitarian passages per query (mean) | 0.67 |" in text
    assert "| human gold passages that are gold utilitarian | 66.7% |" in text
    assert "| no passage (closed book) | 0.0% |" in text
    # from the records' rag answers: Nobel and Deadpool right with their gold, Nigeria wrong
    assert "| only the gold utilitarian passages | 66.7% |" in text
    assert "or your internal knowledge  with one or few words" in text  # the exact prompt


def test_licence_comes_from_the_manifest_when_given(write, records, manifest):
    path = write(records, manifest={**manifest, "license": "cc-by-sa-4.0"}, dataset="hotpotqa")
    assert DatasetCard.load(path / "README.md").data.license == "cc-by-sa-4.0"


def test_the_folder_loads_with_datasets_through_its_card(write, records):
    from datasets import load_dataset

    loaded = load_dataset(str(write(records)), split="train")
    assert loaded["qid"] == [r["qid"] for r in records]
    assert loaded[0]["candidates"][0]["pid"] == "nq-oracle:64aaafc597c5"


def test_versions_count_up_and_an_existing_one_is_never_overwritten(write, records, tmp_path):
    first, second = write(records), write(records)
    assert (first.name, second.name) == ("v1", "v2")
    assert write(records, version="v7").name == "v7"  # "v7" and "7" mean the same folder
    assert write(records).name == "v8"
    before = (first / "data-00000.jsonl").read_bytes()

    consumed = []

    def lazy():
        for record in records:
            consumed.append(record["qid"])
            yield record

    with pytest.raises(ArtifactError) as error:
        write(lazy(), version="1")
    assert str(error.value) == f"{first}: this version exists already"
    assert "pass another --version, or none to write v9" in error.value.line()
    assert consumed == []  # refused before any record was produced
    assert (first / "data-00000.jsonl").read_bytes() == before


def test_invalid_record_names_record_and_field_and_leaves_nothing(write, records, tmp_path):
    bad = copy.deepcopy(records)
    del bad[2]["candidates"][0]["pid"]

    with pytest.raises(InputError) as error:
        write(bad)
    assert str(error.value) == \
        "data-00000.jsonl:3 field 'candidates[0].pid': 'pid' is a required property"
    assert _tree(tmp_path / "out") == []  # neither the version nor its temp nor empty parents


def test_invalid_record_keeps_existing_versions_and_removes_only_its_temp(write, records, tmp_path):
    write(records)
    typo = copy.deepcopy(records)
    typo[1]["candidates"][0]["utilty"] = 1

    with pytest.raises(InputError, match=r"data-00000\.jsonl:2 field 'candidates\[0\]\.utilty': Additional"):
        write(typo)
    llm_dir = tmp_path / "out" / "utility" / "nq-sample" / "smollm2-135m"
    assert [p.name for p in llm_dir.iterdir()] == ["v1"]


def test_interrupt_mid_write_leaves_nothing(write, records, tmp_path):
    def interrupted():
        yield records[0]
        yield records[1]
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write(interrupted())
    assert _tree(tmp_path / "out") == []


def test_bad_manifest_fails_before_records_are_consumed(write, records, manifest):
    incomplete = {k: v for k, v in manifest.items() if k != "model_id"}
    with pytest.raises(InputError) as error:
        write(_exploding(), manifest=incomplete)
    assert str(error.value) == "manifest.json field 'model_id': 'model_id' is a required property"

    with pytest.raises(InputError, match="'version' is set by the writer"):
        write(_exploding(), manifest={**manifest, "version": "3"})


def test_names_that_cannot_be_folders_or_unknown_artifacts_are_refused(write, tmp_path):
    with pytest.raises(InputError) as error:
        write(_exploding(), llm="meta-llama/Llama-3.1-8B-Instruct")
    assert str(error.value).startswith(
        "field 'llm': 'meta-llama/Llama-3.1-8B-Instruct' cannot be a folder name")

    with pytest.raises(UnknownNameError, match="unknown artifact 'utilty'. Did you mean 'utility'"):
        load_kind("utilty")


@pytest.mark.parametrize("version", ["a..b", "1.lock", "1."])
def test_a_version_no_hub_tag_can_name_is_refused_before_any_record(write, version, tmp_path):
    with pytest.raises(InputError) as error:
        write(_exploding(), version=version)
    assert str(error.value) == (
        f"field 'version': 'utility.nq-sample.smollm2-135m.v{version}' cannot be a Hub tag (a "
        "git ref name: no '..', no leading '-' or '.', no trailing '.' or '.lock')")
    assert error.value.hint == "pass another --version"
    assert _tree(tmp_path / "out") == []


def test_non_json_numbers_are_refused(write, records, tmp_path):
    bad = copy.deepcopy(records)
    bad[0]["candidates"][0]["loglikelihood"] = float("nan")
    with pytest.raises(InputError, match="data-00000.jsonl:1: not valid JSON: Out of range float"):
        write(bad)
    assert _tree(tmp_path / "out") == []


def test_round_trip_load(write, records):
    path = write(records)
    loaded = load_artifact(path)
    assert loaded.records == records
    assert loaded.manifest["files"]["data-00000.jsonl"]
    assert load_artifact(path / "data-00000.jsonl").records == records


def _exploding():
    """A record source that must never be read."""
    raise AssertionError("records consumed")
    yield  # pragma: no cover


def test_shards_resume_and_load_in_file_name_order(records, manifest, tmp_path):
    """A writer that stops after shard 0 (a killed build) and one made again with the same
    build id: the second finds shard 0 and the shard plan the first recorded, writes shard 1,
    and the version reads in order."""
    from datasets import load_dataset

    from labeler.artifacts.writer import VersionWriter

    names = {"kind": UtilityTask, "dataset": "nq-sample", "llm": "smollm2-135m"}
    build_id = "0123456789abcdef0123456789abcdef"
    first = VersionWriter(tmp_path / "out", **names, build_id=build_id)
    assert first.plan([2, 1]) == [2, 1]
    assert first.write_shard(0, records[:2]) == 2
    assert not first.target.exists()  # nothing visible until every shard is written

    first._lock.close()  # its process killed: the system releases the folder's lock
    again = VersionWriter(tmp_path / "out", **names, build_id=build_id)
    assert (again.staging, again.version, again.completed()) == (first.staging, "1", {0})
    assert again.plan([1, 1, 1]) == [2, 1]  # e.g. resumed on more workers: the same shards
    other = VersionWriter(tmp_path / "out", **names, build_id="f" * 32)
    assert other.version == "2"  # another build does not take the unfinished v1
    again.write_shard(1, records[2:])
    path = again.finish(manifest)

    assert sorted(p.name for p in path.iterdir()) == ["README.md", "data-00000.jsonl",
                                                       "data-00001.jsonl", "manifest.json"]
    assert not again.staging.exists()
    assert load_artifact(path).records == records
    assert load_dataset(str(path), split="train")["qid"] == [r["qid"] for r in records]
    assert json.loads((path / "manifest.json").read_text())["counts"] == {"records": 3}


def test_writer_files_left_in_a_sealed_version_are_removed_by_the_next_run(write, tmp_path):
    """A build killed right after its folder's final rename leaves `.shards.json` and
    `.writer.json` in the sealed v1 (issue 49); the next writer in the same place removes them
    and leaves the version's own files."""
    from labeler.artifacts.writer import VersionWriter

    v1 = write()
    files = sorted(p.name for p in v1.iterdir())
    (v1 / ".shards.json").write_text("[3]")
    (v1 / ".writer.json").write_text('{"pid": 1, "host": "h"}')

    VersionWriter(tmp_path / "out", kind=UtilityTask, dataset="nq-sample", llm="smollm2-135m",
                  build_id="e" * 32).close()

    assert sorted(p.name for p in v1.iterdir()) == files


@pytest.mark.parametrize(("umask", "file_mode", "folder_mode"),
                         [(0o022, 0o644, 0o755), (0o027, 0o640, 0o750)])
def test_a_version_is_readable_as_the_umask_allows(write, records, umask, file_mode, folder_mode):
    """Colleagues on shared storage read what a build wrote: every file and folder honours the
    umask (mkstemp alone would leave the data files 0600)."""
    before = os.umask(umask)
    try:
        folder = write(records)
    finally:
        os.umask(before)
    assert {p.name: stat.S_IMODE(p.stat().st_mode) for p in folder.iterdir()} == \
        dict.fromkeys((p.name for p in folder.iterdir()), file_mode)
    assert stat.S_IMODE(folder.stat().st_mode) == folder_mode


#: a writer in another process: writes shard 0 of nq-sample x smollm2-135m under build id
#: argv[2], says "written", then on a line "finish" finishes it, on "die" is killed
_WRITER = """
import json, os, sys
from labeler.artifacts.writer import VersionWriter
from labeler.tasks.utility import UtilityTask
out, build, records, manifest = sys.argv[1], sys.argv[2], *map(json.loads, sys.argv[3:5])
writer = VersionWriter(out, kind=UtilityTask, dataset="nq-sample", llm="smollm2-135m",
                       build_id=build)
writer.write_shard(0, records)
print("written", flush=True)
if sys.stdin.readline().strip() == "die":
    os._exit(9)
print(writer.finish(manifest).name, flush=True)
"""


def _writer(out, build, records, manifest):
    import subprocess
    import sys

    process = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(out), build, json.dumps(records[:2]),
         json.dumps(manifest)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline() == "written\n"
    return process


def test_an_identical_build_is_refused_while_one_writes_then_runs(records, manifest, tmp_path):
    from labeler.artifacts.writer import VersionWriter

    names = {"kind": UtilityTask, "dataset": "nq-sample", "llm": "smollm2-135m"}
    build = "0123456789abcdef0123456789abcdef"
    first = _writer(tmp_path / "out", build, records, manifest)
    with pytest.raises(ArtifactError) as error:
        VersionWriter(tmp_path / "out", **names, build_id=build)
    staging = tmp_path / "out" / "utility" / "nq-sample" / "smollm2-135m" / f".v1.{build}.partial"
    assert str(error.value) == (f"{staging}: another build (process {first.pid} on "
                                f"{os.uname().nodename}) is writing this version now")
    assert error.value.hint == ("wait for it to end: the same command then finds its version "
                                "written")
    assert first.communicate("finish\n")[0] == "v1\n" and first.returncode == 0

    after = VersionWriter(tmp_path / "out", **names, build_id=build)  # the same command again
    assert after.version == "2" and after.completed() == set()
    after.write_shard(0, records)
    assert after.finish(manifest).name == "v2"
    llm_dir = staging.parent
    assert sorted(p.name for p in llm_dir.iterdir()) == ["v1", "v2"]
    assert sorted(p.name for p in (llm_dir / "v1").iterdir()) == [
        "README.md", "data-00000.jsonl", "manifest.json"]


def test_a_killed_writers_folder_is_taken_over_and_a_finished_ones_copy_removed(
        records, manifest, tmp_path, capsys):
    from labeler.artifacts.writer import VersionWriter

    names = {"kind": UtilityTask, "dataset": "nq-sample", "llm": "smollm2-135m"}
    build = "0123456789abcdef0123456789abcdef"
    killed = _writer(tmp_path / "out", build, records, manifest)
    killed.communicate("die\n")
    assert killed.returncode == 9
    resumed = VersionWriter(tmp_path / "out", **names, build_id=build)
    assert (resumed.version, resumed.completed()) == ("1", {0})  # its shard kept
    resumed.write_shard(1, records[2:])
    v1 = resumed.finish(manifest)

    # a copy of v1's folder left unfinished (as two builds racing left one before builds
    # locked their folders): the same command removes it and writes v2, not "v1 exists"
    left = v1.parent / f".v1.{build}.partial"
    left.mkdir()
    (left / "data-00000.jsonl").write_text((v1 / "data-00000.jsonl").read_text())
    again = VersionWriter(tmp_path / "out", **names, build_id=build)
    assert again.version == "2" and not left.exists()
    assert f"{left}: removing this unfinished copy of v1, which exists" in "".join(
        capsys.readouterr().err.splitlines())  # rich wraps it at 80 columns


def test_a_version_taken_meanwhile_names_the_run_not_a_version_not_passed(
        write, records, manifest, tmp_path):
    from labeler.artifacts.writer import VersionWriter

    writer = VersionWriter(tmp_path / "out", kind=UtilityTask, dataset="nq-sample",
                           llm="smollm2-135m", build_id="a" * 32)
    writer.write_shard(0, records)
    write(records, version="1")  # another build that asked for v1 by name finishes first
    with pytest.raises(ArtifactError) as error:
        writer.finish(manifest)
    assert error.value.hint == "versions are never overwritten: run again to write v2"
