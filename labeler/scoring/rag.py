"""RAG accuracy of a utility artifact's LLM with a chosen set of its candidates per query.

`labeler score --rag` (a selection's passages, a ranking's top k) and `labeler compare`
(another LLM's gold utilitarian passages) ask exactly what the utility task's `rag` answers
ask: the artifact's with-passage prompt over the chosen candidates (a set in pool order, a
ranking's in its order), closed-book when none is chosen, with the artifact's answer decoding;
so the artifact's own gold utilitarian set gets back its own `rag.utilitarian` answers (from
the call cache, or recomputed alike).

Known queries are those the LLM answers right closed-book (the record's `known`), unknown the
others: the paper's Table 6 and Figure 4 split RAG accuracy so (`known_split`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path

import numpy as np

from labeler.errors import InputError, ModelLoadError, UnknownNameError
from labeler.llm.base import Backend, Sampling
from labeler.llm.calls import Calls
from labeler.llm.config import LLMConfig
from labeler.metrics.answers import has_answer
from labeler.sources.passage import Passage
from labeler.tasks import KINDS, load_kind
from labeler.tasks.utility import PROMPT_VERSION, TEMPLATES_BY_KIND, evidence_prompt


def load_reader(manifest: dict, name: str | None = None, *,
                cache_dir: str | Path | None = None, served: dict | None = None) -> Backend:
    """Load the LLM that labelled the artifact (`reader_config`), behind the call cache. A
    model the manifest names that does not load here is an InputError that says to pass
    --llm."""
    config = reader_config(manifest, name, served)
    try:
        return config.load(cache_dir)
    except (UnknownNameError, ModelLoadError) as error:
        if name is not None:
            raise
        raise _not_found(config.name, error) from None


#: the call kind of answers with a submission's passages, whose dtype an artifact built with
#: per-kind dtypes (`llm_config.call_dtypes`) may name
SELECTION_ANSWERS = "answers with a selection"


def reader_config(manifest: dict, name: str | None = None, served: dict | None = None
                  ) -> LLMConfig:
    """The LLM that labelled the artifact: `name` (--llm) if given, else its alias when that
    is a known alias, else its model id; with the backend settings it ran with (the dtype of
    `SELECTION_ANSWERS` where the artifact names one), or with `served` (a command's model
    options) where they name a backend other than hf. Without
    `name`, a model the manifest names that cannot be found here (an unknown name, a missing
    file, a Hub model not in the cache while offline) is an InputError that says to pass
    --llm, before anything loads."""
    from labeler.llm.models import ALIASES, model_availability, resolve_model
    from labeler.settings import offline

    settings = manifest.get("llm_config") or {}
    if name is None:
        model = manifest["llm"] if manifest["llm"] in ALIASES else manifest["model_id"]
        try:
            spec = resolve_model(model)
        except (UnknownNameError, ModelLoadError) as error:
            raise _not_found(model, error) from None
        if offline() and model_availability(spec) == "Hub download":
            raise _not_found(model, "offline, and not in the Hugging Face cache")
        name = model
    if served and served.get("backend", "hf") != "hf":
        return LLMConfig(name, **served)
    dtypes = settings.get("call_dtypes") or {}
    return LLMConfig(name, backend=settings.get("backend", "hf"),
                     batch_size=settings.get("batch_size"), device=settings.get("device"),
                     tensor_parallel=settings.get("tensor_parallel", 1),
                     dtype=dtypes.get(SELECTION_ANSWERS, settings.get("dtype")),
                     prompt_format=settings.get("prompt_format", "chat"))


def _not_found(name: str, why: object) -> InputError:
    return InputError(f"the artifact's LLM '{name}' is not found here: {why}",
                      field_name="llm", hint="name the model to answer with: --llm MODEL, "
                      "for labeler compare --llm ALIAS=MODEL")


def artifact_setting(manifest: dict, where: str) -> tuple[str, Sampling]:
    """(kind of query, answer decoding) of a utility artifact: the kind whose prompt pair its
    manifest records, and its `answer` sampling. InputError for a kind whose manifest records
    no answer prompts (`ArtifactKind.own_answer_prompts`), or
    prompts this labeler no longer asks (its answers would not be comparable)."""
    artifact = manifest.get("artifact")
    if artifact not in KINDS or not load_kind(artifact).own_answer_prompts:
        raise InputError(f"expected a utility artifact, this is a {artifact}", where,
                         field_name="artifact")
    texts = {name: t.get("text") for name, t in manifest["prompt_templates"].items()}
    kind = next((kind for kind, pair in TEMPLATES_BY_KIND.items()
                 if all(texts.get(name) == text for name, text in pair.items())), None)
    if kind is None:
        raise InputError("the artifact's prompts are not the utility prompts of this labeler: "
                         "its RAG answers cannot be asked again alike", where,
                         field_name="prompt_templates", hint="rebuild it with this version")
    answer = dict(manifest["sampling"]["answer"])
    return kind, Sampling(**{**answer, "stop": tuple(answer.get("stop", ()))})


def prompt_version(manifest: dict) -> int:
    """The prompt version a utility artifact was built with (1 before versions were recorded):
    how its RAG answers show passages, and so how they are asked again alike."""
    return int(manifest.get("prompt_version", 1))


def rag_correct(llm: Calls, records: Sequence[dict], chosen: Sequence[Collection[str]], *,
                kind: str, sampling: Sampling, what: str, ranked: bool = False,
                version: int = PROMPT_VERSION) -> list[bool]:
    """Per utility record, whether the LLM answers right (`has_answer`) with only the
    candidates whose pid is in `chosen[i]`: in pool order, or with `ranked` in the order of
    `chosen[i]` (a ranking's top k); chosen pids outside the pool are not shown. One batched
    call; the passages shown as prompt `version` shows them (the artifact's: `prompt_version`)."""
    prompts = []
    for record, pids in zip(records, chosen):
        pool = {c["pid"]: Passage(c["pid"], c["title"], c["text"]) for c in record["candidates"]}
        keep = set(pids)
        order = list(dict.fromkeys(pids)) if ranked else [p for p in pool if p in keep]
        passages = [pool[p] for p in order if p in pool]
        prompts.append(evidence_prompt(record["question"], passages, kind, version=version))
    outputs = llm.generate(prompts, sampling, what, [r["qid"] for r in records])
    return [has_answer(out[0].text.strip(), r["answers"]) for out, r in zip(outputs, records)]


def known_split(name: str, values: Sequence[float], known: Sequence[bool]) -> dict[str, np.ndarray]:
    """`name` per query, and `name_known` / `name_unknown`: the same values on the known
    (closed-book correct) / unknown queries, NaN on the others, so that a mean over the values
    that apply is the accuracy of that group.

    >>> split = known_split("acc", [1.0, 0.0, 1.0], [True, False, False])
    >>> split["acc_known"].tolist(), split["acc_unknown"].tolist()
    ([1.0, nan, nan], [nan, 0.0, 1.0])
    """
    values, known = np.asarray(values, dtype=np.float64), np.asarray(known, dtype=bool)
    return {name: values, f"{name}_known": np.where(known, values, np.nan),
            f"{name}_unknown": np.where(known, np.nan, values)}
