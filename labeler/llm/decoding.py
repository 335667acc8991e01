"""The hf backend's generation: one running batch whose rows leave as soon as they end.

A row ends at an end-of-sequence token, at a stop string or at its new-token cap; it leaves
the batch at once, its key/value cache with it, and the next prompts of the queue (the
Collator's groups in the backend's order, a prompt's n samples together) take the freed
slots. Their prefill runs on its own, each distinct prompt once, and its cache joins the
running one, left padded to a common width. A prefix that many of the call's prompts begin
with (the chat template's system turn, an instruction before the question) is prefilled once
and its cache copied to each of them, which then prefill only their tails. The cache's leading
columns that no live row reads are cut, so it is as wide as its longest live row. Left
padding with an attention mask and position ids from the mask gives each row the same answer
alone, beside any other rows or after a shared prefix's cache. Sampling draws per row from its
own generator (the exponential race, i.e. Gumbel-max), so a sample is a pure function of
(prompt, sampling). `DecodeStats` counts what ran.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field, fields

import torch

# isort: split
import labeler.llm.lean_transformers  # noqa: F401  (first: keeps scikit-learn unimported)

# isort: split
from transformers import (
    DynamicCache,
    LogitsProcessorList,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

from labeler.llm.base import Completion, Sampling
from labeler.llm.batching import shared_prefixes
from labeler.llm.prompts import cut_at_stop

#: a forward pass's own cost in prompt tokens (on the CPU a one-row step of SmolLM2-135M takes
#: as long as prefilling about 15 tokens): a shared prefix must save more than its pass costs
PREFIX_OVERHEAD = 16


@dataclass
class DecodeStats:
    """What a backend's generation ran, summed over its calls (`generate` adds to it)."""

    prompts: int = 0  # rows generated (a prompt's n samples are n rows)
    prefill_tokens: int = 0  # prompt positions run by prefill, left padding included
    decode_slots: int = 0  # rows run by those passes (a row per live answer)
    capacity: int = 0  # rows those passes could have run: batch size x steps
    tokens: int = 0  # new tokens chosen (an ending EOS included): prefill's first + decode's
    seconds: float = 0.0  # wall time inside generate
    cpu_seconds: float = 0.0  # CPU time of the thread that ran it (the share others took off)
    prefill_cpu_seconds: float = 0.0  # the part of cpu_seconds spent admitting rows (prefill)

    def __sub__(self, earlier: DecodeStats) -> DecodeStats:
        """What ran since `earlier` (a copy of these stats taken then)."""
        return DecodeStats(**{f.name: getattr(self, f.name) - getattr(earlier, f.name)
                              for f in fields(self)})

    @property
    def produced(self) -> float:
        """The fraction of decode slots whose row kept the token it produced."""
        return (self.tokens - self.prompts) / self.decode_slots if self.decode_slots else 1.0

    @property
    def occupancy(self) -> float:
        """The fraction of the batch's rows that decode steps ran: live rows over batch size."""
        return self.decode_slots / self.capacity if self.capacity else 1.0

    @property
    def prefill_share(self) -> float:
        """The fraction of generate's CPU time that admitting rows (their prefill) took."""
        return self.prefill_cpu_seconds / self.cpu_seconds if self.cpu_seconds else 0.0

    @property
    def rate(self) -> float:
        """Tokens chosen per second inside generate."""
        return self.tokens / self.seconds if self.seconds else 0.0

    @property
    def cpu_rate(self) -> float:
        """Tokens chosen per CPU second of generate's thread: on a shared machine, what the
        other processes took is not counted."""
        return self.tokens / self.cpu_seconds if self.cpu_seconds else 0.0


@dataclass
class Row:
    """One answer being generated."""

    index: int  # its place in the caller's list
    ids: list[int]  # the prompt's token ids
    generator: torch.Generator | None  # its own random draws; None: greedy
    tokens: list[int] = field(default_factory=list)  # new tokens so far


