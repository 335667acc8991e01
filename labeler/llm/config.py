"""How to load one LLM (the config `labeler build` and `labeler score --llm` share), and what
names a loaded one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from labeler.errors import InputError
from labeler.llm.base import Backend

#: how the openai backend sends a prompt: "chat" (messages, the server's chat template) or
#: "text" (labeler's rendered prompt)
PROMPT_FORMATS = ("chat", "text")


@dataclass(frozen=True)
class LLMConfig:
    """One model and how it runs; what changes answers is also in the call cache's keys."""

    name: str  # alias, HF repo id, local folder or .gguf file
    backend: str = "hf"  # a name in labeler.llm.BACKENDS: hf, vllm, openai or a plugin's
    batch_size: int | None = None  # None: the backend's default_batch_size
    device: str | None = None  # e.g. cpu, cuda:0; None: the best available
    tensor_parallel: int = 1  # GPUs one model is split over (a backend that declares it)
    dtype: str | None = None  # the weights' dtype (one of the backend's dtypes); None: its default
    base_url: str | None = None  # openai: the server's API root; None: $OPENAI_BASE_URL
    prompt_format: str = "chat"  # openai: chat (the server's template) or text (labeler's)
    concurrency: int | None = None  # openai: requests in flight; None: the backend's default
    # (call kind, dtype) pairs: a kind (a call's `what`) asked of the model loaded in that dtype
    # (None: the backend's default) instead of `dtype`, as the utility paper's scripts each load
    # it in their own; empty: every call in `dtype`
    call_dtypes: tuple[tuple[str, str | None], ...] = ()
    served_model: str | None = None  # openai: the model's name on the server; None: found
    max_rps: float | None = None  # openai: requests a second at most; None: no limit
    max_tpm: int | None = None  # openai: tokens a minute at most; None: no limit
    price_in: float | None = None  # openai: dollars per million prompt tokens (the cost line)
    price_out: float | None = None  # openai: dollars per million completion tokens

    def __post_init__(self) -> None:
        if self.batch_size is not None and self.batch_size < 1:
            raise InputError(f"batch size must be at least 1, got {self.batch_size}",
                             field_name="batch_size")
        if self.tensor_parallel < 1:
            raise InputError(f"tensor parallel size must be at least 1, got "
                             f"{self.tensor_parallel}", field_name="tensor_parallel")
        kind = self.kind  # UnknownNameError listing the backends
        if self.tensor_parallel > 1 and not kind.tensor_parallel:
            splitting = _built_in(lambda other: other.tensor_parallel)
            raise InputError(f"the {self.backend} backend runs a model on one device: tensor "
                             f"parallelism needs the {' or '.join(splitting)} backend",
                             field_name="tensor_parallel", hint=f"add --backend {splitting[0]}, "
                             "or leave out --tensor-parallel")
        self._check_served()
        taken = kind.dtypes
        for dtype in {self.dtype, *(d for _, d in self.call_dtypes)} - {None}:
            if dtype not in taken:
                raise InputError(
                    f"the {self.backend} backend takes no dtype '{dtype}'"
                    + (f": use one of {', '.join(taken)}" if taken else ""), field_name="dtype")

    def _check_served(self) -> None:
        """The openai backend's options: a known prompt format, and none of them elsewhere."""
        if self.prompt_format not in PROMPT_FORMATS:
            raise InputError(f"unknown prompt format '{self.prompt_format}' (use one of "
                             f"{', '.join(PROMPT_FORMATS)})", field_name="prompt_format")
        if self.concurrency is not None and self.concurrency < 1:
            raise InputError(f"concurrency must be at least 1, got {self.concurrency}",
                             field_name="concurrency")
        given = [name for name, value in (("--base-url", self.base_url),
                                          ("--concurrency", self.concurrency),
                                          ("--prompt-format", self.prompt_format != "chat"),
                                          ("--served-model", self.served_model),
                                          ("--max-rps", self.max_rps),
                                          ("--max-tpm", self.max_tpm),
                                          ("--price-in", self.price_in is not None),
                                          ("--price-out", self.price_out is not None))
                 if value]
        if given and self.backend != "openai":
            raise InputError(f"{given[0]} is for a served model: the {self.backend} backend "
                             "runs it here", field_name=given[0].lstrip("-").replace("-", "_"),
                             hint="add --backend openai")

    @property
    def kind(self) -> type[Backend]:
        """The backend's class, whose declarations say what it takes."""
        from labeler.llm import BACKENDS

        return BACKENDS[self.backend]

    def on_hf(self) -> LLMConfig:
        """The same model on the hf backend, for an operation only hf answers: vllm's batch
        size and tensor parallelism dropped, its dtype kept where hf has it (float32, bfloat16)
        and else left to hf's default."""
        from labeler.llm import BACKENDS

        if self.backend == "hf":
            return self
        taken = BACKENDS["hf"].dtypes
        dtype = self.dtype if self.dtype in taken else None
        kinds = tuple((kind, d if d in taken else None) for kind, d in self.call_dtypes)
        return replace(self, backend="hf", batch_size=None, tensor_parallel=1, dtype=dtype,
                       base_url=None, prompt_format="chat", concurrency=None,
                       call_dtypes=kinds, served_model=None, max_rps=None, max_tpm=None,
                       price_in=None, price_out=None)

    @property
    def gpus(self) -> int:
        """GPUs one loaded copy holds: the tensor-parallel size of a backend that splits a
        model over GPUs (vllm), one on a CUDA device, else none."""
        if self.kind.tensor_parallel:
            return self.tensor_parallel
        return 1 if (self.device or "cpu").startswith("cuda") else 0

    def load(self, cache_dir: str | Path | None = None) -> Backend:
        """The loaded model behind the persistent call cache (loaded once per process)."""
        return self._load(self.dtype, cache_dir)

    def _load(self, dtype: str | None, cache_dir: str | Path | None) -> Backend:
        """The model in `dtype`; on a backend with `device_share`, each of the dtypes this
        config loads takes an equal share of the GPU's memory."""
        from labeler.llm import load_backend

        dtypes = {self.dtype, *(d for _, d in self.call_dtypes)}
        share = 1.0 / len(dtypes) if self.kind.device_share else 1.0
        return load_backend(self.name, backend=self.backend, batch_size=self.batch_size,
                            device=self.device, tensor_parallel=self.tensor_parallel,
                            dtype=dtype, cache_dir=cache_dir, share=share, **self.served())

    def router(self, cache_dir: str | Path | None = None
               ) -> Callable[[str], Backend | None] | None:
        """`Calls`' route: the backend a call kind of `call_dtypes` is asked of where its dtype
        is not `dtype` (loaded on its first call, once per process), else None."""
        dtypes = {kind: dtype for kind, dtype in self.call_dtypes if dtype != self.dtype}
        if not dtypes:
            return None

        loaded: dict[str | None, Backend] = {}  # one backend a dtype, so Calls batches by it

        def route(what: str) -> Backend | None:
            if what not in dtypes:
                return None
            dtype = dtypes[what]
            if dtype not in loaded:
                loaded[dtype] = self._load(dtype, cache_dir)
            return loaded[dtype]

        return route

    def served(self) -> dict:
        """The openai backend's options that differ from its defaults (the prices are
        labeler's, for the cost line)."""
        return {k: v for k, v in (("base_url", self.base_url), ("concurrency", self.concurrency),
                                  ("prompt_format", self.prompt_format),
                                  ("served_model", self.served_model),
                                  ("max_rps", self.max_rps), ("max_tpm", self.max_tpm))
                if v not in (None, "chat")}

    def identify(self, cache_dir: str | Path | None = None, needs: tuple[str, ...] = (),
                 what: str = "") -> ModelIdentity:
        """Load the model (a model that cannot load fails now) and say what names it; one
        that refuses an operation of `needs`, which `what` asks, fails now too, before any
        request."""
        model = self.load(cache_dir)
        for operation in needs:
            if why := model.refusal(operation):
                raise InputError(f"{what} needs {operation}, which needs {why}",
                                 field_name="backend", hint="use --backend hf or vllm, or a "
                                 f"server that answers {operation}")
        return ModelIdentity.of(model)

    def describe(self) -> dict:
        """The config for a published manifest: a local model by its file or folder name."""
        from labeler.llm.models import resolve_model

        served = {"prompt_format": self.prompt_format} if self.backend == "openai" else {}
        dtypes = {"call_dtypes": dict(self.call_dtypes)} if self.call_dtypes else {}
        return {"model": resolve_model(self.name).identity, "backend": self.backend,
                "batch_size": self.batch_size, "device": self.device,
                "tensor_parallel": self.tensor_parallel, "dtype": self.dtype, **served,
                **dtypes}


def _built_in(declares) -> list[str]:
    """The built-in backends whose class `declares` (a test of it) holds."""
    from labeler.llm import BACKENDS, BUILT_IN

    return [name for name in BUILT_IN if declares(BACKENDS[name])]


@dataclass(frozen=True)
class ModelIdentity:
    """What names a model in a build: its folder, the manifest's revision, the build id's key."""

    alias: str
    revision: str
    key: dict

    @classmethod
    def of(cls, model: Backend) -> ModelIdentity:
        return cls(model.alias, model.revision, model.key())
