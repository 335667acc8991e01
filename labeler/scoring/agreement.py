"""How far people agree with a labels version, and with one another: a `review` version's
verdicts counted per reviewer and per what they judge, and Cohen's kappa between each two
reviewers over the items both judged (`labeler score REVIEW --against LABELS`)."""

from __future__ import annotations

import hashlib
from collections import Counter
from itertools import combinations
from pathlib import Path

from labeler.artifacts.manifest import MANIFEST, read_manifest
from labeler.artifacts.reader import open_artifact
from labeler.errors import ArtifactError, InputError
from labeler.metrics.kappa import cohen_kappa
from labeler.review_format import ABOUT, VERDICTS, current


def review_agreement(review: str | Path, labels: str | Path) -> dict[str, list[dict]]:
    """{"reviewers": a row per reviewer, then "all"; "about": a row per thing judged (query,
    candidate, extraction) that any verdict is about; "between": a row per two reviewers}.
    A reviewer's or a thing's row: verdicts, agree, disagree, unsure and agreement = agree /
    (agree + disagree) (None without either); two reviewers' row: the items both judged,
    the share they gave the same verdict and Cohen's kappa over them (None where undefined).
    The review must name `labels` (its manifest.json's sha256), else ArtifactError."""
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
    by_reviewer: dict[str, Counter] = {}
    by_about: dict[str, Counter] = {}
    judged: dict[str, dict[tuple, str]] = {}
    for record in map(current, records):
        by_reviewer.setdefault(record["reviewer"], Counter())[record["verdict"]] += 1
        by_about.setdefault(record["about"], Counter())[record["verdict"]] += 1
        item = (record["llm"], record["qid"], record["about"], record["pid"])
        judged.setdefault(record["reviewer"], {})[item] = record["verdict"]
    total = sum(by_reviewer.values(), Counter())
    return {"reviewers": [_row("reviewer", name, c) for name, c in sorted(by_reviewer.items())]
            + [_row("reviewer", "all", total)],
            "about": [_row("about", name, by_about[name]) for name in ABOUT if name in by_about],
            "between": [_between(a, judged[a], b, judged[b])
                        for a, b in combinations(sorted(judged), 2)]}


def _row(column: str, name: str, counts: Counter) -> dict:
    judged = counts["agree"] + counts["disagree"]
    return {column: name, "verdicts": sum(counts[v] for v in VERDICTS),
            **{v: counts[v] for v in VERDICTS},
            "agreement": counts["agree"] / judged if judged else None}


def _between(a: str, first: dict[tuple, str], b: str, second: dict[tuple, str]) -> dict:
    """Two reviewers over the items both judged: how many, the share alike, Cohen's kappa."""
    both = sorted(first.keys() & second.keys(), key=str)
    ones, twos = [first[i] for i in both], [second[i] for i in both]
    alike = sum(x == y for x, y in zip(ones, twos, strict=True))
    return {"reviewers": f"{a} × {b}", "items": len(both),
            "same": alike / len(both) if both else None, "kappa": cohen_kappa(ones, twos)}
