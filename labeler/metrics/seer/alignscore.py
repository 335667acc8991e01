"""Faithfulness by an entailment classifier with AlignScore's aggregation: `alignscore[:CKPT]`
(SEER's choice) and `nli:MODEL`.

AlignScore (Zha et al., 2023; yuh-zha/AlignScore, `inference.py`, mode "nli_sp") scores a
claim against a context so: the context is split into sentences and regrouped into chunks of
about 350 words (n = words // 350 + 1 chunks of len(sentences) // n consecutive sentences
each), the claim into sentences; every (chunk, sentence) pair is classified; the score is the
mean over the claim's sentences of the best chunk's P(aligned). Here the context is a query's
passages and the claim its evidence. `align_scores` is that aggregation, over any batched
classifier; AlignScore's classifier is its RoBERTa with the 3-way ("tri") head, P(aligned) its
first class; an NLI cross-encoder's is P(entailment), the label found in config.id2label.

Departures, both small: sentences are split by a rule (`sentences`), not NLTK's punkt, and
lines are hard boundaries; pairs are padded to the batch's longest, not to 512. Evidence
without any sentence scores 0. The released checkpoints are PyTorch Lightning .ckpt files; they
are read without Lightning by an unpickler that builds tensors and plain containers only.
"""

from __future__ import annotations

import pickle
import re
import types
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from labeler import settings
from labeler.errors import InputError, ModelLoadError, first_line
from labeler.llm.batching import Collator
from labeler.network import cause_line, quiet_retries
from labeler.progress import progress_bar

if TYPE_CHECKING:
    from labeler.llm.calls import Calls
    from labeler.metrics.seer.extraction import Extraction

#: AlignScore's chunk size, in whitespace-separated words of the premise
CHUNK_WORDS = 350
#: the released checkpoints (AlignScore-base.ckpt, AlignScore-large.ckpt) on the Hub
HUB_REPO, HUB_FILE = "yzha/AlignScore", "AlignScore-large.ckpt"
#: pairs per forward pass; tokens per pair (RoBERTa's window)
BATCH_SIZE, MAX_LENGTH = 16, 512

#: (premise chunk, hypothesis sentence) pairs -> P(the chunk entails the sentence) per pair
Classify = Callable[[list[tuple[str, str]]], np.ndarray]


def align_scores(premises: Sequence[str], hypotheses: Sequence[str],
                 classify: Classify) -> np.ndarray:
    """Per item, the mean over the hypothesis's sentences of the max over the premise's
    chunks of classify(chunk, sentence); every distinct pair of every item in one call.
    A hypothesis with no sentence scores 0.

    E.g. 2 chunks × 3 sentences scored [[.1, .8, .3], [.6, .2, .4]] give
    mean(.6, .8, .4) = 0.6.
    """
    if len(premises) != len(hypotheses):
        raise InputError(f"{len(premises)} premises for {len(hypotheses)} hypotheses")
    grids = [(premise_chunks(p), sentences(h)) for p, h in zip(premises, hypotheses)]
    pairs = list(dict.fromkeys((c, s) for chunks, sents in grids for c in chunks for s in sents))
    probs = np.asarray(classify(pairs), dtype=np.float64) if pairs else np.zeros(0)
    if probs.shape != (len(pairs),):
        raise ValueError(f"the classifier gave {probs.shape} scores for {len(pairs)} pairs")
    where = {pair: i for i, pair in enumerate(pairs)}
    out = np.zeros(len(grids))
    for k, (chunks, sents) in enumerate(grids):
        if sents:
            matrix = probs[[[where[c, s] for s in sents] for c in chunks]]  # chunks × sentences
            out[k] = matrix.max(axis=0).mean()
    return out


