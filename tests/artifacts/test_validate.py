"""`labeler validate` through the CLI, and the utility schema's own rules."""

from __future__ import annotations

import copy
import json

import pytest
from click.testing import CliRunner

from labeler.artifacts import schema_problems
from labeler.cli import cli
from labeler.errors import UnknownNameError
from labeler.workflows.validate import validate_path


def _run(*args):
    return CliRunner().invoke(cli, ["validate", *map(str, args)])


def test_a_written_version_is_valid(write, records):
    path = write(records)
    result = _run(path)
    assert result.exit_code == 0, result.output
    assert "valid: 3 file(s), no problems" in result.output
    assert "data-00000.jsonl" in result.output and "utility" in result.output  # the summary table


def test_a_bad_jsonl_file_gets_line_numbered_problems_and_exit_1(tmp_path, records):
    bad = copy.deepcopy(records)
    del bad[1]["candidates"][0]["pid"]  # line 2: a required field is missing
    bad[2]["pool"] = "top20"  # line 4 (after the broken line 3): not a pool name
    file = tmp_path / "labels.jsonl"
    lines = [json.dumps(bad[0]), json.dumps(bad[1]), '{"qid": "nq-open-dev-oracle-9",',
             json.dumps(bad[2])]
    file.write_text("\n".join(lines) + "\n", encoding="utf-8")

    result = _run(file, "--schema", "utility")

    assert result.exit_code == 1
    problems = result.output.splitlines()[:3]
    assert problems == [
        f"{file}:2: field 'candidates[0].pid': 'pid' is a required property",
        f"{file}:3: invalid JSON: Expecting property name enclosed in double quotes (column 32)",
        f"{file}:4: field 'pool': 'top20' is not one of ['rp', 'hgp', 'mcp']",
    ]
    assert "3 problem(s) in 1 file(s)" in result.output


def test_schema_is_taken_from_the_folder_path_or_asked_for(tmp_path, records):
    inside = tmp_path / "utility" / "labels.jsonl"
    inside.parent.mkdir()
    inside.write_text(json.dumps(records[0]) + "\n", encoding="utf-8")
    assert validate_path(inside) == []

    outside = tmp_path / "labels.jsonl"
    outside.write_text(json.dumps(records[0]) + "\n", encoding="utf-8")
    result = _run(outside)
    assert result.exit_code == 1
    assert result.output.startswith(
        f"{outside}: cannot tell which schema its records follow; pass --schema NAME (one of: ")


def test_unknown_schema_name(tmp_path):
    file = tmp_path / "x.jsonl"
    file.write_text("{}\n", encoding="utf-8")
    result = _run(file, "--schema", "utilty")
    assert result.exit_code == 1
    assert isinstance(result.exception, UnknownNameError)
    assert "unknown schema 'utilty'. Did you mean 'utility'?" in str(result.exception)


def test_a_tampered_folder_reports_sha_count_and_record_problems(write, records):
    path = write(records)
    data = path / "data-00000.jsonl"
    kept = data.read_text(encoding="utf-8").splitlines()[:2]
    kept[1] = kept[1].replace('"known": false', '"known": true')  # then utility_pids must be []
    data.write_text("\n".join(kept) + "\n", encoding="utf-8")
    (path / "README.md").unlink()

    result = _run(path)

    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[0] == "manifest.json: counts.records is 3 but the data files hold 2 lines"
    assert lines[1].startswith("data-00000.jsonl: sha256 mismatch: manifest.json says ")
    assert lines[2:5] == [
        "data-00000.jsonl:2: field 'candidates[0].utility': 0 was expected",
        "data-00000.jsonl:2: field 'utility_pids': ['nq-oracle:fcd918e70be9'] is expected to be empty",
        "README.md: missing (the dataset card)",
    ]


