"""The GPU check: hf-backend prefill and decode throughput on an 8B-shaped model, and vllm's
greedy decode beside it where vllm imports (not a test).

    bash benchmarks/gpu.sh                      # on a CUDA machine (see README, "GPU check")
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

Model FLOPs (useful work; padding and recomputation are not counted): a forward pass over
`new` tokens after `past` cached ones, with logits for `kept` positions, costs
2 x W x new + 2 x V x d x kept + 4 x L x d_attn x sum(t for t in past+1 .. past+new),
W the weights of the layers' matrix products, V x d the LM head, d_attn = heads x head_dim:
a query at position t scores and mixes t keys (causal), 2 x d_attn FLOPs for each.
"""

from __future__ import annotations

import os

# Before torch loads OpenMP: spinning worker threads starve each other on shared cores.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import dataclasses
import gc
import json
import platform
import random
import signal
import statistics
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import click
import torch
import transformers
from rich.console import Console
from rich.table import Table
from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig

from labeler.llm.base import ChoiceRequest, LoglikelihoodRequest, Sampling, chat
from labeler.llm.batching import Collator
from labeler.llm.gguf import gguf_snapshot
from labeler.llm.hf import HFBackend
from labeler.llm.models import ModelSpec, model_revision, resolve_model
from labeler.llm.prompts import encode
from labeler.progress import info

#: meta-llama/Llama-3.1-8B-Instruct's config.json, written out: no download
LLAMA_3_1_8B = {
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
    "rope_theta": 500000.0,
    "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                     "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
    "rms_norm_eps": 1e-5,
    "hidden_act": "silu",
    "attention_bias": False,
    "mlp_bias": False,
    "tie_word_embeddings": False,
    "initializer_range": 0.02,
    "bos_token_id": 128000,
    "eos_token_id": [128001, 128008, 128009],
}
#: --smoke: the same architecture shrunk to run on a CPU in seconds (vocabulary kept; heads of
#: 32, the smallest vllm's CPU attention takes)
SMOKE = LLAMA_3_1_8B | {"hidden_size": 64, "intermediate_size": 224, "num_hidden_layers": 2,
                        "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 32}

#: prefill MFU the issue asks of the hf backend in bf16 on a GPU
TARGET_MFU = 0.40
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
#: the workload vllm runs too, and its row's name
VLLM_WORKLOAD = "decode: generate, greedy"
VLLM_ROW = f"{VLLM_WORKLOAD} (vllm)"
SMOKE_WORKLOADS = (
    Workload("prefill: loglikelihood", "loglikelihood", 4, 96, 2, new_tokens=4),
    Workload("prefill: choice_probs (P(yes))", "choice_probs", 4, 96, 2),
    Workload("prefill: loglikelihood, mixed lengths", "loglikelihood", 4, 96, 2, new_tokens=4,
             mixed=True),
    Workload("decode: generate, greedy", "generate", 4, 48, 4, new_tokens=8),
    Workload("decode: generate, SEER sampling n=10", "generate", 1, 48, 10, new_tokens=4,
             n=SEER_SAMPLING["n"]),
)


@dataclass
class Result:
    """What one workload measured; `flops` counts useful model FLOPs (see the docstring)."""

    name: str
    prefill: bool  # the target applies
    rows: int  # sequences the model ran (prompts x samples)
    tokens: int  # prefill: prompt tokens; decode: generated tokens
    flops: int
    seconds: list[float] = field(default_factory=list)  # each timed repeat
    padding: float = 0.0  # share of the padded batches' positions that are padding
    error: str = ""  # why the workload did not finish

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)


def matmul_weights(config) -> tuple[int, int]:
    """(W, V x d): the weights of one token's matrix products in the layers, and the LM head's.

    >>> matmul_weights(LlamaConfig(**LLAMA_3_1_8B))
    (6979321856, 525336576)
    """
    d, hd = config.hidden_size, config.head_dim
    attention = d * hd * (2 * config.num_attention_heads + 2 * config.num_key_value_heads)
    return (config.num_hidden_layers * (attention + 3 * d * config.intermediate_size),
            config.vocab_size * d)


def forward_flops(config, new: int, *, past: int = 0, kept: int = 1) -> int:
    """Model FLOPs of one sequence's forward pass over `new` tokens after `past` cached ones,
    with logits for `kept` positions: 2 W new + 2 V d kept + 4 L d_attn sum(past+1..past+new).

    >>> forward_flops(LlamaConfig(**SMOKE), 1)  # 2 (110,592 + 8,208,384) + 4 x 2 x 64 x 1 key
    16638464
    """
    layers, head = matmul_weights(config)
    keys = new * past + new * (new + 1) // 2  # keys each new query attends, summed
    d_attn = config.num_attention_heads * config.head_dim
    return 2 * layers * new + 2 * head * kept + 4 * config.num_hidden_layers * d_attn * keys