class Decoder:
    """Generates rows with a model, in one running batch of at most `batch_size` rows."""

    def __init__(self, model, tokenizer, *, eos_ids: list[int], pad_id: int) -> None:
        self.model, self.tokenizer = model, tokenizer
        self.eos_ids, self.pad_id = frozenset(eos_ids), pad_id
        self.device = model.device
        self.stats = DecodeStats()

    @torch.inference_mode()
    def run(self, groups: list[list[tuple[list[int], int | None]]], sampling: Sampling, *,
            batch_size: int) -> Iterator[tuple[int, Completion]]:
        """The completions of `groups`, each a list of rows (prompt ids, seed or None when
        greedy) admitted together, as each row ends: (its place in the order the groups list
        their rows, its completion)."""
        queue, count = deque(), 0
        for group in groups:
            queue.append([Row(count + k, ids, None if seed is None else
                              torch.Generator(device=self.device).manual_seed(seed))
                          for k, (ids, seed) in enumerate(group)])
            count += len(group)
        self.stats.prompts += count
        batch = _Batch(self, _Prefixes(self, [row.ids for rows in queue for row in rows]))
        while queue or batch.rows:
            start, cpu = time.perf_counter(), time.thread_time()
            admitted: list[Row] = []  # whole groups while they fit; one at least
            while queue and (not batch.rows and not admitted
                             or len(batch.rows) + len(admitted) + len(queue[0]) <= batch_size):
                admitted += queue.popleft()
            if admitted:
                chosen = self._choose(batch.admit(admitted), admitted, sampling)
                batch.next = torch.cat([batch.next, chosen])
            else:
                self.stats.capacity += batch_size
                batch.next = self._choose(batch.step(), batch.rows, sampling)
            ended = {}  # among the rows that just got a token
            for k in range(len(batch.rows) - len(admitted) if admitted else 0, len(batch.rows)):
                if (done := self._ended(batch.rows[k], sampling)) is not None:
                    ended[k] = done
            finished = [(batch.rows[k].index, done) for k, done in ended.items()]
            if ended:
                batch.keep([k for k in range(len(batch.rows)) if k not in ended])
            self.stats.seconds += time.perf_counter() - start
            spent = time.thread_time() - cpu
            self.stats.cpu_seconds += spent
            self.stats.prefill_cpu_seconds += spent if admitted else 0.0
            yield from finished

    def _choose(self, logits: torch.Tensor, rows: list[Row], sampling: Sampling) -> torch.Tensor:
        """Each row's next token from its logits: the argmax, after the sampling's warpers and
        the row's own exponential race when it samples; appended to the row's tokens."""
        scores = logits.float()
        if not sampling.greedy:
            scores = _warpers(sampling)(None, scores)
            noise = torch.empty_like(scores)
            for k, row in enumerate(rows):
                noise[k].exponential_(generator=row.generator)
            tiny = torch.finfo(torch.float32).tiny  # a draw of exactly 0 must not give inf - inf
            scores = scores - noise.clamp_(min=tiny).log()
        chosen = scores.argmax(-1)
        for row, token in zip(rows, chosen.tolist()):
            row.tokens.append(token)
        self.stats.tokens += len(rows)
        return chosen

    def _ended(self, row: Row, sampling: Sampling) -> Completion | None:
        """The row's completion once it has ended (at an EOS, a stop string or the cap)."""
        if row.tokens[-1] in self.eos_ids:
            return Completion(cut_at_stop(self._text(row.tokens[:-1]), sampling.stop))
        if not sampling.stop and len(row.tokens) < sampling.max_tokens:
            return None
        text = self._text(row.tokens)
        cut = cut_at_stop(text, sampling.stop)
        if cut != text:
            return Completion(cut)
        return Completion(text, capped=True) if len(row.tokens) == sampling.max_tokens else None

    def _text(self, tokens: list[int]) -> str:
        return self.tokenizer.decode(tokens, skip_special_tokens=True)


