"""With the network cut, each Hub-touching command of the README and docs/ ends with one line on
stderr and a non-zero exit, never a traceback (issue 49: the headline's dry run printed 86 lines
offline); and `labeler.network` names each cause: offline mode, no route, DNS, TLS, a timeout,
401/403/404, a gated repo."""

from __future__ import annotations

import os
import shlex
import socket
import sys
import threading
from pathlib import Path

import httpx
import huggingface_hub.constants
import pytest
from huggingface_hub import HfApi, hf_hub_download

from labeler.cli import main
from labeler.errors import HubError
from labeler.network import hub_errors, quiet_retries

ROOT = Path(__file__).parents[2]
#: the commands of README.md and docs/ that read or write the Hub (or GitHub's raw files), as
#: written; the folders and files they name are made by `_inputs`
COMMANDS = [
    "labeler build --dataset nq --llm llama3.1-8b --dry-run",
    "labeler build --dataset nq --llm llama3.1-8b",
    "labeler reproduce utility-paper --dry-run",
    "labeler reproduce seer-paper --dry-run",
    "labeler reproduce utility-paper --dataset nq --llm qwen3-8b --limit 500",
    "labeler build --artifact rubric --dataset wands --llm qwen3-8b --limit 50",
    "labeler build --artifact rubric --dataset esci --llm qwen3-8b --limit 50",
    ("labeler build --dataset nq --llm llama3.1-8b --backend openai --base-url "
     "http://gpu-node:8000/v1 --dry-run"),
    "labeler push --repo my-org/llm-utility",
    ("labeler pull my-org/llm-utility --config utility.nq-sample.smollm2-135m --revision "
     "utility.nq-sample.smollm2-135m.v1 --out pulled/"),
    ("labeler score evidence.jsonl --against hub:my-org/llm-utility:utility.nq.llama3.1-8b "
     "--llm smollm2-135m"),
]

#: dry runs that plan from names alone, reading the Hub cache only to say what is missing
#: offline: with a Hub that cannot be reached they succeed
PLANS_ONLY = {"labeler reproduce seer-paper --dry-run"}


def _closed_port() -> str:
    with socket.socket() as s:  # a port nothing listens on: the connection is refused
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


@pytest.fixture(params=["offline", "no route"])
def cut(request, monkeypatch):
    """The network cut one way: HF_HUB_OFFLINE=1 (the suite's own), or a Hub endpoint and
    GitHub mirror that refuse connections (`_cut`)."""
    monkeypatch.setenv("LABELER_HUB_BACKOFF", "0.001")
    monkeypatch.setenv("HF_TOKEN", "hf_NotARealToken")
    if request.param == "offline":
        assert huggingface_hub.constants.HF_HUB_OFFLINE and os.environ["HF_HUB_OFFLINE"] == "1"
        return request.param
    _cut(f"http://{_closed_port()}", monkeypatch)
    return request.param


def _cut(url: str, monkeypatch) -> None:
    """huggingface_hub and labeler set to reach the Hub and GitHub's files at `url`."""
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.setenv(name, "0")
    monkeypatch.setenv("LABELER_GITHUB_RAW", url)
    for name, value in {"ENDPOINT": url, "HF_HUB_OFFLINE": False,
                        "HUGGINGFACE_CO_URL_TEMPLATE": url + "/{repo_id}/resolve/{revision}/"
                                                             "{filename}"}.items():
        monkeypatch.setattr(huggingface_hub.constants, name, value)


def _docs() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in
                     [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))])


