"""`kilt-w100`: the utility paper's retrieval corpus for the KILT sets and 2WikiQA — KILT's
knowledge source (the 2019-08-01 Wikipedia, `kilt-wikipedia`) cut into 100-word passages the
way DPR cut Wikipedia into psgs_w100: each page's text, without its title, split on white
space into consecutive blocks of 100 words, the last one shorter; the page title is every
passage's title ("about 34M" passages, the paper's § Retrieval; its code reads
`data/kilt_data/corpus_passage.jsonl`).

KILT's markup prefixes (`Section::::`, `BULLET::::`) are dropped and their words kept: DPR
dropped lists and tables, but KILT provenance can point into them. A passage keeps its page
id and the paragraphs its words come from (`page`, `start_paragraph`, `end_paragraph`, KILT's
counting: paragraph 0 is the title), so a KILT provenance maps onto the passages that
overlap its paragraphs (`Corpus.gold_pids`) and `hgp`/`mcp` pools work. pid:
`<wikipedia_id>-<n>`, n counting the page's passages from 0.

The pages stream from the Hub in batches and the passages are written once into the cache
as an on-disk table (labeler.sources.corpus), so memory stays bounded at any size.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from labeler import settings
from labeler.sources.corpus import (
    COLUMNS,
    SPAN_COLUMNS,
    Batch,
    Corpus,
    corpus_folder,
    in_batches,
    storing,
)

NAME = "kilt-w100"
WORDS = 100
#: bumped when the cut changes, so a stored corpus is cut again
CUT = 1
#: the paper's passage count (§ Retrieval: "about 34M"; its Table 1 says 32M)
PAPER_PASSAGES = 34_000_000
#: BGE-M3's seconds a passage by device, assumed (docs/measurements.md, "Corpus scale"):
#: ~67 GFLOP at ~35 TFLOP/s on a GPU; on a CPU MiniLM's measured 0.081 s scaled by the
#: parameter ratio
SECONDS_PER_PASSAGE = {"GPU": 0.002, "CPU": 1.1}
_MARKUP = re.compile(r"^(Section|BULLET)::::(- )?")


def passages_of(page: dict) -> list[tuple[str, str, str, int, int]]:
    """One KILT page `{wikipedia_id, wikipedia_title, text: [paragraph, ...]}` -> its
    passages (pid, title, text, start paragraph, end paragraph)."""
    page_id, title = str(page["wikipedia_id"]), page["wikipedia_title"]
    text = page["text"]
    paragraphs = text["paragraph"] if isinstance(text, dict) else list(text)
    words: list[tuple[str, int]] = [
        (word, i) for i, paragraph in enumerate(paragraphs) if i > 0
        for word in _MARKUP.sub("", paragraph.strip()).split()]
    passages = []
    for n, start in enumerate(range(0, len(words), WORDS)):
        block = words[start:start + WORDS]
        passages.append((f"{page_id}-{n}", title, " ".join(w for w, _ in block),
                         block[0][1], block[-1][1]))
    return passages


def cut(pages: Iterable[dict]) -> Iterator[Batch]:
    """KILT pages, in order -> column batches of their passages."""
    return in_batches(((pid, title, text, str(page["wikipedia_id"]), start, end)
                       for page in pages
                       for pid, title, text, start, end in passages_of(page)),
                      (*COLUMNS, *SPAN_COLUMNS))


def load_kilt_w100() -> Corpus:
    """The corpus, cut from the KILT pages on first use; its revision names KILT's file and
    the cut."""
    from labeler.sources.corpora import (
        LICENSE,
        kilt_pages,
        kilt_revision,
        kilt_source,
        kilt_source_bytes,
    )

    revision = f"{kilt_revision()}:cut{CUT}"
    key = f"{NAME}@{kilt_source()}:cut{CUT}"
    first_use = not (corpus_folder(key) / "corpus.json").exists()
    if first_use and storing() and not settings.offline():  # a dry run downloads nothing
        _first_use_notice(kilt_source())  # offline, the download's error says enough
    return Corpus.stored(key, lambda: cut(kilt_pages(NAME)), name=NAME, revision=revision,
                         license=LICENSE[NAME], what=f"corpus '{NAME}'",
                         size=kilt_source_bytes)


def _first_use_notice(source: str) -> None:
    """Once, before the download: what the first use downloads (from `source`, KILT's URL or
    the copy LABELER_KILT_SOURCE names) or reads, stores and encodes."""
    import torch

    from labeler.progress import info
    from labeler.sources.hub_files import KILT_SOURCE_GIB

    device = "GPU" if torch.cuda.is_available() else "CPU"
    hours = PAPER_PASSAGES * SECONDS_PER_PASSAGE[device] / 3600
    fetch = "downloads" if source.startswith(("http://", "https://")) else "reads"
    info(f"{NAME}: the first use {fetch} KILT's Wikipedia ({KILT_SOURCE_GIB} GiB, "
         f"{source}), cuts it into about {PAPER_PASSAGES / 1e6:.0f}M 100-word passages "
         f"and stores them once; encoding them with BGE-M3 takes about {hours:,.0f} h on one "
         f"{device} (an estimate: docs/measurements.md, Corpus scale); later runs reuse both")