def _warpers(sampling: Sampling) -> LogitsProcessorList:
    """Temperature, top-k and top-p, in transformers' order."""
    warpers = LogitsProcessorList([TemperatureLogitsWarper(float(sampling.temperature))])
    if sampling.top_k > 0:
        warpers.append(TopKLogitsWarper(sampling.top_k))
    if sampling.top_p < 1:
        warpers.append(TopPLogitsWarper(float(sampling.top_p)))
    return warpers


class _Batch:
    """The live rows, their key/value cache, its attention mask and each row's next token."""

    def __init__(self, decoder: Decoder, prefixes: _Prefixes) -> None:
        self.decoder, self.model, self.device = decoder, decoder.model, decoder.device
        self.prefixes = prefixes
        self.rows: list[Row] = []
        self.cache: DynamicCache | None = None
        self.mask = torch.zeros((0, 0), dtype=torch.long, device=self.device)
        self.next = torch.zeros(0, dtype=torch.long, device=self.device)

    def admit(self, rows: list[Row]) -> torch.Tensor:
        """Prefill `rows`, each distinct prompt once (after its shared prefix's cache, when it
        has one: `_Prefixes`), in a cache of their own that then joins the running one (both
        left padded to the wider); the last position's logits, one per row. The rows' first
        tokens are the batch's `next` to set."""
        prompts = list(dict.fromkeys(tuple(row.ids) for row in rows))
        cache, before, cuts = self.prefixes.stacked(prompts)
        tails = [prompt[cut:] for prompt, cut in zip(prompts, cuts)]
        width = max(map(len, tails))
        ids = torch.full((len(tails), width), self.decoder.pad_id, dtype=torch.long)
        mask = torch.zeros((len(tails), width), dtype=torch.long)
        for k, tail in enumerate(tails):
            ids[k, width - len(tail):] = torch.tensor(tail)
            mask[k, width - len(tail):] = 1
        ids, mask = ids.to(self.device), mask.to(self.device)
        starts = torch.tensor(cuts, device=self.device).unsqueeze(-1)
        logits = self.model(input_ids=ids, attention_mask=torch.cat([before, mask], -1),
                            past_key_values=cache, use_cache=True, logits_to_keep=1,
                            position_ids=starts + (mask.cumsum(-1) - 1).clamp(min=0)
                            ).logits[:, -1]
        self.decoder.stats.prefill_tokens += ids.numel()
        where = {prompt: k for k, prompt in enumerate(prompts)}
        index = torch.tensor([where[tuple(row.ids)] for row in rows], device=self.device)
        if len(prompts) != len(rows):  # a prompt's samples: its one prefill, copied
            cache.batch_select_indices(index)
        self._join(cache, torch.cat([before, mask], -1)[index])
        self.rows += rows
        self.prefixes.release(max(row.index for row in rows))
        return logits[index]

    def step(self) -> torch.Tensor:
        """Run every live row's next token: the logits of the token after it."""
        self.mask = torch.cat([self.mask, self.mask.new_ones((len(self.rows), 1))], -1)
        logits = self.model(input_ids=self.next.unsqueeze(-1), attention_mask=self.mask,
                            position_ids=self.mask.sum(-1, keepdim=True) - 1,
                            past_key_values=self.cache, use_cache=True,
                            logits_to_keep=1).logits[:, -1]
        self.decoder.stats.decode_slots += len(self.rows)
        return logits

    def _join(self, cache: DynamicCache, mask: torch.Tensor) -> None:
        """Append a cache's rows (and their mask) to the running ones."""
        if self.cache is None:
            self.cache, self.mask = cache, mask
            return
        width = max(self.mask.shape[1], mask.shape[1])
        for mine, theirs in zip(self.cache.layers, cache.layers):
            mine.keys = torch.cat([_pad_left(mine.keys, width), _pad_left(theirs.keys, width)])
            mine.values = torch.cat([_pad_left(mine.values, width),
                                     _pad_left(theirs.values, width)])
        self.mask = torch.cat([_pad_left(self.mask, width), _pad_left(mask, width)])

    def keep(self, kept: list[int]) -> None:
        """Only the rows at `kept` go on; the cache's columns none of them reads are cut."""
        self.rows = [self.rows[k] for k in kept]
        if not kept:
            self.cache, self.mask, self.next = None, self.mask[:0, :0], self.next[:0]
            return
        index = torch.tensor(kept, device=self.device)
        self.mask, self.next = self.mask[index], self.next[index]
        self.cache.batch_select_indices(index)
        first = int(self.mask.any(0).int().argmax())  # the first column a live row reads
        if first:
            self.mask = self.mask[:, first:]
            for layer in self.cache.layers:
                layer.keys, layer.values = layer.keys[:, :, first:], layer.values[:, :, first:]