def build_model(config: LlamaConfig, device: torch.device, dtype: torch.dtype, seed: int = 0):
    """A LlamaForCausalLM of `config` with random weights, made in `dtype` directly on
    `device` (its own init: normal, std 0.02); SDPA attention as from_pretrained would pick."""
    torch.manual_seed(seed)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    linear = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))
    if linear != sum(matmul_weights(config)):
        raise click.ClickException(f"the model has {linear} matrix-product weights, the FLOPs "
                                   f"formula counts {sum(matmul_weights(config))}")
    return model


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
        _sync(backend.device)
        start = time.perf_counter()
        answers = run(requests)
        _sync(backend.device)
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
    try:
        import labeler.llm.vllm  # noqa: F401  (quiets vllm's logging, then imports vllm)
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


def matmul_rate(device: torch.device, dtype: torch.dtype, n: int, blocks: int = 5,
                per_block: int = 10) -> float:
    """FLOP/s of an n x n x n matrix product on random data: warm-ups, then the mean of
    `blocks` timed blocks of `per_block` products (CUDA events on a GPU)."""
    a, b = (torch.randn(n, n, device=device, dtype=dtype) for _ in range(2))
    out = torch.empty(n, n, device=device, dtype=dtype)
    for _ in range(per_block):
        torch.matmul(a, b, out=out)
    rates = []
    for _ in range(blocks):
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(per_block):
                torch.matmul(a, b, out=out)
            end.record()
            end.synchronize()
            seconds = start.elapsed_time(end) / 1e3
        else:
            begin = time.perf_counter()
            for _ in range(per_block):
                torch.matmul(a, b, out=out)
            seconds = time.perf_counter() - begin
        rates.append(2 * n**3 * per_block / seconds)
    return statistics.mean(rates)


class StageTimeout(click.ClickException):
    """A stage ran past its time limit."""


