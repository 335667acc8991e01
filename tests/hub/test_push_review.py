"""A `review` version (verdicts made in `labeler view`) pushes, pulls byte-identical and
validates like any artifact."""

from __future__ import annotations

from click.testing import CliRunner

from labeler.artifacts import load_artifact
from labeler.artifacts.manifest import read_manifest
from labeler.cli import cli
from labeler.hub import pull, push
from labeler.view.verdicts import Verdicts


def test_a_review_version_pushes_pulls_identical_and_validates(hub, write, tmp_path):
    labels = write()
    verdicts = Verdicts(labels, read_manifest(labels), out=tmp_path / "out", reviewer="ann")
    for record, verdict in zip(load_artifact(labels).records, ("agree", "disagree"), strict=False):
        verdicts.add(qid=record["qid"], pid=None, verdict=verdict, note="looked at it")
    review = verdicts.seal()

    push([review], repo="lab/reviews")
    pulled = pull("lab/reviews", config="review.nq-sample.smollm2-135m", out=tmp_path / "pulled")

    assert {p.name: p.read_bytes() for p in pulled.iterdir()} == {
        p.name: p.read_bytes() for p in review.iterdir()}
    result = CliRunner().invoke(cli, ["validate", str(pulled)])
    assert result.exit_code == 0, result.output
