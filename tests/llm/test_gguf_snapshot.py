"""The bundled GGUF converted once into a transformers folder: complete or never used, shared by
concurrent loads, converted again when damaged. Every load here is the real SmolLM2."""

from __future__ import annotations

import filecmp
import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from labeler.errors import ModelLoadError
from labeler.llm import Sampling, chat, resolve_model
from labeler.llm.gguf import SNAPSHOT, gguf_snapshot, snapshot_problem
from labeler.llm.hf import HFBackend
from labeler.llm.models import model_revision
from labeler.paths import locked, umask_mode

PROMPT = "What is the capital of France? Answer in one sentence."
QUESTION = [chat(PROMPT)]
GREEDY = Sampling(max_tokens=12)

#: a process that loads the bundled model into the cache folder argv[1] and prints its answer
LOAD = f"""\
import sys
from labeler.llm import Sampling, chat, load_backend

backend = load_backend("smollm2-135m", cache_dir=sys.argv[1], use_cache=False)
print(backend.generate([chat({PROMPT!r})], Sampling(max_tokens=12))[0][0].text)
"""

#: the same, killed (SIGKILL) once the model is saved, while the tokenizer is being saved
KILLED_LOAD = """\
import os, signal
import transformers.tokenization_utils_base as base

base.PreTrainedTokenizerBase.save_pretrained = lambda *a, **k: os.kill(os.getpid(), 9)
""" + LOAD


@pytest.fixture(scope="module")
def converted(smollm) -> Path:
    """The folder the session's SmolLM2 was converted into (by the real gguf_snapshot)."""
    return Path(smollm.model.name_or_path)


@pytest.fixture(scope="module")
def answer(smollm) -> str:
    return smollm.generate(QUESTION, GREEDY)[0][0].text


def target_in(cache: Path) -> Path:
    """Where gguf_snapshot converts the bundled model to under the cache folder `cache`."""
    spec = resolve_model("smollm2-135m")
    return cache / "models" / f"{spec.alias}-{model_revision(spec)[:16]}"


def linked_copy(source: Path, folder: Path, *, but: tuple[str, ...] = ()) -> None:
    """`folder` holding a symlink to each file of `source`, except the names in `but`."""
    folder.mkdir(parents=True)
    for file in source.iterdir():
        if file.name not in but:
            (folder / file.name).symlink_to(file)


