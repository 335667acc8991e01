"""Dataset sources: queries with answers and human gold passages, plus a passage corpus.

`load_source(name)` resolves a name through `SOURCES` (one lazy registry, adapters imported
only when used) or `jsonl:PATH` for any FlashRAG-format dataset file; its `corpus` through
`CORPORA` (the paper's corpora by name) or a FlashRAG-format corpus file. The types are in
`labeler.sources.types`, the registry in `labeler.sources.registry`; each name below is
imported on first use (`Corpus` needs pyarrow, which `labeler score` does not).
"""

from labeler.lazy import lazy_exports

#: public name -> the module that defines it
_EXPORTS = {
    **dict.fromkeys(("GoldRef", "KINDS", "Query", "Source"), "labeler.sources.types"),
    **dict.fromkeys(("CORPORA", "DEFAULT_CORPORA", "JSONL_PREFIX", "SEARCH_PREFIX", "SOURCES",
                     "available", "load_corpus", "load_source"), "labeler.sources.registry"),
    "Corpus": "labeler.sources.corpus",
    "Passage": "labeler.sources.passage",
}

__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