def test_a_folder_of_versions_checks_each(write, records, tmp_path):
    write(records)
    second = write(records)
    (second / "data-00000.jsonl").write_text("not json\n", encoding="utf-8")
    problems = validate_path(tmp_path / "out")
    prefix = "utility/nq-sample/smollm2-135m/v2"
    assert f"{prefix}/data-00000.jsonl:1: invalid JSON: Expecting value (column 1)" in problems
    assert all(p.startswith(prefix) for p in problems)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        # a known query can have no utilitarian passage: both the label and the pid list break
        (lambda r: r.update(known=True), [("candidates[0].utility", "0 was expected"),
                                          ("utility_pids", "is expected to be empty")]),
        (lambda r: r["candidates"][0].update(correct=False),
         [("candidates[0].correct", "True was expected")]),
        (lambda r: r["candidates"][0].update(utility=True),
         [("candidates[0].utility", "True is not one of [0, 1]")]),
        (lambda r: r["candidates"][0].update(rank=0),
         [("candidates[0].rank", "0 is less than the minimum of 1")]),
        (lambda r: r["candidates"][0].update(source="gold"),
         [("candidates[0].source", "'gold' is not one of ['retrieved', 'human']")]),
        (lambda r: r.update(answer=["x"]),
         [("answer", "Additional properties are not allowed ('answer' was unexpected)")]),
    ],
)
def test_utility_schema_catches_inconsistent_records(records, change, expected):
    record = copy.deepcopy(records[0])  # known=false, its gold chunk utilitarian
    change(record)
    found = schema_problems(record, "utility")
    assert [f for f, _ in found] == [f for f, _ in expected]
    assert all(part in message for (_, message), (_, part) in zip(found, expected))


def test_utility_flags_that_contradict_the_records_own_answers_are_named(write, records):
    # schema-consistent flags (known, so no utility) that its wrong closed-book answer denies
    lying = copy.deepcopy(records)
    assert not lying[0]["known"] and lying[0]["utility_pids"]
    lying[0].update(known=True, utility_pids=[])
    for candidate in lying[0]["candidates"]:
        candidate["utility"] = 0
    path = write(lying)

    assert validate_path(path) == [
        "data-00000.jsonl:1: field 'known' is True but its labels and manifest give False"]
    assert validate_path(write(records)) == []


def test_real_records_and_optional_loglikelihood_are_valid(records):
    record = copy.deepcopy(records[0])
    record["candidates"][0]["loglikelihood"] = -3.25
    assert [schema_problems(r, "utility") for r in [*records, record]] == [[]] * 4


