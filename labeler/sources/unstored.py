"""A named corpus the cache does not hold yet, as a dry run sees it: what is recorded beside
its pin (its passage count, exact or estimated), without downloading a byte of it."""

from __future__ import annotations

from dataclasses import dataclass

#: characters of a 100-word passage, estimated (about 5 letters and a space a word)
CHARS_PER_WORD = 6


@dataclass(frozen=True)
class UnstoredCorpus:
    """A named corpus not yet downloaded: its size as recorded, and how it is known."""

    name: str
    revision: str
    license: str
    passages: int  # recorded beside its pin: exact, a paper's estimate, or a lower bound
    known: str  # how `passages` is known, as a plan row says it
    words: int | None  # a passage's words where the cut fixes them (DPR's 100), else None
    maps_references: bool  # KILT provenance maps onto its passages (a corpus of KILT pages)

    fingerprint = None  # no embeddings or index can exist for a corpus never stored

    def __len__(self) -> int:
        return self.passages

    @property
    def exact(self) -> bool:
        return self.known.startswith("exact")

    def mean_chars(self) -> float:
        """A passage's characters, estimated: 100-word cuts from their words, else as one."""
        return (self.words or 100) * CHARS_PER_WORD


def unstored(name: str) -> UnstoredCorpus:
    """What a dry run knows of the named corpus `name` (a `CORPORA` name) before its download."""
    from labeler.sources.corpora import LICENSE, kilt_revision
    from labeler.sources.hub_files import HUB_FILES, KILT_SOURCE_PAGES
    from labeler.sources.kilt_w100 import CUT, PAPER_PASSAGES, WORDS

    if name in HUB_FILES:  # the Tevatron corpora: their pins record their passages
        spec = HUB_FILES[name]
        return UnstoredCorpus(name, spec.revision, LICENSE[name], spec.rows,
                              "exact: recorded beside its pin (not downloaded)", WORDS
                              if name == "wiki-dpr" else None, False)
    if name == "kilt-w100":
        return UnstoredCorpus(name, f"{kilt_revision()}:cut{CUT}", LICENSE[name],
                              PAPER_PASSAGES, "estimate: the paper's count (not downloaded)",
                              WORDS, True)
    return UnstoredCorpus(name, kilt_revision(), LICENSE[name], KILT_SOURCE_PAGES,
                          "lower bound: KILT's pages, a paragraph each at least "
                          "(not downloaded)", None, True)
