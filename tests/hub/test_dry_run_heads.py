"""`labeler build --dry-run` on a dataset whose file is big reads only the file's head by HTTP
range requests (labeler/sources/heads.py), through the tests' Hub server serving the real repos'
ids, pinned commits and paths, each file padded with real rows past 10 MB: the count comes from
the parquet footer, or the count recorded beside the pin, or is an estimate that says so."""

from __future__ import annotations

import gzip
import io
import json

import huggingface_hub.constants
import pyarrow as pa
import pyarrow.parquet as pq
from click.testing import CliRunner
from support.hub_mirror import CONTENT, FIXTURES

from labeler.cli import cli
from labeler.sources.hub_files import HUB_FILES

#: past what a dry run downloads whole, as the real files are (21-150 MB)
PADDED_BYTES = 10 * 2**20
#: the most of one padded file a dry run may fetch (its head is about 2 MiB)
HEAD_MAX_BYTES = 4 * 2**20


def _repeated(rows: list[dict], key: str) -> list[dict]:
    """`rows` over and over, each copy under its own `key`, a fifth past `PADDED_BYTES` of
    JSON (a file of them, laid out without compression, passes it)."""
    out, size, copy = [], 0, 0
    while size <= PADDED_BYTES * 1.2:
        for row in rows:
            out.append({**row, key: f"{row[key]}-{copy}"})
            size += len(json.dumps(out[-1]))
        copy += 1
    return out


def _lines(fixture: bytes) -> list[dict]:
    return [json.loads(line) for line in fixture.decode().splitlines() if line.strip()]


def _padded() -> dict[str, tuple[bytes, int]]:
    """source key -> (its file padded past 10 MB with its fixture's real rows, the rows)."""
    tevatron = _repeated(_lines(gzip.decompress(CONTENT["nq-tevatron"]())), "query_id")
    twowiki = _repeated(_lines(CONTENT["2wiki"]()), "id")
    hotpot = _repeated(json.loads((FIXTURES / "hotpot_dev_distractor.json").read_text()), "id")
    parquet = io.BytesIO()  # no compression: as big as its rows; row groups of ~2 MB
    pq.write_table(pa.Table.from_pylist(hotpot), parquet, compression="none",
                   use_dictionary=False, row_group_size=250)
    return {
        "nq-tevatron": (gzip.compress("".join(json.dumps(r) + "\n" for r in tevatron).encode(),
                                      compresslevel=0), len(tevatron)),
        "2wiki": ("".join(json.dumps(r) + "\n" for r in twowiki).encode(), len(twowiki)),
        "hotpotqa-distractor": (parquet.getvalue(), len(hotpot)),
    }


def _rows(output: str) -> dict[str, tuple[str, str]]:
    cells = [[c.strip() for c in line.split("│")[1:-1]] for line in output.splitlines()
             if line.startswith("│")]
    return {c[0]: (c[1], c[2]) for c in cells if len(c) == 3}


def test_a_dry_run_counts_a_big_dataset_file_from_its_head(hub, tmp_path, monkeypatch,
                                                          no_loads):
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    padded = _padded()
    for key, (content, _) in padded.items():
        spec = HUB_FILES[key]
        assert len(content) > PADDED_BYTES
        hub.seed(spec.repo, {spec.files[0]: content}, sha=(spec.revision if len(
            spec.revision) == 40 else "c0ffee" * 6 + "c0ff"), branch=spec.revision)

    def dry_run(dataset: str, *args: str) -> dict[str, tuple[str, str]]:
        """The plan's rows; no more than the head of the dataset's file fetched."""
        before, spec = len(hub.served), HUB_FILES[dataset]
        result = CliRunner().invoke(cli, [
            "build", "--dataset", dataset, "--llm", "smollm2-135m", "--pool", "rp",
            "--encoder", "bm25", "--out", str(tmp_path / "out"), *args, "--dry-run"],
            env={"COLUMNS": "300", "LABELER_CACHE_DIR": str(tmp_path / "cache")})
        assert result.exit_code == 0, result.output
        fetched = sum(size for path, size in hub.served[before:]
                      if path.startswith(f"/datasets/{spec.repo}/resolve/")
                      and path.endswith(spec.files[0]))
        assert 0 < fetched < HEAD_MAX_BYTES, (dataset, fetched)
        return _rows(result.output)

    # a JSON-lines file: the count recorded beside the pin (the paper's 12,576), exact
    assert dry_run("2wiki")["queries"] == ("12,576",
                                           "exact: recorded beside its pin (not downloaded)")
    # a gzipped one with none recorded: estimated from its size, near the rows it holds
    count, how = dry_run("nq-tevatron")["queries"]
    assert how.startswith("estimate") and abs(int(count.replace(",", "")) / padded[
        "nq-tevatron"][1] - 1) < 0.05, (count, how)
    # parquet: the footer's rows, exact; the corpus pooled from every row's passages is
    # scaled from the head's, an estimate
    rows = dry_run("hotpotqa-distractor")
    assert rows["queries"] == (f"{padded['hotpotqa-distractor'][1]:,}",
                               "exact: the parquet footer's, read by range (not downloaded)")
    assert rows["corpus passages"][1].startswith("estimate"), rows["corpus passages"]
    assert rows["candidates"][1] == "upper bound: queries × k"
    # the first --limit queries are in the head: every count is exact again
    rows = dry_run("nq-tevatron", "--limit", "3")
    assert rows["queries"] == ("3", "exact") and rows["LLM calls: closed-book answers"] == (
        "3", "exact")
    assert not (tmp_path / "hub").exists()  # nothing stored in the Hub cache
    assert no_loads == [] and not (tmp_path / "out").exists()
