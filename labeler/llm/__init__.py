"""LLM backends behind one contract, model aliases, and the persistent call cache.

    backend = load_backend("smollm2-135m")          # hf backend, cached calls
    backend.generate([chat("Who wrote Hamlet?")], Sampling(max_tokens=16))  # [[Completion]]
"""

from __future__ import annotations

from pathlib import Path

from labeler.errors import InputError
from labeler.lazy import Registry
from labeler.llm.base import (
    OPTIONAL_OPERATIONS,
    Backend,
    Chat,
    ChoiceRequest,
    Completion,
    LoglikelihoodRequest,
    Message,
    Sampling,
    chat,
    yes_probability,
)
from labeler.llm.models import ALIASES, ModelSpec, resolve_model

#: backend name -> its class, imported when asked for (cheaply: a backend imports its model
#: library when a model loads, so its class's declarations are read without it, and vllm stays
#: optional); installed packages add theirs under the entry-point group `labeler.backends`
BUILT_IN = {"hf": "labeler.llm.hf:HFBackend", "vllm": "labeler.llm.vllm:VLLMBackend",
            "openai": "labeler.llm.openai_api:OpenAIBackend"}
BACKENDS = Registry("backend", BUILT_IN, group="labeler.backends",
                    base="labeler.llm.base:Backend")

#: models loaded in this process, so that each is loaded once:
#: (backend, model, device, batch, tensor parallel, dtype, served options, the API key's
#: digest: another key is another client)
_LOADED: dict[tuple, Backend] = {}


def load_backend(model: str, *, backend: str = "hf", batch_size: int | None = None,
                 device: str | None = None, tensor_parallel: int = 1, dtype: str | None = None,
                 cache_dir: str | Path | None = None, use_cache: bool = True,
                 share: float = 1.0, **served) -> Backend:
    """Load `model` (alias, HF repo id, local folder or .gguf) eagerly, raising ModelLoadError
    before any work; wrapped in the persistent call cache unless `use_cache` is False. A model
    is loaded once per process; later calls share it.

    `batch_size` defaults to the backend's `default_batch_size`; `tensor_parallel` > 1 (GPUs
    one model is split over) is for a backend that declares `tensor_parallel`, and `dtype` is
    one of the backend's `dtypes` (`LLMConfig` checks both); `share` < 1, the part of its GPU's
    memory a copy takes, is for a backend that declares `device_share`. `served` holds the
    openai backend's base_url, prompt_format and concurrency.
    """
    spec = resolve_model(model)
    kind = BACKENDS[backend]  # UnknownNameError listing the backends
    key = (backend, spec.model_id, device, batch_size, tensor_parallel, dtype, share,
           tuple(sorted(served.items())), _api_key_digest() if backend == "openai" else None)
    if key not in _LOADED:
        options = ({"tensor_parallel": tensor_parallel} if tensor_parallel != 1 else {}) | (
            {"dtype": dtype} if dtype is not None else {}) | (
            {"share": share} if share != 1.0 else {}) | served
        _LOADED[key] = kind(
            spec, batch_size=batch_size, device=device, cache_dir=cache_dir, **options)
    loaded = _LOADED[key]
    if not use_cache:
        return loaded
    from labeler.llm.cache import CachedBackend

    return CachedBackend(loaded, cache_dir=cache_dir)


def _api_key_digest() -> str:
    from hashlib import sha256

    from labeler import settings

    return sha256((settings.openai_api_key() or "").encode()).hexdigest()


def answers(backend: str, operation: str) -> bool:
    """Whether `backend` answers the optional `operation` (its class says: `Backend.answers`)."""
    return BACKENDS[backend].answers(operation)


def check_operation(backend: str, operation: str, what: str) -> None:
    """InputError, before any model loads, when `backend` does not answer `operation` (one of
    OPTIONAL_OPERATIONS), which `what` needs; the hint names the built-in backends that do."""
    if not answers(backend, operation):
        answering = [name for name in BUILT_IN if answers(name, operation)]
        raise InputError(f"{what} needs {operation}, which the {backend} backend does not "
                         f"answer (only {', '.join(answering)})", field_name="backend",
                         hint=f"use --backend {answering[0]}")


__all__ = [
    "ALIASES",
    "BACKENDS",
    "OPTIONAL_OPERATIONS",
    "Backend",
    "Chat",
    "ChoiceRequest",
    "Completion",
    "LoglikelihoodRequest",
    "Message",
    "ModelSpec",
    "Sampling",
    "answers",
    "chat",
    "check_operation",
    "load_backend",
    "resolve_model",
    "yes_probability",
]
