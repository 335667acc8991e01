"""The GPU check: hf-backend prefill and decode throughput on an 8B-shaped model, and vllm's
greedy decode beside it where vllm imports (not a test).

    bash benchmarks/gpu.sh                      # on a CUDA machine (docs/measurements.md)
    python benchmarks/bench_gpu.py --smoke      # the same code on the CPU, tiny model, seconds

In one run: (1) the device's matmul rate in the model's dtype (bf16 8192^3 on a GPU, CUDA
events, warm-ups, the mean of several blocks; measured before and after the model work, the
larger is the ceiling); (2) a model of the Llama-3.1-8B configuration written out below, with
random weights, built in bf16 directly on the GPU (no download, nothing written to disk),
wrapped by `HFBackend.from_model` so that every workload runs the backend's own code path:
prefill through `loglikelihood` and `choice_probs` on RAG-sized prompts, decode through
`generate` (greedy, and seeded sampling with n = 10 as SEER does); (3) a table of tokens/s,
model FLOPs per token and model-FLOPs utilisation (MFU) = achieved FLOP/s / the matmul rate,
with the target: prefill >= 40% MFU in bf16; (4) where vllm imports, the greedy-decode workload
again through a vllm engine of the same configuration with vllm's dummy (random) weights, its
tokens/s beside hf's and the ratio vllm/hf (see `vllm_decode`). Results also go to
OUT/gpu_check.json.

The tokenizer is SmolLM2's chat tokenizer (49,152 tokens; the bundled model's, or a folder
saved with --save-tokenizer): prompts use its ids, which all lie inside the model's 128,256;
what the ids mean does not change the work of a forward pass, so token identities are
irrelevant to throughput. Prompts are random words, each one token, so every prefill row has
exactly the length asked for.

Model FLOPs per token: see gpu_model.py; the report and its table: gpu_report.py.
"""

from __future__ import annotations

import os

# Before torch loads OpenMP: spinning worker threads starve each other on shared cores.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import dataclasses
import gc
import platform
import random
import tempfile
import time
from dataclasses import dataclass

import click
import torch
import transformers
from gpu_model import LLAMA_3_1_8B, SMOKE, build_model, forward_flops
from gpu_report import (
    TARGET_MFU,
    VLLM_ROW,
    VLLM_WORKLOAD,
    Result,
    table,
    vllm_row,
    workload_row,
    write,
)
from gpu_timing import StageTimeout, device_name, matmul_rate, sync, time_limit
from rich.console import Console
from transformers import AutoTokenizer, LlamaConfig

from labeler import settings
from labeler.llm.base import ChoiceRequest, LoglikelihoodRequest, Sampling, chat
from labeler.llm.batching import Collator
from labeler.llm.gguf import gguf_snapshot
from labeler.llm.hf import HFBackend
from labeler.llm.models import ModelSpec, model_revision, resolve_model
from labeler.llm.prompts import encode
from labeler.progress import info

#: SEER's sampling of extractions: 10 per prompt, top-k 80, temperature 1
SEER_SAMPLING = {"n": 10, "temperature": 1.0, "top_k": 80, "seed": 0}


@dataclass(frozen=True)
class Workload:
    """One measured call of the backend: `prompts` prompts of `tokens` tokens each (mixed:
    lengths drawn from tokens/2 .. 3 tokens/2), in batches of `batch_size` rows."""

    name: str
    operation: str  # "loglikelihood" | "choice_probs" | "generate"
    prompts: int
    tokens: int
    batch_size: int
    new_tokens: int = 0  # generate: tokens per answer (loglikelihood: continuation tokens)
    n: int = 1  # generate: samples per prompt (n > 1: SEER's sampling)
    mixed: bool = False

    @property
    def prefill(self) -> bool:
        return self.operation != "generate"


