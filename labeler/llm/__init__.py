"""LLM backends behind one contract, model aliases, and the persistent call cache.

    backend = load_backend("smollm2-135m")          # hf backend, cached calls
    backend.generate([chat("Who wrote Hamlet?")], Sampling(max_tokens=16))  # [[Completion]]
"""

from __future__ import annotations

from pathlib import Path

from labeler.errors import InputError
from labeler.lazy import Registry
from labeler.llm.base import (
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

#: backend name -> its class, imported only when asked for (vllm stays optional); installed
#: packages add theirs under the entry-point group `labeler.backends`
BUILT_IN = {"hf": "labeler.llm.hf:HFBackend", "vllm": "labeler.llm.vllm:VLLMBackend",
            "openai": "labeler.llm.openai_api:OpenAIBackend"}
BACKENDS = Registry("backend", BUILT_IN, group="labeler.backends")
#: backend name -> the weight dtypes it can be asked for (`--dtype`); none: it takes no dtype
DTYPES: dict[str, tuple[str, ...]] = {"hf": ("float32", "bfloat16"),
                                      "vllm": ("auto", "float16", "bfloat16", "float32")}

#: operations beyond the contract's three -> the built-in backends that answer them (a
#: plugin's backend answers those its class implements)
OPTIONAL_OPERATIONS = {"attention": ("hf",), "loglikelihood_rolling": ("hf",),
                       "count_tokens": ("hf", "vllm", "openai")}

#: models loaded in this process, so that each is loaded once:
#: (backend, model, device, batch, tensor parallel, dtype, served options, the API key's
#: digest: another key is another client)
_LOADED: dict[tuple, Backend] = {}


def load_backend(model: str, *, backend: str = "hf", batch_size: int | None = None,
                 device: str | None = None, tensor_parallel: int = 1, dtype: str | None = None,
                 cache_dir: str | Path | None = None, use_cache: bool = True,
                 **served) -> Backend:
    """Load `model` (alias, HF repo id, local folder or .gguf) eagerly, raising ModelLoadError
    before any work; wrapped in the persistent call cache unless `use_cache` is False. A model
    is loaded once per process; later calls share it.

    `batch_size` defaults to 8 rows per forward pass for hf and 256 requests per engine call
    for vllm (which batches continuously inside a call). `tensor_parallel` > 1 (GPUs one
    model is split over) is for vllm only; `dtype` is one of the backend's DTYPES (`LLMConfig`
    checks both). `served` holds the openai backend's base_url, prompt_format and
    concurrency.
    """
    spec = resolve_model(model)
    kind = BACKENDS[backend]  # UnknownNameError listing the backends
    key = (backend, spec.model_id, device, batch_size, tensor_parallel, dtype,
           tuple(sorted(served.items())), _api_key_digest() if backend == "openai" else None)
    if key not in _LOADED:
        options = ({"tensor_parallel": tensor_parallel} if tensor_parallel != 1 else {}) | (
            {"dtype": dtype} if dtype is not None else {}) | served
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
    """Whether `backend` answers the optional `operation`: a built-in one as
    OPTIONAL_OPERATIONS says (without importing it), a plugin's if its class implements it."""
    if backend in BUILT_IN:
        return backend in OPTIONAL_OPERATIONS[operation]
    # a backend that tokenizes counts tokens too (`Backend.count_tokens`)
    names = (operation, "tokenize") if operation == "count_tokens" else (operation,)
    return any(getattr(BACKENDS[backend], name) is not getattr(Backend, name) for name in names)


def check_operation(backend: str, operation: str, what: str) -> None:
    """InputError, before any model loads, when `backend` does not answer `operation` (one of
    OPTIONAL_OPERATIONS), which `what` needs."""
    answering = OPTIONAL_OPERATIONS[operation]
    if not answers(backend, operation):
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
    "chat",
    "check_operation",
    "load_backend",
    "resolve_model",
    "yes_probability",
]
