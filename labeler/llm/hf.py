"""The `hf` backend: transformers on CPU (float32) or CUDA (bfloat16) unless `dtype` says
otherwise, batched with left padding.

Rows are batched by the shared Collator: longest first, `batch_size` rows at a time, the n samples
of a prompt always in one batch. Left padding with an attention mask and position ids from the
mask gives each row the same answer alone or in any batch. `generate` runs one running batch
(`labeler.llm.decoding`), shortest prompt first: a row leaves it as soon as its answer ends and
the next prompts take its place; sampling is seeded per row (see `prompts.row_seed`), so a sample
is a pure function of (prompt, sampling) and safe to cache. The n samples of a prompt share one
prefill of it, a call's prompts the prefill of a prefix many of them begin with (`decoding`),
and `choice_probs` chats that continue one conversation (`chat_prefix`: a
document, then each of its questions) share one prefill of their common tokens, each row then
running only its tail.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

from labeler.errors import InputError, ModelLoadError
from labeler.lazy import LazyModule
from labeler.llm.base import (
    CHOICE_TOKENS,
    AttentionRequest,
    AttentionResult,
    Backend,
    Chat,
    ChoiceRequest,
    Completion,
    LoglikelihoodRequest,
    Prompt,
    Sampling,
    check_lengths,
    gathered,
)
from labeler.llm.batching import Collator, chat_prefix, common_prefix
from labeler.llm.gguf import gguf_snapshot
from labeler.llm.models import ModelSpec, model_revision
from labeler.llm.prompts import (
    choice_ids,
    continuation_ids,
    encode,
    render_chat,
    row_seed,
)
from labeler.network import cause_line, quiet_retries
from labeler.progress import progress_bar, transformers_quiet

# imported when a model loads, so that naming the backend (its declarations, `--help`) is cheap
torch = LazyModule("torch")
# lean_transformers first: it keeps scikit-learn unimported
transformers = LazyModule("transformers", "labeler.llm.lean_transformers")
safetensors = LazyModule("safetensors")

#: torch threads of every CPU computation, whatever the machine or executor: small matrix
#: products (a decode step's, the last positions' logits) split their sums by thread, so with
#: the cores' count the answers' log-probabilities changed in their last bits and a Ray worker
#: (one CPU) wrote other bytes than a local build; parallelism on a CPU comes from workers
CPU_THREADS = 1


#: the weights' dtype on a device type unless `dtype` (one of HFBackend.dtypes) says
#: otherwise; on the CPU float32: bfloat16 prefills faster but decodes no faster and changes
#: answers (docs/installation.md, the hf backend)
DEFAULT_DTYPES = {"cpu": "float32", "cuda": "bfloat16"}


#: batches of requests per call the call cache makes (`call_size`) of the operations other than
#: `generate` (which streams every request of a call through one running batch)
QUEUED_BATCHES = 8


@contextmanager
def fixed_threads(device: torch.device) -> Iterator[None]:
    """CPU_THREADS torch threads on the CPU in this thread (a thread's own setting), then the
    ones before."""
    if device.type != "cpu":
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(CPU_THREADS)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _fixed_threads(operation):
    """Run a backend operation under `fixed_threads`."""
    @functools.wraps(operation)
    def run(self, *args, **kwargs):
        with fixed_threads(self.device):
            return operation(self, *args, **kwargs)
    return run


def _inference_mode(forward):
    """Run a forward pass under torch's inference mode."""
    @functools.wraps(forward)
    def run(*args, **kwargs):
        with torch.inference_mode():
            return forward(*args, **kwargs)
    return run


class HFBackend(Backend):
    """A transformers causal LM answering the contract's operations, the optional ones too, in
    length-sorted batches."""

    dtypes = ("float32", "bfloat16")
    dtype_default = "float32 on the CPU, bfloat16 on a GPU"
    default_batch_size = 8  # rows per forward pass

    def __init__(self, spec: ModelSpec, *, batch_size: int | None = None,
                 device: str | None = None, cache_dir: str | Path | None = None,
                 dtype: str | None = None) -> None:
        batch_size = _batch_size(batch_size)  # a bad size fails before the load
        place = _device(device)
        dtype = getattr(torch, dtype or DEFAULT_DTYPES.get(place.type, "float32"))
        source = spec.model_id
        try:
            if spec.gguf:
                source = gguf_snapshot(spec, model_revision(spec), cache_dir)
            # a local folder's loading bar is noise; a Hub model's download bars are not
            with quiet_retries(), transformers_quiet() if spec.local else nullcontext():
                tokenizer = transformers.AutoTokenizer.from_pretrained(source)
                model = transformers.AutoModelForCausalLM.from_pretrained(
                    source, dtype=dtype, device_map={"": place})
        except (OSError, ValueError, KeyError, RuntimeError, ImportError,
                safetensors.SafetensorError) as exc:
            hint = "" if spec.local else "a Hub model needs network access or a copy in the " \
                "local Hugging Face cache; `labeler models` lists the aliases"
            if source != spec.model_id:  # the converted copy is there but does not load
                hint = f"its converted copy {source} may be damaged: remove it (rm -r " \
                    f"{source}) and the next load converts the model again"
            raise ModelLoadError(spec.model_id, cause_line(exc), hint=hint) from exc
        # the revision after loading: a Hub model's commit is now cached
        self._adopt(spec, model, tokenizer, revision=model_revision(spec), batch_size=batch_size)

    @classmethod
    def from_model(cls, spec: ModelSpec, model, tokenizer, *, revision: str,
                   batch_size: int | None = None) -> HFBackend:
        """A backend around a model and tokenizer already in memory, on the model's device and
        in its dtype: a model built in code rather than loaded (benchmarks/bench_gpu.py's
        random-weight 8B-shaped model) answers through the same batches and operations."""
        backend = cls.__new__(cls)
        backend._adopt(spec, model, tokenizer, revision=revision,
                       batch_size=_batch_size(batch_size))
        return backend

    def _adopt(self, spec: ModelSpec, model, tokenizer, *, revision: str,
               batch_size: int) -> None:
        """Take a model and its chat tokenizer: the state every operation reads."""
        if not tokenizer.chat_template:
            raise ModelLoadError(spec.model_id, "the tokenizer has no chat template")
        self.spec, self.model_id, self.alias = spec, spec.model_id, spec.alias
        self.model, self.tokenizer, self.revision = model, tokenizer, revision
        self.batch_size = batch_size
        #: choice_probs computes a shared chat prefix once per group (False: every prompt whole)
        self.prefix_reuse = True
        self.device, self.dtype = model.device, model.dtype
        self.max_context = context_window(model.config, spec.model_id)
        model.eval()
        from labeler.llm.gqa_attention import cpu_gqa  # torch's

        cpu_gqa(model)  # no copies of the key/value heads each step on the CPU
        tokenizer.padding_side = "left"
        eos = model.generation_config.eos_token_id
        eos = [eos] if isinstance(eos, int) else list(eos or [])
        if tokenizer.eos_token_id is not None:
            eos.append(tokenizer.eos_token_id)
        self.eos_ids = sorted(set(eos))
        self.pad_id = next(i for i in (tokenizer.pad_token_id, *self.eos_ids, 0)
                           if i is not None)
        # generate() fills what its config leaves unset from the model's generation config (a
        # repetition penalty, a top-k): the model's own says nothing more than eos and pad
        model.generation_config = transformers.GenerationConfig(eos_token_id=self.eos_ids,
                                                                pad_token_id=self.pad_id)
        from labeler.llm.decoding import Decoder  # torch's

        #: generate's running batch; its `stats` count what generation ran
        self.decoder = Decoder(model, tokenizer, eos_ids=self.eos_ids, pad_id=self.pad_id)

    @property
    def call_size(self) -> int:
        """QUEUED_BATCHES batches: rows that end early leave room the queue refills."""
        return self.batch_size * QUEUED_BATCHES

    def key(self) -> dict:
        return {"model_id": self.spec.identity, "revision": self.revision, "backend": "hf",
                "dtype": str(self.dtype).removeprefix("torch."), "device": self.device.type}

    def render(self, prompt: Chat) -> str:
        return render_chat(self.tokenizer, prompt)

    def tokenize(self, texts: list[str]) -> list[list[int]]:
        return encode(self.tokenizer, texts)

    def generate(self, prompts: list[Chat], sampling: Sampling) -> list[list[Completion]]:
        return gathered(self.stream(self.prepare(prompts), sampling), len(prompts))

    def stream(self, prompts: list[Prompt], sampling: Sampling
               ) -> Iterator[tuple[int, list[Completion]]]:
        """Every prompt in one running batch, each prompt's completions as its last row ends."""
        if sampling.json_schema is not None:
            raise InputError("the hf backend cannot constrain its output to a JSON schema",
                             field_name="json_schema", hint="use --backend vllm")
        check_lengths([len(p.ids) for p in prompts], self.max_context,
                      reserved=sampling.max_tokens)
        rows = [(i, j) for i in range(len(prompts)) for j in range(sampling.n)]
        # grouped by prompt: its n samples join the batch together and share one prefill;
        # shortest prompt first: a prompt with little context (closed-book) is the likelier
        # to run to the cap, and starting it first lets the queue refill beside it
        collator = Collator(rows, sort_key=lambda r: -len(prompts[r[0]].ids),
                            group_key=lambda r: r[0], batch_size=self.batch_size)
        groups = [[(list(prompts[i].ids), None if sampling.greedy else
                    row_seed(sampling.seed, prompts[i].text, j))
                   for i, j in (rows[k] for k in group)] for group in collator.groups]
        samples: dict[int, list[Completion | None]] = {}
        with progress_bar(f"generate {self.alias}", len(rows)) as advance, \
                fixed_threads(self.device):
            for place, completion in self.decoder.run(groups, sampling,
                                                      batch_size=self.batch_size):
                i, j = rows[collator.order[place]]
                mine = samples.setdefault(i, [None] * sampling.n)
                mine[j] = completion
                advance(1)
                if None not in mine:
                    yield i, samples.pop(i)

    @_fixed_threads
    def loglikelihood(self, requests: list[LoglikelihoodRequest]) -> list[float]:
        pairs = continuation_ids(self.tokenizer, [self.render(r.context) for r in requests],
                                 [r.continuation for r in requests])
        return self._continuation_logprobs(pairs, "loglikelihood")

    @_fixed_threads
    def loglikelihood_rolling(self, texts: list[str]) -> list[float]:
        start = self.tokenizer.bos_token_id
        start = self.eos_ids[0] if start is None else start
        return self._continuation_logprobs([([start], ids) for ids in
                                            encode(self.tokenizer, texts)], "loglikelihood_rolling")

    @_fixed_threads
    def attention(self, requests: list[AttentionRequest]) -> list[AttentionResult]:
        from labeler.llm.attention import answer_attention  # torch's

        return answer_attention(self, requests)

    def _continuation_logprobs(self, pairs: list[tuple[list[int], list[int]]],
                               description: str) -> list[float]:
        """Summed log-probability of each pair's continuation ids after its context ids."""
        check_lengths([sum(map(len, pair)) for pair in pairs], self.max_context)
        out = [0.0] * len(pairs)
        order = [i for i, (_, cont) in enumerate(pairs) if cont]  # empty continuation: log 1 = 0
        for batch in self._batches(order, description,
                                   sort_key=lambda i: sum(map(len, pairs[i]))):
            keep = max(len(pairs[i][1]) for i in batch) + 1
            logits = self._forward([pairs[i][0] + pairs[i][1] for i in batch], keep)
            logprobs = torch.log_softmax(logits.float(), dim=-1)
            for row, i in enumerate(batch):
                cont = pairs[i][1]
                window = logprobs[row, keep - 1 - len(cont):keep - 1]
                target = torch.tensor(cont, device=window.device).unsqueeze(-1)
                out[i] = window.gather(-1, target).sum().item()
        return out

    @_fixed_threads
    def choice_probs(self, requests: list[ChoiceRequest]) -> list[dict[str, float]]:
        texts = [self.render(r.prompt) for r in requests]
        ids = encode(self.tokenizer, texts)
        tokens = [choice_ids(self.tokenizer, t, r.choices) for t, r in zip(texts, requests)]
        check_lengths([len(x) for x in ids], self.max_context, reserved=CHOICE_TOKENS)
        groups = [chat_prefix(r.prompt) for r in requests]
        out: list[dict[str, float]] = [{} for _ in requests]
        for batch in self._batches(range(len(requests)), "choice_probs",
                                   sort_key=lambda i: len(ids[i]),
                                   group_key=groups.__getitem__ if self.prefix_reuse else None):
            rows = [ids[i] for i in batch]
            logits = self._last_logits_shared(rows, [groups[i] for i in batch]) \
                if self.prefix_reuse else self._forward(rows, 1)[:, -1]
            probs = torch.softmax(logits.float(), -1)
            for row, i in enumerate(batch):
                out[i] = {c: probs[row, t].item() for c, t in zip(requests[i].choices, tokens[i])}
        return out

    def _batches(self, items, description: str, *, sort_key, group_key=None):
        """Batches of `items` as the Collator cuts them, under one progress bar."""
        items = list(items)
        collator = Collator(items, sort_key=sort_key, group_key=group_key,
                            batch_size=self.batch_size)
        with progress_bar(f"{description} {self.alias}", len(items)) as advance:
            for indices in collator:
                yield [items[k] for k in indices]
                advance(len(indices))

    def _pad(self, rows: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        width = max(map(len, rows))
        ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for r, row in enumerate(rows):
            if row:
                ids[r, -len(row):] = torch.tensor(row)
                mask[r, -len(row):] = 1
        return ids.to(self.device), mask.to(self.device)

    @_inference_mode
    def _forward(self, rows: list[list[int]], keep: int) -> torch.Tensor:
        """Logits of the last `keep` positions of each left-padded row."""
        ids, mask = self._pad(rows)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        return self.model(input_ids=ids, attention_mask=mask, position_ids=positions,
                          logits_to_keep=keep, use_cache=False).logits

    @_inference_mode
    def _last_logits_shared(self, rows: list[list[int]], groups: list) -> torch.Tensor:
        """Last-position logits of each row, the tokens its group shares computed once: each
        group's longest common prefix (short of any row's last token) runs once into a
        key/value cache copied to the group's rows; then only the rows' tails run after it."""
        members: dict = {}
        for row, group in zip(rows, groups):
            members.setdefault(group, []).append(row)
        cut = {group: common_prefix(m) for group, m in members.items()}
        if all(len(m) == 1 for m in members.values()) or min(cut.values()) == 0:
            return self._forward(rows, 1)[:, -1]
        ids, mask = self._pad([m[0][:cut[group]] for group, m in members.items()])
        cache = transformers.DynamicCache()
        self.model(input_ids=ids, attention_mask=mask, past_key_values=cache,
                   position_ids=(mask.cumsum(-1) - 1).clamp(min=0), use_cache=True,
                   logits_to_keep=1)
        where = {group: g for g, group in enumerate(members)}
        index = torch.tensor([where[g] for g in groups], device=self.device)
        cache.batch_select_indices(index)
        tails, tail_mask = self._pad([row[cut[g]:] for row, g in zip(rows, groups)])
        starts = torch.tensor([cut[g] for g in groups], device=self.device).unsqueeze(-1)
        return self.model(input_ids=tails, past_key_values=cache, use_cache=True,
                          attention_mask=torch.cat([mask[index], tail_mask], -1),
                          position_ids=starts + (tail_mask.cumsum(-1) - 1).clamp(min=0),
                          logits_to_keep=1).logits[:, -1]


def context_window(config, model_id: str) -> int:
    """The context window a model's config declares (a multimodal model's text part)."""
    config = config.get_text_config() if hasattr(config, "get_text_config") else config
    for name in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    raise ModelLoadError(model_id, "its config declares no context window "
                                   "(max_position_embeddings)")


def _batch_size(size: int | None) -> int:
    """Rows per forward pass: `size`, HFBackend.default_batch_size when unset."""
    size = size or HFBackend.default_batch_size
    if size < 1:
        raise InputError("batch size must be >= 1", field_name="batch_size")
    return size


def _device(name: str | None) -> torch.device:
    try:
        device = torch.device(name or ("cuda" if torch.cuda.is_available() else "cpu"))
    except RuntimeError as exc:
        raise InputError(f"unknown device '{name}' (use cpu, cuda or cuda:N)",
                         field_name="device") from exc
    if device.type == "cuda" and not torch.cuda.is_available():
        raise InputError("CUDA was asked for but torch sees no GPU", field_name="device",
                         hint="leave --device unset to run on the CPU")
    return device