#: the measured calls: RAG prompts of ~1k tokens (a question, 5 passages) for prefill;
#: short answers (utility) and SEER's sampled extractions for decode
WORKLOADS = (
    Workload("prefill: loglikelihood", "loglikelihood", 64, 1024, 16, new_tokens=16),
    Workload("prefill: choice_probs (P(yes))", "choice_probs", 64, 1024, 16),
    Workload("prefill: loglikelihood, mixed lengths", "loglikelihood", 64, 1024, 16,
             new_tokens=16, mixed=True),
    Workload("decode: generate, greedy", "generate", 64, 128, 64, new_tokens=128),
    Workload("decode: generate, SEER sampling n=10", "generate", 8, 512, 80, new_tokens=128,
             n=SEER_SAMPLING["n"]),
)
SMOKE_WORKLOADS = (
    Workload("prefill: loglikelihood", "loglikelihood", 4, 96, 2, new_tokens=4),
    Workload("prefill: choice_probs (P(yes))", "choice_probs", 4, 96, 2),
    Workload("prefill: loglikelihood, mixed lengths", "loglikelihood", 4, 96, 2, new_tokens=4,
             mixed=True),
    Workload("decode: generate, greedy", "generate", 4, 48, 4, new_tokens=8),
    Workload("decode: generate, SEER sampling n=10", "generate", 1, 48, 10, new_tokens=4,
             n=SEER_SAMPLING["n"]),
)


def chat_tokenizer(folder: str | None):
    """SmolLM2's chat tokenizer: from `folder` (see --save-tokenizer), else the bundled model."""
    if folder:
        return AutoTokenizer.from_pretrained(folder)
    spec = resolve_model("smollm2-135m")
    return AutoTokenizer.from_pretrained(gguf_snapshot(spec, model_revision(spec), None))


def one_token_words(tokenizer) -> list[str]:
    """Vocabulary entries that are a space and a plain word and encode back to that one token:
    text made of them has exactly one token per word."""
    texts = {i: tokenizer.decode([i]) for i in range(len(tokenizer))}
    words = [t for t in texts.values()
             if t.startswith(" ") and t[1:].isascii() and t[1:].isalpha() and len(t) > 3]
    ids = tokenizer(words, add_special_tokens=False)["input_ids"]
    return sorted(w for w, i in zip(words, ids) if len(i) == 1)


def prompt_of(backend: HFBackend, words: list[str], tokens: int, rng: random.Random,
              answer: int = 0):
    """A one-turn chat whose rendered prompt has exactly `tokens` tokens, and an answer of
    `answer` words (one token each) for loglikelihood."""
    def count(n: int) -> int:
        return backend.count_tokens([backend.render(chat("".join(text[:n])))])[0]

    text = rng.choices(words, k=tokens)
    n = 1 + tokens - count(1)  # each word past the first adds one token
    if n < 1 or count(n) != tokens:
        raise click.ClickException(f"cannot make a prompt of exactly {tokens} tokens")
    return chat("".join(text[:n])), "".join(rng.choices(words, k=answer))