@contextmanager
def time_limit(seconds: int, stage: str):
    """Raise StageTimeout in the block once `seconds` have passed (SIGALRM, main thread)."""
    def expire(signum, frame):
        raise StageTimeout(f"{stage}: timed out after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


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
    place = torch.device(device or ("cuda" if torch.cuda.is_available() or not smoke else "cpu"))
    if place.type != "cuda" and not smoke:
        raise click.UsageError("the 8B-shaped model needs a CUDA GPU: use --smoke on the CPU")
    if place.type == "cuda" and not torch.cuda.is_available():
        raise click.UsageError("torch sees no CUDA GPU: run with --smoke on the CPU")
    dtype = torch.bfloat16 if place.type == "cuda" else torch.float32  # the hf backend's choice
    config = LlamaConfig(**(SMOKE if smoke else LLAMA_3_1_8B))
    workloads = SMOKE_WORKLOADS if smoke else WORKLOADS
    report = {"smoke": smoke, "device": _device_name(place), "dtype": str(dtype)[6:],
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
        report["workloads"] = [_row(r, max(report["matmul"])) for r in results]
        _write(out, report)
    skipped = vllm_skip_reason(place)
    if not skipped:
        job = VllmJob.of(backend, next(w for w in workloads if w.name == VLLM_WORKLOAD), words)
    del backend, model
    with time_limit(stage_timeout, "matmul"):
        report["matmul"].append(matmul_rate(place, dtype, size))
    ceiling = max(report["matmul"])  # the larger: the lower MFU
    report["workloads"] = [_row(r, ceiling) for r in results]
    prefill = [w for w in report["workloads"] if w["prefill"]]
    report["target_met"] = all(w["met"] for w in prefill)
    _write(out, report)

    if skipped:
        click.echo(f"vllm decode: skipped: {skipped}")  # one line, as gpu.sh's own
        report["vllm"] = {"skipped": skipped}
    else:  # last, alone: its engine takes most of the device's free memory
        import vllm

        report["vllm"] = {"version": vllm.__version__, "enforce_eager": smoke}
        info(f"vllm {vllm.__version__}: an engine of the same model with dummy weights")
        try:
            with time_limit(vllm_timeout, "vllm"):
                vllm_decode(job, report["config"], dtype, repeats, eager=smoke)
        except Exception as exc:  # noqa: BLE001  (vllm raises many types: it did not run)
            job.result.error = f"vllm: {_one_line(exc)}"
        report["workloads"].append(_vllm_row(job.result, report["workloads"], ceiling))
    _write(out, report)
    Console(width=160).print(_table(report, size))


def _row(result: Result, ceiling: float) -> dict:
    """One workload's JSON: its measures and MFU against `ceiling` FLOP/s."""
    if result.error:
        return {"name": result.name, "prefill": result.prefill, "error": result.error,
                "met": False}
    flops_per_s = result.flops / result.median
    mfu = flops_per_s / ceiling
    return {"name": result.name, "prefill": result.prefill, "rows": result.rows, "tokens": result.tokens,
            "seconds": result.seconds, "median_s": result.median,
            "tokens_per_s": result.tokens / result.median, "flops": result.flops,
            "flops_per_token": result.flops / result.tokens, "flops_per_s": flops_per_s,
            "mfu": mfu, "padding": result.padding,
            "met": mfu >= TARGET_MFU if result.prefill else None}


def _vllm_row(result: Result, rows: list[dict], ceiling: float) -> dict:
    """The vllm row's JSON, with its tokens/s over the hf row's of the same workload."""
    row, hf = _row(result, ceiling), next(w for w in rows if w["name"] == VLLM_WORKLOAD)
    if "error" not in row and "error" not in hf:
        row["vllm_over_hf"] = row["tokens_per_s"] / hf["tokens_per_s"]
    return row


def _table(report: dict, size: int) -> Table:
    smoke = " (smoke: a tiny model, not the target's setting)" if report["smoke"] else ""
    table = Table(title=f"GPU check: hf backend, Llama-3.1-8B shape with random weights, "
                        f"{report['parameters'] / 1e9:.2f} B parameters, {report['dtype']}, "
                        f"{report['attention']} attention, {report['device']}{smoke}")
    for column in ("measure", "rows", "tokens", "tokens/s", "FLOP/token", "FLOP/s", "MFU",
                   "target"):
        table.add_column(column, justify="left" if column in ("measure", "target") else "right")
    for k, rate in enumerate(report["matmul"]):
        table.add_row(f"matmul {size}^3, {report['dtype']} ({('before', 'after')[k]})", "", "",
                      "", "", _si(rate), "", "the ceiling" if rate == max(
                          report["matmul"]) else "")
    for w in report["workloads"]:
        if "error" in w:
            table.add_row(w["name"], "", "", "", "", "", "", f"[red]{w['error']}")
            continue
        padding = f", {w['padding']:.0%} padding" if w["padding"] else ""
        verdict = f"vllm/hf {w['vllm_over_hf']:.2f}x" if "vllm_over_hf" in w else \
            "" if w["met"] is None else \
            f">= {TARGET_MFU:.0%} " + ("[green]met" if w["met"] else "[red]not met")
        table.add_row(w["name"] + padding, f"{w['rows']}", f"{w['tokens']:,}",
                      f"{w['tokens_per_s']:,.1f}", _si(w["flops_per_token"]),
                      _si(w["flops_per_s"]), f"{w['mfu']:.1%}", verdict)
    vllm = report["vllm"]
    if "skipped" in vllm:
        table.add_row(VLLM_ROW, "", "", "", "", "", "", "[yellow]skipped")
    table.caption = (f"prefill >= {TARGET_MFU:.0%} MFU in bf16: "
                     + ("met" if report["target_met"] else "NOT met") + smoke
                     + ". FLOPs/token = (2 W new + 2 V d kept + 4 L d_attn sum t) / tokens; "
                     "decode rows include each prompt's prefill. (vllm): "
                     + (f"skipped: {vllm['skipped']}" if "skipped" in vllm else
                        f"vllm {vllm['version']}'s LLM.generate on the same prompts in the same "
                        f"dtype, dummy weights{', eager' if vllm['enforce_eager'] else ''}"))
    return table


def _one_line(exc: BaseException) -> str:
    """An exception as a traceback ends: "ModuleNotFoundError: No module named 'vllm'" (the
    message's first line)."""
    return f"{type(exc).__name__}: {exc}".splitlines()[0]


def _si(value: float) -> str:
    """FLOPs with a prefix: 0.92 M, 15.27 G, 612.4 T."""
    if value >= 1e12:
        return f"{value / 1e12:,.1f} T"
    return f"{value / 1e9:,.2f} G" if value >= 1e9 else f"{value / 1e6:,.2f} M"


def _write(out: str | None, report: dict) -> None:
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / "gpu_check.json").write_text(json.dumps(report, indent=1))


def _device_name(device: torch.device) -> str:
    return torch.cuda.get_device_name(device) if device.type == "cuda" else \
        f"cpu ({torch.get_num_threads()} threads)"


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


if __name__ == "__main__":
    main()