def _pad_left(tensor: torch.Tensor, width: int) -> torch.Tensor:
    """`tensor` (rows first, positions in the third dimension of a cache's keys and values,
    the second of a mask) with zero columns before it, `width` in all."""
    dim = 1 if tensor.dim() == 2 else 2
    missing = width - tensor.shape[dim]
    if not missing:
        return tensor
    shape = list(tensor.shape)
    shape[dim] = missing
    return torch.cat([tensor.new_zeros(shape), tensor], dim)


class _Prefixes:
    """The key/value caches of the prefixes a call's prompts share (`shared_prefixes`), each
    computed once, alone, when the first row that begins with it is admitted, and dropped
    once the last one is."""

    def __init__(self, decoder: Decoder, prompts: list[list[int]]) -> None:
        self.decoder = decoder
        cuts = shared_prefixes(prompts, overhead=PREFIX_OVERHEAD)
        #: each distinct prompt's shared prefix length (0: none)
        self.cuts = {tuple(p): cut for p, cut in zip(prompts, cuts)}
        #: each shared prefix's last row (rows are numbered in admission order)
        self.last = {tuple(p[:cut]): k for k, (p, cut) in enumerate(zip(prompts, cuts)) if cut}
        self.caches: dict[tuple[int, ...], DynamicCache] = {}

    def stacked(self, prompts: list[tuple[int, ...]]
                ) -> tuple[DynamicCache, torch.Tensor, list[int]]:
        """One cache holding each prompt's shared prefix (none: empty), left padded to the
        longest; its attention mask; each prompt's prefix length."""
        cuts = [self.cuts[p] for p in prompts]
        width, device = max(cuts), self.decoder.device
        mask = torch.zeros((len(prompts), width), dtype=torch.long, device=device)
        if not width:
            return DynamicCache(), mask, cuts
        caches = [self._cache(p[:cut]) if cut else None for p, cut in zip(prompts, cuts)]
        layers = next(c for c in caches if c is not None).layers
        stacked = []
        for k, layer in enumerate(layers):
            empty = layer.keys[:, :, :0]
            keys = [empty if c is None else c.layers[k].keys for c in caches]
            values = [empty if c is None else c.layers[k].values for c in caches]
            stacked.append((torch.cat([_pad_left(x, width) for x in keys]),
                            torch.cat([_pad_left(x, width) for x in values])))
        for k, cut in enumerate(cuts):
            if cut:
                mask[k, width - cut:] = 1
        return DynamicCache(stacked), mask, cuts

    def release(self, admitted: int) -> None:
        """Drop the caches of the prefixes whose rows are all admitted (through `admitted`)."""
        for prefix in [p for p in self.caches if self.last[p] <= admitted]:
            del self.caches[prefix]

    def _cache(self, prefix: tuple[int, ...]) -> DynamicCache:
        """The prefix's cache, prefilled alone the first time it is asked for."""
        if prefix not in self.caches:
            cache = DynamicCache()
            ids = torch.tensor([prefix], device=self.decoder.device)
            self.decoder.model(input_ids=ids, past_key_values=cache, use_cache=True,
                               logits_to_keep=1)
            self.decoder.stats.prefill_tokens += len(prefix)
            self.caches[prefix] = cache
        return self.caches[prefix]
