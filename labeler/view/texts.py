"""The text of a rubric version's candidates, which its records name only by document id:
read from the source's corpus (the one its manifest names), opened once per dataset when a
rubric query's page first asks for it."""

from __future__ import annotations

from functools import cache

from labeler.errors import LabelerError, first_line


def candidate_texts(manifest: dict, pids: list[str]) -> dict:
    """{"texts": {pid: {"title", "text"}} for the `pids` the corpus holds, "error": one line
    why there are none (the source cannot be opened here), else None}."""
    corpus_source = manifest.get("corpus_source") or {}
    try:
        corpus = _corpus(manifest["source_dataset"], corpus_source.get("name"))
    except (LabelerError, OSError, ValueError) as exc:
        return {"texts": {}, "error": f"the candidates' text is not at hand: {first_line(exc)}"}
    texts = {}
    for pid in pids:
        if pid in corpus:
            passage = corpus[pid]
            texts[pid] = {"title": passage.title, "text": passage.text}
    return {"texts": texts, "error": None}


@cache
def _corpus(dataset: str, corpus: str | None):
    """The corpus of `dataset` (or the named `corpus`), its first query only loaded."""
    from labeler.sources.registry import load_source

    return load_source(dataset, corpus=corpus, limit=1).corpus
