"""Where a utility build departs from the paper's labelling setting: the card's "Setting"
section, judged from the manifest alone."""

from __future__ import annotations

from labeler.paths import file_label

#: The paper's labelling setting (hengran/LLM_specific_utility: src/pointwise_performance_
#: answerem.py and without_passage_answer.py, tevatron-main-bge/src/test.sh): answers of up to
#: 4,096 new tokens, on the top-20 passages BGE-M3 retrieves, for every query of a dataset.
PAPER = {"max_new_tokens": 4096, "pool": "rp", "k": 20, "encoder": "BAAI/bge-m3"}
#: the sources that load the paper's query sets (KILT dev, 2WikiQA dev, MS MARCO QA factoid)
PAPER_QUERY_SETS = frozenset({"nq", "tq", "hotpotqa", "fever", "2wiki", "msmarco-fqa"})
#: the corpora the paper retrieves from (`CORPORA` names): MS MARCO's for its MS MARCO
#: queries, KILT's Wikipedia in DPR's 100-word passages for every other query set
PAPER_CORPORA = {"kilt-w100": "KILT's Wikipedia in DPR's 100-word passages, about 34M",
                 "msmarco-passage": "MS MARCO's 8.8M passages"}
#: the version of the prompts a build records (`prompt_version`; none recorded: 1): from 2 on,
#: passages are shown stripped, as the paper's `format_passage` shows them
PROMPT_VERSION = 2
POOL_NAMES = {"rp": "top-k retrieved", "hgp": "the human gold passages only",
              "mcp": "top-k retrieved plus the human gold passages"}


def departures(manifest: dict) -> list[str]:
    """Where the build `manifest` describes departs from the paper's labelling setting
    (`PAPER`), one clause each, in the card's order: queries, pool, k, retrieval, answer cap.
    [] when it follows it in everything the manifest records; what it does not record is not
    judged.

    >>> departures({"prompt_version": 2, "pool": "rp", "k": 20, "encoder": {"name": "bge-m3",
    ...             "model_id": "BAAI/bge-m3"}, "sampling": {"answer": {"max_tokens": 4096}}})
    []
    """
    config = manifest.get("config") or {}
    source = manifest.get("source_dataset") or ""
    found = _query_departures(manifest, source)
    if config.get("limit"):
        found.append(f"only the first {config['limit']:,} queries are labelled, not the whole "
                     "query set")
    pool = manifest.get("pool")
    if pool is not None and pool != PAPER["pool"]:
        found.append(f"the pool is `{pool}` ({POOL_NAMES.get(pool, pool)}), not the paper's "
                     "top-20 retrieved passages (`rp`)")
    if pool in ("rp", "mcp"):
        found += _retrieval_departures(manifest, config, source)
    cap = ((manifest.get("sampling") or {}).get("answer") or {}).get("max_tokens")
    if cap is not None and cap != PAPER["max_new_tokens"]:
        stats, reached = manifest.get("stats") or {}, ""
        if isinstance(stats.get("capped_answers"), int) and isinstance(stats.get("answers"), int):
            reached = f" ({stats['capped_answers']:,} of {stats['answers']:,} answers reached it)"
        found.append(f"answers are capped at {cap:,} new tokens, the paper's code at "
                     f"{PAPER['max_new_tokens']:,}{reached}")
    return found


def _query_departures(manifest: dict, source: str) -> list[str]:
    """The query set's and the prompt's departures."""
    found = []
    if source == "nq-sample":
        found.append("the queries are `nq-sample`, a 300-question sample of NQ-open bundled "
                     "with labeler, not a full query set")
    elif source.startswith("jsonl:"):
        found.append(f"the queries come from the file `{source[len('jsonl:'):]}`, not from one "
                     "of the paper's query sets")
    elif source and source not in PAPER_QUERY_SETS:
        found.append(f"the queries are `{source}`, not one of the paper's query sets "
                     f"({', '.join(sorted(PAPER_QUERY_SETS))})")
    if "prompt_templates" in manifest and manifest.get("prompt_version", 1) < PROMPT_VERSION:
        found.append("passages are shown as stored, not stripped as the paper's "
                     "`format_passage` shows them (prompt version 1)")
    return found


def _retrieval_departures(manifest: dict, config: dict, source: str) -> list[str]:
    """A retrieved pool's departures: k, the retriever, the corpus searched."""
    found = []
    k, run, encoder = manifest.get("k"), manifest.get("run"), manifest.get("encoder")
    if k is not None and k != PAPER["k"]:
        found.append(f"k = {k} retrieved passages per query, not {PAPER['k']}")
    if run:
        found.append(f"the retrieved passages come from the run file `{file_label(run)}`, "
                     "whose retriever is not recorded (the paper retrieves with BGE-M3)")
    elif encoder and encoder.get("model_id") != PAPER["encoder"]:
        found.append(f"dense retrieval with {encoder['name']} (`{encoder['model_id']}`), "
                     "not BGE-M3")
    # the corpus asked for, else the named corpus a dataset retrieves from by default
    corpus = config.get("corpus") or (manifest.get("corpus_source") or {}).get("name")
    if not run and not corpus and manifest.get("corpus_passages"):
        found.append(f"retrieval searched only the source's own "
                     f"{manifest['corpus_passages']:,} passages (those shipped with its "
                     "queries), not a full corpus as the paper's")
    wanted = "msmarco-passage" if source.startswith("msmarco") else "kilt-w100"
    if not run and corpus and corpus != wanted:
        size = manifest.get("corpus_passages")
        size = f" ({size:,} passages)" if isinstance(size, int) else ""
        found.append(f"retrieval searched `{file_label(corpus)}`{size}, not the paper's "
                     f"`{wanted}` ({PAPER_CORPORA[wanted]})")
    return found