def premise_chunks(text: str) -> list[str]:
    """AlignScore's premise chunks: its sentences, regrouped `len(sentences) // n` at a time
    (at least 1), n = words // CHUNK_WORDS + 1; [""] for a text without any.

    >>> premise_chunks("One. Two.")
    ['One. Two.']
    """
    sents = sentences(text) or [""]
    n = len(text.split()) // CHUNK_WORDS + 1
    size = max(len(sents) // n, 1)
    return [" ".join(sents[i:i + size]) for i in range(0, len(sents), size)]


#: words after which a full stop does not end a sentence (compared lower-case, without it)
ABBREVIATIONS = frozenset((
    "mr", "mrs", "ms", "dr", "prof", "st", "jr", "sr", "rev", "gen", "col", "lt", "sgt", "capt",
    "mt", "ft", "vs", "etc", "inc", "ltd", "co", "corp", "no", "nos", "vol", "pp", "fig",
    "approx", "est", "dept", "univ", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep",
    "sept", "oct", "nov", "dec", "e.g", "i.e", "u.s", "u.k", "u.n", "a.m", "p.m",
))
_END = re.compile(r"[.!?]+[\"'”’)\]]*(?=\s)")


def sentences(text: str) -> list[str]:
    """`text` split into sentences: each line on its own, cut after ".", "!" or "?" (and any
    closing quote or bracket) before a space, unless the next word starts lower-case or the
    full stop ends an abbreviation or an initial.

    >>> sentences("Dr. Smith met J. R. R. Tolkien in the U.S. in 1950. He said: hi! Bye.")
    ['Dr. Smith met J. R. R. Tolkien in the U.S. in 1950.', 'He said: hi!', 'Bye.']
    """
    out = []
    for line in text.splitlines():
        start = 0
        for end in _END.finditer(line):
            following = line[end.end():].lstrip()[:1]
            word = line[start:end.start()].split()[-1:] or [""]
            stem = word[0].lower().lstrip("\"'“‘(")
            if following.islower() or (line[end.start()] == "." and (
                    stem in ABBREVIATIONS or (len(stem) == 1 and stem.isalpha()))):
                continue
            out.append(line[start:end.end()].strip())
            start = end.end()
        out.append(line[start:].strip())
    return [s for s in out if s]


class EntailmentScorer:
    """Faithfulness as `align_scores` of an item's passages (one per line) and its evidence,
    under a loaded pair classifier; `name` is its spec, for the manifest."""

    name: str
    classify: Classify

    def __call__(self, llm: Calls, items: Sequence[Extraction]) -> np.ndarray:
        return align_scores(["\n".join(x.passages) for x in items], [x.evidence for x in items],
                            self.classify)


class AlignScore(EntailmentScorer):
    """AlignScore's checkpoint as a transformers encoder (AutoModel: RoBERTa for the released
    ones) plus its 3-way head; P(aligned) is the head's first class, as mode "nli_sp" reads.

    `checkpoint`: a .ckpt file, a folder holding one, a Hub repo (its AlignScore-large.ckpt)
    or REPO/FILE.ckpt; default yzha/AlignScore's AlignScore-large.ckpt. The encoder's config
    and tokenizer come from the checkpoint's folder when it holds a config.json, else from
    the base model the checkpoint names (hyper_parameters["model"], e.g. roberta-large).
    """

    def __init__(self, checkpoint: str | None = None) -> None:
        import torch
        from transformers import AutoConfig, AutoModel, AutoTokenizer

        path, self.name = _checkpoint_file(checkpoint)
        state, hyper = _read_checkpoint(path)
        base = str(path.parent) if (path.parent / "config.json").is_file() else hyper.get("model")
        if not base:
            raise ModelLoadError(str(path), "the checkpoint names no base model "
                                 "(hyper_parameters['model']) and no config.json is beside it")
        try:
            config = AutoConfig.from_pretrained(base)
            tokenizer = AutoTokenizer.from_pretrained(base)
        except OSError as exc:
            raise ModelLoadError(base, first_line(exc)) from exc
        encoder = AutoModel.from_config(config)
        weights = {k.removeprefix("base_model."): v for k, v in state.items()
                   if k.startswith("base_model.")}
        missing = encoder.load_state_dict(weights, strict=False).missing_keys
        head = torch.nn.Linear(config.hidden_size, 3)
        missing += [k for k in ("tri_layer.weight", "tri_layer.bias") if k not in state]
        if missing:
            raise ModelLoadError(str(path), f"not an AlignScore checkpoint: {len(missing)} "
                                 f"weights missing, e.g. {', '.join(missing[:3])}")
        head.load_state_dict({"weight": state["tri_layer.weight"],
                              "bias": state["tri_layer.bias"]})

        def aligned(inputs: dict) -> torch.Tensor:
            pooled = encoder(**inputs).pooler_output
            return torch.softmax(head(pooled), dim=-1)[:, 0]

        self.classify = PairClassifier(tokenizer, [encoder, head], aligned, "faithfulness "
                                       "(AlignScore)")


class NLIEntailment(EntailmentScorer):
    """Any NLI cross-encoder (AutoModelForSequenceClassification, a Hub id or local folder):
    P(entailment), the label in config.id2label whose name starts with "entail"."""

    def __init__(self, model: str | None = None) -> None:
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        if model is None:
            raise InputError("nli needs a model: nli:MODEL (a Hub id or a local folder)",
                             field_name="faithfulness")
        self.name = f"nli:{model}"
        try:
            classifier = AutoModelForSequenceClassification.from_pretrained(model)
            tokenizer = AutoTokenizer.from_pretrained(model)
        except (OSError, ValueError) as exc:
            raise ModelLoadError(model, first_line(exc)) from exc
        labels = {int(i): str(name) for i, name in classifier.config.id2label.items()}
        found = [i for i, name in labels.items() if name.lower().startswith("entail")]
        if len(found) != 1:
            raise ModelLoadError(model, f"no single entailment label in config.id2label {labels}")

        def entailed(inputs: dict) -> torch.Tensor:
            return torch.softmax(classifier(**inputs).logits, dim=-1)[:, found[0]]

        self.classify = PairClassifier(tokenizer, [classifier], entailed,
                                       f"faithfulness ({model})")


class PairClassifier:
    """A `Classify` over a tokenizer and a forward function: pairs batched longest first
    (labeler.llm.batching.Collator), tokenised as (premise, hypothesis), the premise cut to
    fit MAX_LENGTH (both when the hypothesis alone is too long, as AlignScore does), under a
    progress bar; on CUDA when there is one, in eval mode, without gradients."""

    def __init__(self, tokenizer, modules: list, forward: Callable, description: str) -> None:
        import torch

        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        for module in modules:
            module.to(self.device).eval()
        self.tokenizer, self.forward, self.description = tokenizer, forward, description
        self.max_length = min(tokenizer.model_max_length, MAX_LENGTH)

    def __call__(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        import torch

        collator = Collator(pairs, sort_key=lambda p: len(p[0]) + len(p[1]),
                            batch_size=BATCH_SIZE)
        scores: list[float] = []
        with progress_bar(self.description, len(pairs)) as advance, torch.inference_mode():
            for batch in collator:
                inputs = self._tokenize([pairs[i] for i in batch])
                scores.extend(self.forward(inputs).float().cpu().tolist())
                advance(len(batch))
        return np.array(collator.restore(scores), dtype=np.float64)

    def _tokenize(self, pairs: list[tuple[str, str]]) -> dict:
        premises, hypotheses = [p for p, _ in pairs], [h for _, h in pairs]
        longest = max(len(ids) for ids in
                      self.tokenizer(hypotheses, add_special_tokens=False)["input_ids"])
        room = self.max_length - self.tokenizer.num_special_tokens_to_add(pair=True)
        inputs = self.tokenizer(
            premises, hypotheses, padding=True, max_length=self.max_length, return_tensors="pt",
            # cutting the premise alone cannot fit a hypothesis that fills the window
            truncation="only_first" if longest < room else "longest_first",
        )
        return {k: v.to(self.device) for k, v in inputs.items()}


def _checkpoint_file(spec: str | None) -> tuple[Path, str]:
    """(the local .ckpt file, the scorer's name) for an `alignscore` argument."""
    if spec is None:
        return _download(HUB_REPO, HUB_FILE), f"alignscore:{HUB_REPO}/{HUB_FILE}"
    path = Path(spec).expanduser()
    if path.is_dir():
        found = sorted(path.glob("*.ckpt"))
        if len(found) != 1:
            raise InputError(f"expected one .ckpt file in the folder, found {len(found)}",
                             str(path), field_name="faithfulness")
        return found[0], f"alignscore:{found[0]}"
    if path.is_file():
        return path, f"alignscore:{path}"
    repo, file = _hub_file(spec)
    return _download(repo, file), f"alignscore:{repo}/{file}"


def _hub_file(spec: str | None) -> tuple[str, str]:
    """(Hub repo, file) of an `alignscore` argument that is no local path; InputError for one
    that cannot be either."""
    if spec is None:
        return HUB_REPO, HUB_FILE
    parts = spec.split("/")
    if len(parts) < 2 or spec.startswith((".", "/", "~")):
        raise InputError("AlignScore checkpoint not found: give a .ckpt file, a folder holding "
                         "one, a Hub repo or REPO/FILE.ckpt", spec, field_name="faithfulness")
    return "/".join(parts[:2]), "/".join(parts[2:]) or HUB_FILE


def checkpoint_available(spec: str | None) -> str | None:
    """Why the checkpoint of an `alignscore` argument cannot be had, or None where it can (a
    local path, a Hub file in the cache, or online): nothing is read or downloaded."""
    from huggingface_hub import constants, try_to_load_from_cache

    if spec is not None and Path(spec).expanduser().exists():
        return None
    repo, file = _hub_file(spec)
    if isinstance(try_to_load_from_cache(repo, file), str):
        return None
    offline = constants.is_offline_mode() or settings.offline()
    return f"{repo}/{file} is not in the Hub cache, and HF_HUB_OFFLINE is set" if offline \
        else None


def _download(repo: str, file: str) -> Path:
    from huggingface_hub import hf_hub_download

    try:
        with quiet_retries():
            return Path(hf_hub_download(repo, file))
    except Exception as exc:  # offline and not cached, no such repo or file, network errors
        raise ModelLoadError(f"{repo}/{file}", cause_line(exc)) from exc


class _Opaque(dict):
    """Stands in for any class a checkpoint names beyond tensors and plain containers
    (Lightning's AttributeDict, callbacks' state): keeps a dict's items, runs no code."""

    def __init__(self, *args, **kwargs) -> None:
        pass

    def __setstate__(self, state) -> None:
        if isinstance(state, dict):
            self.update(state)


class _Unpickler(pickle.Unpickler):
    """Finds only what rebuilds tensors (torch._utils._rebuild_*, dtypes, torch.Size) and
    OrderedDict; every other global becomes `_Opaque`, so nothing is imported or run."""

    def find_class(self, module: str, name: str):
        import torch

        if (module == "torch._utils" and name.startswith("_rebuild_")) or (
                module == "collections" and name == "OrderedDict") or (
                module == "torch" and (name == "Size"
                                       or isinstance(getattr(torch, name, None), torch.dtype))):
            return super().find_class(module, name)
        return _Opaque


_RESTRICTED = types.SimpleNamespace(__name__="labeler-restricted-pickle", Unpickler=_Unpickler,
                                    load=lambda f, **kw: _Unpickler(f, **kw).load())


def _read_checkpoint(path: Path) -> tuple[dict, dict]:
    """(state_dict, hyper_parameters) of a Lightning checkpoint, through `_Unpickler`."""
    import torch

    try:
        checkpoint = torch.load(path, map_location="cpu", weights_only=False,
                                pickle_module=_RESTRICTED)
    except Exception as exc:  # not a torch file, truncated, ...
        raise ModelLoadError(str(path), f"cannot read the checkpoint: {first_line(exc)}") \
            from exc
    state = checkpoint.get("state_dict") if isinstance(checkpoint, dict) else None
    if not isinstance(state, dict):
        raise ModelLoadError(str(path), "not a Lightning checkpoint: no state_dict")
    hyper = checkpoint.get("hyper_parameters")
    return state, dict(hyper) if isinstance(hyper, dict) else {}
