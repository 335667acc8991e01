"""Interrupted pushes: a fault at each request of a push in turn; the token kept secret."""

from __future__ import annotations

import logging
import socket

import huggingface_hub.constants
import pytest
from click.testing import CliRunner
from huggingface_hub import DatasetCard

from labeler.cli import cli
from labeler.errors import HubError
from labeler.hub import push
from labeler.hub.layout import Version

#: (fault, how many requests in a row fail; None = every request from then on, an outage)
FAULTS = [("500", 1), ("drop", 1), ("drop-after", 1), ("500", None)]


def test_a_fault_at_any_request_leaves_no_partial_version_and_a_rerun_completes(
    hub, write, tmp_path
):
    out = tmp_path / "out"
    first, second = Version.read(write()), Version.read(write(dataset="nq-sample-2q", n=2))
    push([first.folder], repo="lab/clean")
    before = hub.request_count
    push([second.folder], repo="lab/clean")
    requests = hub.request_count - before  # of a clean push into a repo holding one config
    assert requests >= 7  # create, info, refs, card, validate-yaml, preupload, commit, tag

    for kind, times in FAULTS:
        for n in range(1, requests + 1):
            repo = f"lab/{kind}-{times}-{n}"
            push([first.folder], repo=repo)
            hub.inject(at=n, kind=kind, times=times)
            try:
                push([second.folder], repo=repo)
                stopped = False
            except HubError:
                stopped = True
            hub.clear_faults()
            where = f"{kind} x{times} at request {n}: {hub.log[before:][n - 1]}"
            assert stopped == (times is None), where  # one fault is retried away, an outage is not
            _never_partial(hub.repo(repo), second, where)

            push(None, repo=repo, out=out)  # the rerun: everything under out not yet published

            _published(hub.repo(repo), [first, second], where)
            assert len(hub.repo(repo).commits) == 3, where  # created, first, second: nothing twice


def test_the_token_appears_in_no_output_log_or_file(hub, write, tmp_path, caplog, token):
    caplog.set_level(logging.DEBUG)
    out, pulled = tmp_path / "out", tmp_path / "pulled"
    v1 = write()
    runner = CliRunner()
    seen = []
    for args in (
        ["push", "--repo", "lab/x", "--out", str(out), "--dry-run"],
        ["push", "--repo", "lab/x", "--out", str(out), "--private"],
        ["push", str(v1), "--repo", "lab/x"],  # refused: already on the Hub
        ["pull", "lab/x", "--out", str(pulled)],
        ["pull", "lab/x"],
    ):
        result = runner.invoke(cli, args)
        seen += [result.output, repr(result.exception)]
    hub.inject(at=1, kind="500", times=None)  # and the error path of a failing push
    failed = runner.invoke(cli, ["--verbose", "push", str(write(n=2)), "--repo", "lab/x"])
    assert isinstance(failed.exception, HubError)
    seen += [failed.output, failed.exception.line()]

    assert hub.repo("lab/x").private  # --private reached the Hub
    assert not [text for text in seen if token in text]
    assert token not in caplog.text
    assert caplog.records  # huggingface_hub's debug log was recorded, and holds no token
    written = [p for p in tmp_path.rglob("*") if p.is_file() and not p.is_symlink()]
    assert len(written) > 10  # out, the pulled copy, HF_HOME's cache
    assert not [p for p in written if token.encode() in p.read_bytes()]


@pytest.mark.parametrize("status", [429, 503])
def test_transient_answers_are_retried(hub, write, status):
    hub.inject(at=2, kind=str(status), times=2)  # the repo info read fails twice, then answers

    result = push([write()], repo="lab/x")

    assert [p.status for p in result.versions] == ["pushed"]
    assert (
        hub.log[1] == hub.log[2] == hub.log[3] == "GET /api/datasets/lab/x/revision/main?blobs=true"
    )


def test_an_unreachable_hub_is_tried_again_then_named(hub, write, monkeypatch):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}"
    monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", closed)

    result = CliRunner().invoke(cli, ["push", str(write()), "--repo", "lab/x"])

    assert isinstance(result.exception, HubError)
    assert result.exception.line() == (
        f"lab/x: cannot reach {closed}: connection failed (ConnectError) (check the network "
        "and HF_ENDPOINT, then run the same command again: a push resumes where it stopped)"
    )
    assert "create the repo: connection failed (ConnectError); trying again" in result.output
    assert "(4/4)" in result.output



def test_an_unreachable_hub_in_a_pull_is_named_without_talking_of_a_push(hub, monkeypatch):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}"
    monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", closed)

    result = CliRunner().invoke(cli, ["pull", "lab/x"])

    assert isinstance(result.exception, HubError)
    assert result.exception.line() == (
        f"lab/x: cannot reach {closed}: connection failed (ConnectError) (check the network "
        "and HF_ENDPOINT, then run the same command again)"
    )


def _never_partial(repo, version: Version, where: str) -> None:
    """Every commit holds all of the version's files, byte for byte, or none of them."""
    local = {path: f.read_bytes() for path, f in version.uploads()}
    for commit in repo.commits.values():
        held = {p: b for p, b in commit.files.items() if p.startswith(version.prefix + "/")}
        assert held in ({}, local), where
        if held:
            assert _config_folder(commit, version.config) == version.prefix, where


def _published(repo, versions: list[Version], where: str) -> None:
    head = repo.resolve("main")
    for version in versions:
        tagged = repo.commits[repo.tags[version.tag]]
        for path, f in version.uploads():
            assert tagged.files[path] == head.files[path] == f.read_bytes(), where
        assert _config_folder(tagged, version.config) == version.prefix, where
        assert _config_folder(head, version.config) == version.prefix, where


def _config_folder(commit, config: str) -> str:
    card = DatasetCard(commit.files["README.md"].decode())
    files = next(c["data_files"] for c in card.data.configs if c["config_name"] == config)
    return files[0]["path"].rsplit("/", 1)[0]