def requests_for(backend: HFBackend, work: Workload, words: list[str], seed: int = 0) -> list:
    """The workload's requests: prompts of `work.tokens` tokens (mixed: tokens/2 .. 3 tokens/2
    with the continuation inside the length)."""
    rng = random.Random(seed)
    lengths = [rng.randint(work.tokens // 2, 3 * work.tokens // 2) if work.mixed else work.tokens
               for _ in range(work.prompts)]
    if work.operation == "loglikelihood":
        pairs = [prompt_of(backend, words, n - work.new_tokens, rng, work.new_tokens)
                 for n in lengths]
        return [LoglikelihoodRequest(context, answer) for context, answer in pairs]
    prompts = [prompt_of(backend, words, n, rng)[0] for n in lengths]
    return [ChoiceRequest(p) for p in prompts] if work.operation == "choice_probs" else prompts


def run_workload(backend: HFBackend, work: Workload, words: list[str], repeats: int) -> Result:
    """Time `work` through the backend: a warm-up on one batch's worth, then `repeats` runs."""
    backend.batch_size = work.batch_size
    requests = requests_for(backend, work, words)
    result, run = (_prefill if work.prefill else _decode)(backend, work, requests)
    run(requests[:work.batch_size if work.prefill else 1])  # warm-up: one batch, one prompt
    for _ in range(repeats):
        sync(backend.device)
        start = time.perf_counter()
        answers = run(requests)
        sync(backend.device)
        result.seconds.append(time.perf_counter() - start)
        # decode: the batch ran all new_tokens steps only while some row was still going
        if not work.prefill and not any(c.capped for a in answers for c in a):
            raise click.ClickException(f"{work.name}: every row stopped before the cap")
    return result


def _prefill(backend: HFBackend, work: Workload, requests: list):
    """The Result to fill for a prefill workload (its tokens, FLOPs, padding), and its call."""
    loglikelihood = work.operation == "loglikelihood"
    lengths = backend.count_tokens(
        [backend.render(r.context) + r.continuation if loglikelihood else backend.render(r.prompt)
         for r in requests])
    kept = work.new_tokens if loglikelihood else 1  # positions whose logits are read
    flops = sum(forward_flops(backend.model.config, n, kept=kept) for n in lengths)
    batches = Collator(lengths, sort_key=int, batch_size=work.batch_size)  # the backend's own
    padded = sum(len(b) * max(lengths[k] for k in b) for b in batches)
    return (Result(work.name, True, len(requests), sum(lengths), flops,
                   padding=1 - sum(lengths) / padded), getattr(backend, work.operation))


def _decode(backend: HFBackend, work: Workload, prompts: list):
    """The Result to fill for a generate workload (tokens generated, FLOPs), and its call:
    each distinct prompt's prefill, then new_tokens - 1 steps per row after it."""
    sampling = Sampling(max_tokens=work.new_tokens) if work.n == 1 else \
        Sampling(max_tokens=work.new_tokens, **SEER_SAMPLING)
    config, steps = backend.model.config, work.new_tokens - 1
    lengths = backend.count_tokens([backend.render(p) for p in prompts])
    flops = sum(forward_flops(config, n) + work.n * forward_flops(config, steps, past=n,
                                                                   kept=steps) for n in lengths)
    rows = len(prompts) * work.n
    return (Result(work.name, False, rows, rows * work.new_tokens, flops),
            lambda chats: backend.generate(chats, sampling))


def vllm_skip_reason(device: torch.device) -> str:
    """Why the vllm row cannot run beside hf's on `device`, or "" when it can: vllm does not
    import, or its build runs on another device."""
    settings.vllm_logging()  # quiets vllm's logging, which vllm sets up on import
    try:
        import vllm  # noqa: F401
    except Exception as exc:  # noqa: BLE001  (a broken build raises more than ImportError)
        return f"import vllm failed ({_one_line(exc.__cause__ or exc)})"
    from vllm.platforms import current_platform

    if current_platform.device_type != device.type:
        return f"this vllm build runs on {current_platform.device_type}, the check on {device.type}"
    return ""


@dataclass
class VllmJob:
    """The vllm row's work: the hf workload `work`'s prompts as the token ids the hf backend
    (and VLLMBackend) feed the model, its chat tokenizer, and the Result to fill (rows, tokens
    and FLOPs as hf's)."""

    work: Workload
    prompts: list[list[int]]
    tokenizer: object
    result: Result

    @classmethod
    def of(cls, backend: HFBackend, work: Workload, words: list[str]) -> VllmJob:
        prompts = requests_for(backend, work, words)
        return cls(work, encode(backend.tokenizer, [backend.render(p) for p in prompts]),
                   backend.tokenizer,
                   dataclasses.replace(_decode(backend, work, prompts)[0], name=VLLM_ROW))


def vllm_decode(job: VllmJob, config: dict, dtype: torch.dtype, repeats: int,
                eager: bool) -> None:
    """Time greedy decoding of `job.work.new_tokens` tokens after each of its prompts through
    vllm.LLM, into `job.result`: the model of `config` with vllm's dummy (random) weights and the
    job's tokenizer, written into a temporary folder; a warm-up on one prompt, then `repeats`
    runs of them all. `eager`: no compilation (minutes on the CPU) and no CUDA graphs.

    Straight through vllm.LLM.generate with TokensPrompt, not labeler's VLLMBackend: that builds
    its engine from the model's weights and takes neither load_format="dummy" (the 8B model's
    16 GB would be written to disk for it) nor enforce_eager. The engine gets hf's dtype and, on
    the CPU, VLLMBackend's options (its KV cache, whole prefills: labeler/llm/vllm.py).
    ignore_eos: every row runs to the cap, as every row of hf's batch runs every step, so both
    count the same tokens."""
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt
    from vllm.platforms import current_platform

    from labeler.llm.vllm import cpu_engine_options

    options = {}
    if current_platform.device_type == "cpu":
        options = cpu_engine_options(config["max_position_embeddings"])
    params = SamplingParams(temperature=0.0, max_tokens=job.work.new_tokens, ignore_eos=True)
    gc.collect()
    torch.cuda.empty_cache()  # what the hf model held, for the engine (a no-op on the CPU)
    with tempfile.TemporaryDirectory() as folder:
        LlamaConfig(**config, architectures=["LlamaForCausalLM"]).save_pretrained(folder)
        job.tokenizer.save_pretrained(folder)
        llm = LLM(model=folder, load_format="dummy", dtype=str(dtype).removeprefix("torch."),
                  enforce_eager=eager, **options)

        def run(ids: list[list[int]]) -> int:
            outputs = llm.generate([TokensPrompt(prompt_token_ids=x) for x in ids], params,
                                   use_tqdm=False)
            return sum(len(c.token_ids) for o in outputs for c in o.outputs)

        run(job.prompts[:1])  # warm-up
        for _ in range(repeats):
            start = time.perf_counter()
            tokens = run(job.prompts)
            job.result.seconds.append(time.perf_counter() - start)
            if tokens != job.result.tokens:
                raise click.ClickException(f"vllm generated {tokens} tokens, not "
                                           f"{job.result.tokens}")


@click.command()
@click.option("--smoke", is_flag=True,
              help="A tiny model of the same architecture on the CPU (or the GPU), in seconds.")
@click.option("--device", help="cpu or cuda (default: cuda; --smoke: cuda if available).")
@click.option("--tokenizer", "tokenizer_dir", type=click.Path(file_okay=False),
              help="A chat tokenizer folder (default: the bundled SmolLM2's).")
@click.option("--out", type=click.Path(file_okay=False), default=lambda: os.environ.get("OUT"),
              help="Write gpu_check.json here.  [default: $OUT]")
@click.option("--repeats", default=3, show_default=True, help="Timed runs per workload.")
@click.option("--stage-timeout", default=90, show_default=True,
              help="Seconds each stage (build, each workload) may run.")
@click.option("--vllm-timeout", default=240, show_default=True,
              help="Seconds the vllm stage (its engine's start, compilation, runs) may run.")
@click.option("--save-tokenizer", type=click.Path(file_okay=False),
              help="Only save the chat tokenizer (no weights) into this folder, and exit.")
def main(smoke, device, tokenizer_dir, out, repeats, stage_timeout, vllm_timeout,
         save_tokenizer) -> None:
    """hf-backend prefill and decode throughput and MFU on an 8B-shaped model, and vllm's
    greedy decode beside it where vllm imports."""
    if save_tokenizer:
        chat_tokenizer(tokenizer_dir).save_pretrained(save_tokenizer, legacy_format=False)
        return
    place = _place(device, smoke)
    dtype = torch.bfloat16 if place.type == "cuda" else torch.float32  # the hf backend's choice
    config = LlamaConfig(**(SMOKE if smoke else LLAMA_3_1_8B))
    workloads = SMOKE_WORKLOADS if smoke else WORKLOADS
    report = {"smoke": smoke, "device": device_name(place), "dtype": str(dtype)[6:],
              "torch": torch.__version__, "transformers": transformers.__version__,
              "python": platform.python_version(), "target_mfu": TARGET_MFU,
              "config": (SMOKE if smoke else LLAMA_3_1_8B), "matmul": [], "workloads": []}
    size = 256 if smoke else 8192

    info(f"matmul {size}^3 in {dtype} on {report['device']}")
    with time_limit(stage_timeout, "matmul"):
        report["matmul"].append(matmul_rate(place, dtype, size))
    info("building the model with random weights")
    with time_limit(stage_timeout, "build"):
        model = build_model(config, place, dtype)
        backend = HFBackend.from_model(ModelSpec("llama-random", "random-weights", local=False),
                                       model, chat_tokenizer(tokenizer_dir), revision="seed-0")
        if len(backend.tokenizer) > config.vocab_size:
            raise click.ClickException("the tokenizer's ids do not all fit the model's vocabulary")
        words = one_token_words(backend.tokenizer)
    report["parameters"] = sum(p.numel() for p in model.parameters())
    report["attention"] = model.config._attn_implementation
    results = []
    for work in workloads:
        info(f"{work.name}: {work.prompts} prompts x {work.tokens} tokens")
        try:
            with time_limit(stage_timeout, work.name):
                results.append(run_workload(backend, work, words, repeats))
        except StageTimeout as exc:
            results.append(Result(work.name, work.prefill, 0, 0, 0, error=exc.message))
        report["workloads"] = [workload_row(r, max(report["matmul"])) for r in results]
        write(out, report)
    skipped = vllm_skip_reason(place)
    if not skipped:
        job = VllmJob.of(backend, next(w for w in workloads if w.name == VLLM_WORKLOAD), words)
    del backend, model
    with time_limit(stage_timeout, "matmul"):
        report["matmul"].append(matmul_rate(place, dtype, size))
    ceiling = max(report["matmul"])  # the larger: the lower MFU
    report["workloads"] = [workload_row(r, ceiling) for r in results]
    prefill = [w for w in report["workloads"] if w["prefill"]]
    report["target_met"] = all(w["met"] for w in prefill)
    write(out, report)

    if skipped:
        click.echo(f"vllm decode: skipped: {skipped}")  # one line, as gpu.sh's own
        report["vllm"] = {"skipped": skipped}
    else:  # last, alone: its engine takes most of the device's free memory
        _vllm_stage(report, job, dtype, repeats, smoke, vllm_timeout, ceiling)
    write(out, report)
    Console(width=160).print(table(report, size))


def _place(device: str | None, smoke: bool) -> torch.device:
    """The device asked for (default: the GPU, or the CPU for --smoke without one); a usage
    error where the check cannot run there."""
    place = torch.device(device or ("cuda" if torch.cuda.is_available() or not smoke else "cpu"))
    if place.type != "cuda" and not smoke:
        raise click.UsageError("the 8B-shaped model needs a CUDA GPU: use --smoke on the CPU")
    if place.type == "cuda" and not torch.cuda.is_available():
        raise click.UsageError("torch sees no CUDA GPU: run with --smoke on the CPU")
    return place


def _vllm_stage(report: dict, job: VllmJob, dtype: torch.dtype, repeats: int, smoke: bool,
                seconds: int, ceiling: float) -> None:
    """The vllm row: `job` through a vllm engine of the same model, into the report."""
    import vllm

    report["vllm"] = {"version": vllm.__version__, "enforce_eager": smoke}
    info(f"vllm {vllm.__version__}: an engine of the same model with dummy weights")
    try:
        with time_limit(seconds, "vllm"):
            vllm_decode(job, report["config"], dtype, repeats, eager=smoke)
    except Exception as exc:  # noqa: BLE001  (vllm raises many types: it did not run)
        job.result.error = f"vllm: {_one_line(exc)}"
    report["workloads"].append(vllm_row(job.result, report["workloads"], ceiling))


def _one_line(exc: BaseException) -> str:
    """An exception as a traceback ends: "ModuleNotFoundError: No module named 'vllm'" (the
    message's first line)."""
    return f"{type(exc).__name__}: {exc}".splitlines()[0]


if __name__ == "__main__":
    main()
