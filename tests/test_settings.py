"""labeler.settings: each setting read from the environment when asked, and only there."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from labeler import settings
from labeler.errors import InputError, ModelLoadError

PACKAGE = Path(settings.__file__).parent


@pytest.mark.parametrize("value", ["1", "true", "TRUE", "yes", "On"])
def test_truthy_values_are_huggingface_hubs(value):
    assert settings.is_true(value)


@pytest.mark.parametrize("value", [None, "", "0", "false", "no", "off", "2", "y"])
def test_anything_else_is_false(value):
    assert not settings.is_true(value)


def test_flags_are_read_when_asked_not_at_import(monkeypatch):
    assert not (settings.quiet() or settings.verbose() or settings.debug())  # conftest unsets
    monkeypatch.setenv("LABELER_QUIET", "yes")
    monkeypatch.setenv("LABELER_VERBOSE", "1")
    monkeypatch.setenv("LABELER_DEBUG", "true")
    assert settings.quiet() and settings.verbose() and settings.debug()
    monkeypatch.setenv("LABELER_QUIET", "0")  # how tests/hub/conftest.py switches it off
    assert not settings.quiet()


def test_apply_flags_turns_on_only_the_flags_given(monkeypatch):
    monkeypatch.setenv("LABELER_VERBOSE", "1")  # set by the user, not by a flag
    settings.apply_flags(quiet=True)
    assert settings.quiet() and settings.verbose() and not settings.debug()


def test_transformers_offline_alone_means_offline(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    assert settings.offline()
    monkeypatch.delenv("TRANSFORMERS_OFFLINE")
    assert not settings.offline()


def test_hf_hub_offline_decides_when_set_as_in_huggingface_hub(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")  # tests/hub/conftest.py's online Hub tests
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    assert not settings.offline()
    monkeypatch.setenv("HF_HUB_OFFLINE", "")  # empty counts as unset
    assert settings.offline()


def test_dense_encoder_refuses_to_download_under_transformers_offline(monkeypatch):
    from labeler.retrieval.dense import load_encoder

    monkeypatch.delenv("HF_HUB_OFFLINE")
    with pytest.raises(ModelLoadError, match="'BAAI/bge-m3': not in the local Hugging Face cache"):
        load_encoder("bge-m3")  # not in this test's empty HF cache


def test_cache_dir_prefers_labeler_cache_dir_then_xdg_then_home(monkeypatch, tmp_path):
    monkeypatch.setenv("LABELER_CACHE_DIR", str(tmp_path / "mine"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert settings.cache_dir() == tmp_path / "mine"
    monkeypatch.setenv("LABELER_CACHE_DIR", "")  # empty counts as unset
    assert settings.cache_dir() == tmp_path / "xdg" / "labeler"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert settings.cache_dir() == tmp_path / "home" / ".cache" / "labeler"
    assert not settings.cache_dir().exists()  # labeler.paths.cache_root creates it


def test_cache_root_creates_the_settings_folder(monkeypatch, tmp_path):
    from labeler.paths import cache_root

    monkeypatch.setenv("LABELER_CACHE_DIR", str(tmp_path / "c"))
    assert cache_root() == tmp_path / "c" and (tmp_path / "c").is_dir()
    assert cache_root(tmp_path / "flag") == tmp_path / "flag"  # --cache-dir wins


def test_hub_backoff_defaults_to_one_second_and_rejects_non_numbers(monkeypatch):
    monkeypatch.delenv("LABELER_HUB_BACKOFF", raising=False)
    assert settings.hub_backoff() == 1.0
    monkeypatch.setenv("LABELER_HUB_BACKOFF", "0.25")
    assert settings.hub_backoff() == 0.25
    for bad in ("soon", "-1", "nan"):
        monkeypatch.setenv("LABELER_HUB_BACKOFF", bad)
        with pytest.raises(InputError) as err:
            settings.hub_backoff()
        assert err.value.line() == (
            f"LABELER_HUB_BACKOFF must be a number of seconds >= 0, not '{bad}' "
            "(unset it or set e.g. LABELER_HUB_BACKOFF=1)")


def test_no_other_module_reads_the_environment():
    """Only settings.py parses os.environ; cli/__init__.py only sets OMP_WAIT_POLICY, which
    torch reads itself and must see before it is imported."""
    readers = [
        (str(path.relative_to(PACKAGE)), line.strip())
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "settings.py"
        for line in path.read_text(encoding="utf-8").splitlines()
        if re.search(r"os\.environ|getenv|environ\[", line)
    ]
    assert readers == [("cli/__init__.py", 'os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")')]