def load_in_a_process(code: str, cache: Path) -> subprocess.Popen:
    """`python -c code cache` started, its stdout and stderr piped."""
    env = os.environ | {"LABELER_CACHE_DIR": str(cache), "OMP_WAIT_POLICY": "PASSIVE"}
    return subprocess.Popen([sys.executable, "-c", code, str(cache)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_the_converted_folder_lists_its_files_and_holds_no_copy_of_the_gguf(converted):
    listed = json.loads((converted / SNAPSHOT).read_text())["files"]
    # every file but the list itself, with its size
    assert listed == {f.name: f.stat().st_size for f in converted.iterdir() if f.name != SNAPSHOT}
    assert {"model.safetensors", "config.json", "tokenizer.json"} <= set(listed)
    # the slow tokenizer's "vocab file" would be the whole 98 MB .gguf again
    assert "tokenizer.model" not in listed
    assert snapshot_problem(converted) is None
    # readable by colleagues sharing the cache, as the umask allows (mkdtemp alone: 0700)
    assert stat.S_IMODE(converted.stat().st_mode) == umask_mode(0o777)
    assert {name: stat.S_IMODE((converted / name).stat().st_mode) for name in listed} == {
        name: umask_mode(0o666) for name in listed}  # safetensors alone writes 0600


def test_a_missing_truncated_or_unlisted_file_is_named(converted, tmp_path):
    missing = tmp_path / "missing"
    linked_copy(converted, missing, but=("tokenizer.json",))
    assert snapshot_problem(missing) == "tokenizer.json is missing"

    truncated = tmp_path / "truncated"
    linked_copy(converted, truncated, but=("model.safetensors",))
    (truncated / "model.safetensors").write_bytes(b"\0" * 1024)
    size = (converted / "model.safetensors").stat().st_size
    assert snapshot_problem(truncated) == f"model.safetensors holds 1024 bytes, not {size}"

    unlisted = tmp_path / "unlisted"  # a folder without the list: interrupted, or an old one
    linked_copy(converted, unlisted, but=(SNAPSHOT,))
    assert snapshot_problem(unlisted).startswith(f"no readable {SNAPSHOT}")


def test_a_damaged_folder_that_passes_the_size_check_fails_naming_it(converted, tmp_path):
    cache = tmp_path / "cache"
    target = target_in(cache)
    linked_copy(converted, target, but=("model.safetensors",))
    with open(target / "model.safetensors", "wb") as f:  # the right size, all zeros (sparse)
        f.truncate((converted / "model.safetensors").stat().st_size)

    with pytest.raises(ModelLoadError) as caught:
        HFBackend(resolve_model("smollm2-135m"), cache_dir=cache)
    assert caught.value.hint == (f"its converted copy {target} may be damaged: remove it "
                                 f"(rm -r {target}) and the next load converts the model again")


def test_a_killed_conversion_leaves_no_folder_and_a_damaged_one_is_converted_again(
        converted, answer, tmp_path, capsys):
    cache = tmp_path / "cache"
    target = target_in(cache)
    killed = load_in_a_process(KILLED_LOAD, cache)
    _, err = killed.communicate(timeout=900)
    assert killed.returncode == -9, err
    # the model was saved, into a partial folder; nothing at the target
    [partial] = target.parent.glob(f".partial-{target.name}-*")
    assert (partial / "model.safetensors").is_file()
    assert not target.exists()

    # now a damaged folder at the target too: its weights truncated
    linked_copy(converted, target, but=("model.safetensors",))
    (target / "model.safetensors").write_bytes(b"\0" * 1024)

    spec = resolve_model("smollm2-135m")
    assert gguf_snapshot(spec, model_revision(spec), cache) == target
    size = (converted / "model.safetensors").stat().st_size
    assert (f"the converted model {target} is damaged (model.safetensors holds 1024 bytes, "
            f"not {size}): converting again") in " ".join(capsys.readouterr().err.split())
    assert not partial.exists()  # the killed conversion's leftovers are gone
    assert snapshot_problem(target) is None
    assert filecmp.cmp(target / "model.safetensors", converted / "model.safetensors",
                       shallow=False)  # the same conversion, byte for byte
    reloaded = HFBackend(spec, cache_dir=cache)
    assert reloaded.generate(QUESTION, GREEDY)[0][0].text == answer


@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="needs Linux's /proc/locks")
def test_a_load_during_a_conversion_waits_for_it_and_uses_its_folder(converted, answer,
                                                                     tmp_path):
    cache = tmp_path / "cache"
    target = target_in(cache)
    target.parent.mkdir(parents=True)
    lock = target.with_name(f".{target.name}.lock")
    with locked(lock):  # this test is the process converting
        waiting = load_in_a_process(LOAD, cache)
        inode = f":{lock.stat().st_ino} "
        deadline = time.monotonic() + 600
        # the other load blocks on the lock ("->" marks a waiter in /proc/locks)
        while not any("->" in row and inode in row
                      for row in Path("/proc/locks").read_text().splitlines()):
            assert waiting.poll() is None, waiting.communicate()
            assert time.monotonic() < deadline, "the second load never asked for the lock"
            time.sleep(0.05)
        linked_copy(converted, target)  # the conversion finishes
    out, err = waiting.communicate(timeout=600)
    assert waiting.returncode == 0, err
    assert out.strip() == answer
    assert "converting" not in err  # it used the folder it waited for
    assert not list(target.parent.glob(".partial-*"))