def test_each_command_is_in_the_readme_or_docs():
    text = " ".join(_docs().replace("\\\n", " ").split())
    assert [c for c in COMMANDS if c not in text] == []


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.removeprefix("labeler "))
def test_a_hub_command_with_the_network_cut_says_one_line(command, cut, write, tmp_path,
                                                          monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    write()  # out/utility/nq-sample/smollm2-135m/v1, for the push
    (tmp_path / "evidence.jsonl").write_text('{"qid": "q1", "evidence": "e"}\n')
    monkeypatch.setattr(sys, "argv", shlex.split(command))
    try:
        main()
    except SystemExit as exit_:
        assert exit_.code not in (0, None)
    else:
        assert cut == "no route" and command in PLANS_ONLY  # it read nothing from the Hub
        return
    error = _one_line(capsys.readouterr().err)
    assert ("offline" if cut == "offline" else "cannot reach") in error.lower() \
        or "not in the local cache" in error, error


def test_a_host_name_that_does_not_resolve_is_named(monkeypatch, capsys):
    monkeypatch.setenv("LABELER_HUB_BACKOFF", "0.001")
    _cut("http://hub.invalid", monkeypatch)
    monkeypatch.setattr(sys, "argv", shlex.split(COMMANDS[0]))
    with pytest.raises(SystemExit) as exit_:
        main()
    assert exit_.value.code == 1
    assert _one_line(capsys.readouterr().err) == (
        "error: facebook/kilt_tasks: cannot load dataset: cannot reach http://hub.invalid: its "
        "host name does not resolve (DNS) (check the network and HF_ENDPOINT, then run the same "
        "command again)")


def _one_line(err: str) -> str:
    """The one error line of a command's stderr, which holds nothing else but the notices of
    retries (`labeler.hub.remote.retry`); never a traceback."""
    lines = err.splitlines()
    assert "Traceback" not in err and lines and lines[-1].startswith("error: "), err
    assert all("trying again in" in line for line in lines[:-1]), err
    return lines[-1]


@pytest.fixture
def silent():
    """A port that accepts connections and never answers."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        accepted = []
        thread = threading.Thread(target=lambda: accepted.append(server.accept()), daemon=True)
        thread.start()
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
        for connection, _ in accepted:
            connection.close()


def test_a_timeout_is_named(silent):
    with pytest.raises(HubError) as failed, hub_errors("lab/x", endpoint=silent):
        httpx.get(silent, timeout=0.2)
    assert failed.value.line() == (f"lab/x: cannot reach {silent}: no answer in time "
                                   "(ReadTimeout) (check the network and HF_ENDPOINT, then "
                                   "run the same command again)")


def test_a_tls_handshake_refused_is_named(hub):
    tls = hub.url.replace("http://", "https://")  # the server speaks plain HTTP
    with pytest.raises(HubError) as failed, hub_errors("lab/x", endpoint=tls):
        HfApi(endpoint=tls).dataset_info("lab/x")
    assert failed.value.line().startswith(f"lab/x: cannot reach {tls}: the TLS handshake "
                                          "failed (")


@pytest.mark.parametrize(("status", "said"), [
    ("401", "not allowed: HTTP 401"), ("403", "not allowed: HTTP 403"),
    ("404", "not found: HTTP 404")])
def test_a_refusal_is_named_by_its_status(hub, status, said):
    hub.seed("lab/x", {"a.jsonl": b"{}\n"}, sha="c" * 40)
    hub.inject(at=1, kind=status, times=None)
    with pytest.raises(HubError) as failed, hub_errors("lab/x"):
        hf_hub_download("lab/x", "a.jsonl", repo_type="dataset", revision="c" * 40)
    assert failed.value.line().startswith(f"lab/x: {said}"), failed.value.line()


def test_a_gated_repo_is_named(hub):
    hub.seed("lab/gated", {"a.jsonl": b"{}\n"}, sha="a" * 40, gated=True)
    with pytest.raises(HubError) as failed, hub_errors("lab/gated"):
        hf_hub_download("lab/gated", "a.jsonl", repo_type="dataset", revision="a" * 40)
    assert failed.value.line().startswith("lab/gated: the repo is gated and this user has not "
                                          "been granted access (accept its conditions")


@pytest.mark.parametrize("load", ["hf model", "alignscore checkpoint"])
def test_a_model_download_with_no_route_fails_at_once_and_logs_no_retries(load, monkeypatch,
                                                                         caplog):
    from labeler.errors import ModelLoadError
    from labeler.llm.hf import HFBackend
    from labeler.llm.models import resolve_model
    from labeler.metrics.seer.alignscore import _checkpoint_file

    _cut(f"http://{_closed_port()}", monkeypatch)
    waits = _waits(monkeypatch)
    with pytest.raises(ModelLoadError, match="the Hub cannot be reached"):
        if load == "hf model":
            HFBackend(resolve_model("labeler-tests/no-such-model"))
        else:
            _checkpoint_file("labeler-tests/no-such/model.ckpt")
    assert not [r for r in caplog.records if r.name.startswith("huggingface_hub")], caplog.text
    # a refused connection is final: no retry (huggingface_hub's waited 1+2+4+8+8 s a file)
    assert waits == []


def test_a_refused_answer_is_still_retried(hub, monkeypatch):
    hub.seed("lab/x", {"a.jsonl": b"{}\n"}, sha="c" * 40)
    hub.inject(at=1, kind="503", times=2)  # the first request and the first retry
    waits = _waits(monkeypatch)
    with quiet_retries():  # what labeler's Hub reads run in
        path = hf_hub_download("lab/x", "a.jsonl", repo_type="dataset", revision="c" * 40)
    assert (Path(path).read_bytes(), waits) == (b"{}\n", [1])


def _waits(monkeypatch) -> list[float]:
    """The seconds huggingface_hub waits between its retries from now, recorded, not slept."""
    import huggingface_hub.utils._http

    waits: list[float] = []
    monkeypatch.setattr(huggingface_hub.utils._http.time, "sleep", waits.append)
    return waits