def test_statistics_edited_in_the_manifest_or_the_card_are_refused(write, records):
    path = write(records)
    assert validate_path(path) == []
    manifest = json.loads((path / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["stats"]["mean_utilitarian"] == pytest.approx(2 / 3)  # from the records
    manifest["stats"]["mean_utilitarian"] = 0.9
    (path / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    card = (path / "README.md").read_text(encoding="utf-8")
    row = "| queries with at least one gold utilitarian passage | 66.7% |"
    assert row in card
    (path / "README.md").write_text(card.replace(row, row.replace("66.7%", "90.0%")),
                                    encoding="utf-8")

    assert validate_path(path) == [
        "manifest.json: stats.mean_utilitarian is 0.9 but the records give 0.6666666666666666",
        f"README.md: the statistics differ from the records: expected the row '{row}'",
    ]


def test_data_edited_with_its_sha256_updated_still_disagrees_with_the_statistics(write, records):
    import hashlib

    path = write(records)
    data = path / "data-00000.jsonl"
    first, *rest = data.read_text(encoding="utf-8").splitlines()
    record = json.loads(first)
    assert record["rag"]["all"]["correct"] is True
    record["rag"]["all"]["correct"] = False  # still a schema-valid record
    data.write_text("\n".join([json.dumps(record, ensure_ascii=False), *rest]) + "\n",
                    encoding="utf-8")
    manifest = json.loads((path / "manifest.json").read_text(encoding="utf-8"))
    manifest["files"][data.name] = hashlib.sha256(data.read_bytes()).hexdigest()
    (path / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")

    problems = validate_path(path)
    assert problems[0] == ("manifest.json: stats.accuracy_all is 0.6666666666666666 but the "
                           "records give 0.3333333333333333")
    assert problems[1] == ("data-00000.jsonl:1: field 'rag.all.correct' is False but its labels "
                           "and manifest give True")  # its answer is right
    assert problems[2].startswith("README.md: the statistics differ from the records: expected "
                                  "the row '| all candidate passages of the pool together | 33.3% |")


def test_every_file_of_a_version_is_vouched_for_and_an_empty_data_file_is_a_problem(write,
                                                                                    records):
    path = write(records)
    (path / "notes.txt").write_text("added after the build\n", encoding="utf-8")
    (path / "data-00001.jsonl").write_text("", encoding="utf-8")

    result = _run(path)

    assert result.exit_code == 1
    assert result.output.splitlines()[:3] == [
        "data-00001.jsonl: not listed in manifest.json",
        "data-00001.jsonl: holds no records",
        "notes.txt: not listed in manifest.json",
    ]


def _rewrite(path, name, edit):
    """Edit line records of `name` in version folder `path` with `edit(records)`, its sha256
    updated in the manifest as a careful tamperer would."""
    import hashlib

    file = path / name
    records = [json.loads(line) for line in file.read_text(encoding="utf-8").splitlines()]
    edit(records)
    file.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
                    encoding="utf-8")
    manifest = json.loads((path / "manifest.json").read_text(encoding="utf-8"))
    manifest["files"][name] = hashlib.sha256(file.read_bytes()).hexdigest()
    (path / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")


def test_seer_pairs_and_ranks_are_derived_again_and_an_edit_is_refused(tmp_path):
    """The real SEER artifact (tests/scoring/fixtures/seer-v1): its pairs, their λ and the
    extractions' ranks follow from the experts' scores and the settled weights."""
    import shutil
    from pathlib import Path

    path = tmp_path / "seer-v1"
    shutil.copytree(Path(__file__).parents[1] / "scoring" / "fixtures" / "seer-v1", path)
    assert validate_path(path) == []

    def swap(pairs):
        pairs[0]["chosen"], pairs[0]["rejected"] = pairs[0]["rejected"], pairs[0]["chosen"]
        pairs[1]["lambda_weight"] = 123

    _rewrite(path, "pairs-00000.jsonl", swap)
    problems = validate_path(path)
    assert len(problems) == 1 and problems[0].startswith(
        "pairs-00000.jsonl:1: field 'chosen[0].content' is ")
    assert "but its labels and manifest give" in problems[0]
    _rewrite(path, "pairs-00000.jsonl", swap)  # swapped back; the λ still 123
    assert validate_path(path) == [("pairs-00000.jsonl:2: field 'lambda_weight' is 123 but "
                                   f"its labels and manifest give {_lambda(path, 1)!r}")]


def _lambda(path, index):
    from labeler.tasks.seer import SeerTask

    manifest = json.loads((path / "manifest.json").read_text(encoding="utf-8"))
    data = [json.loads(line) for line in (path / "data-00000.jsonl").read_text().splitlines()]
    return SeerTask.rederive(manifest, {"data": data})["pairs"][index]["lambda_weight"]


def test_a_file_of_bad_lines_is_read_no_further_than_its_100th_problem(tmp_path):
    """1,000,000 lines of `{}` printed 7.2M lines over 17 minutes and 1 GB (issue 49): now the
    first 100 problems, a count of the rest of the line that made them, and the lines left."""
    file = tmp_path / "empty.jsonl"
    file.write_text("{}\n" * 5000, encoding="utf-8")  # 11 problems a line, in the utility schema

    result = _run(file, "--schema", "utility", "--json")

    assert result.exit_code == 1
    [check] = json.loads(result.stdout)["files"]
    assert len(check["problems"]) == 100 and check["problems"][-1].startswith(f"{file}:10: ")
    assert (check["more"], check["unchecked"], check["lines"]) == (10, 4990, 5000)
    shown = _run(file, "--schema", "utility").output.splitlines()
    assert len(shown) < 115
    assert f"{file}: stopped after 100 problems; its last 4990 line(s) not checked" in shown
    assert "... and 10 more problem(s), not shown" in shown
