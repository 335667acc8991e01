"""How far people agree with a labels version: its `review` versions' verdicts counted per
reviewer (`labeler score REVIEW --against LABELS`)."""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path

from labeler.artifacts.manifest import MANIFEST, read_manifest
from labeler.artifacts.reader import open_artifact
from labeler.errors import ArtifactError, InputError

VERDICTS = ("agree", "disagree", "unsure")


def review_agreement(review: str | Path, labels: str | Path) -> list[dict]:
    """A row per reviewer, then "all": verdicts, agree, disagree, unsure and agreement =
    agree / (agree + disagree) (None without either). The review must name `labels` (its
    manifest.json's sha256), else ArtifactError."""
    review, labels = Path(review), Path(labels)
    manifest, records = open_artifact(review)
    if manifest is None or manifest["artifact"] != "review":
        raise InputError("expected a review version folder <out>/review/<dataset>/<llm>/v<N>/",
                         path=str(review))
    named = manifest["labels"]
    digest = hashlib.sha256((labels / MANIFEST).read_bytes()).hexdigest() \
        if labels.is_dir() else None
    if digest != named["manifest_sha256"]:
        here = read_manifest(labels) if digest else {}
        raise ArtifactError(
            f"these verdicts are on {named['artifact']} v{named['version']} of "
            f"{named['dataset']} × {named['llm']} (manifest sha256 "
            f"{named['manifest_sha256'][:12]}…), not on this folder"
            + (f" (v{here.get('version')})" if here else ""),
            path=str(labels), hint="score a review against the labels version it names")
    counts: dict[str, Counter] = {}
    for record in records:
        counts.setdefault(record["reviewer"], Counter())[record["verdict"]] += 1
    total = sum(counts.values(), Counter())
    return [_row(name, c) for name, c in sorted(counts.items())] + [_row("all", total)]


def _row(reviewer: str, counts: Counter) -> dict:
    judged = counts["agree"] + counts["disagree"]
    return {"reviewer": reviewer, "verdicts": sum(counts[v] for v in VERDICTS),
            **{v: counts[v] for v in VERDICTS},
            "agreement": counts["agree"] / judged if judged else None}
