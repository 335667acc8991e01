"""The paper's retrieval corpora as named sources for `--corpus NAME` (`CORPORA`).

- `wiki-dpr`: DPR's 100-word Wikipedia passages (psgs_w100, 21,015,324 passages of the
  2018-12-20 dump), the corpus the paper retrieves from for NQ, TriviaQA, HotpotQA and
  FEVER, as Tevatron/wikipedia-nq-corpus `{docid, title, text}`; pids are the psgs_w100
  ids, the same as DPR's and Tevatron's gold passage ids (`nq-tevatron`).
- `msmarco-passage`: MS MARCO's 8,841,823 passages, the paper's corpus for MS MARCO, as
  Tevatron/msmarco-passage-corpus (same layout; pids the MS MARCO passage ids).
- `kilt-wikipedia`: the KILT knowledge source (2019-08-01 dump, 5.9M pages, `kilt_pages`), cut
  into its paragraphs with pids `<wikipedia_id>_<paragraph>`: the corpus in which KILT
  provenance (`Query.gold_refs` of `nq`, `tq`, `hotpotqa`, `fever`) names gold passages.

The files are `hub_files`'s, pinned; the first use downloads them (GBs) and streams them once
into the corpus's on-disk table, which later runs map without downloading or reading them.
Rows become passages in column batches (`corpus.in_batches`), never a Python object per
row of the source. Offline with no cached copy, the error names the corpus and how
to pass a file instead.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator

from labeler import settings
from labeler.sources.corpus import COMPRESSED, Corpus, in_batches
from labeler.sources.hub_files import (
    HUB_FILES,
    KILT_SOURCE_GIB,
    KILT_SOURCE_PAGES,
    KILT_SOURCE_REPO,
    KILT_SOURCE_URL,
)
from labeler.sources.hubload import (
    download,
    download_path,
    fetch_url,
    listed_bytes,
    to_download,
)

#: The text's own licences: Wikipedia's text is CC BY-SA 3.0 (DPR's psgs_w100 and KILT's
#: knowledge source are cuts of Wikipedia dumps); MS MARCO's terms allow non-commercial
#: research use only ("other"), as labeler.sources.msmarco says.
LICENSE = {"wiki-dpr": "cc-by-sa-3.0", "msmarco-passage": "other",
           "kilt-wikipedia": "cc-by-sa-3.0", "kilt-w100": "cc-by-sa-3.0"}
_FILE_HINT = ("or pass --corpus FILE: a FlashRAG corpus jsonl, one {id, contents} per line, "
              "contents \"Title\"\\ntext")
Batches = Iterator[dict[str, list[str]]]


def load_wiki_dpr() -> Corpus:
    """DPR's 100-word Wikipedia passages (psgs_w100)."""
    return _tevatron_corpus("wiki-dpr")


def load_msmarco_passage() -> Corpus:
    """MS MARCO's 8.8M passages."""
    return _tevatron_corpus("msmarco-passage")


def _tevatron_corpus(name: str) -> Corpus:
    """A Tevatron corpus at its pinned commit: once stored, no download and no `datasets`
    table; on first use its files are downloaded and streamed line by line."""
    from labeler.lines import read_jsonl

    spec = HUB_FILES[name]

    def batches() -> Batches:
        paths, _ = download(spec, what=f"corpus '{name}'", hint=_FILE_HINT)
        for path in paths:
            yield from tevatron_batches(row for _, row in read_jsonl(path, skip_blank=True))

    def size() -> int | None:  # gzip'd JSON lines
        listed = listed_bytes(spec)
        return None if listed is None else COMPRESSED * listed

    return _corpus(name, spec.revision, batches, spec.rows, size)


def load_kilt_wikipedia() -> Corpus:
    """The KILT knowledge source, one passage per paragraph, pids `<wikipedia_id>_<i>`."""
    return _corpus("kilt-wikipedia", kilt_revision(),
                   lambda: kilt_paragraph_batches(kilt_pages("kilt-wikipedia")), None,
                   kilt_source_bytes)


def kilt_pages(corpus: str) -> Iterator[dict]:
    """KILT's knowledge source, page by page as its file holds them (`{wikipedia_id,
    wikipedia_title, text: [paragraph, ...], ...}`, one JSON object a line), streamed from
    the copy downloaded once into the cache: never a table of its 35 GB, whose anchors and
    Wikidata fields no corpus reads. `corpus` is the corpus cut from them, which a failed
    download names."""
    from labeler.lines import read_jsonl
    from labeler.progress import track

    source = kilt_source()
    if source.startswith(("http://", "https://")):
        source = fetch_url(source, what=f"corpus '{corpus}'", repo=KILT_SOURCE_REPO,
                           hint=_FILE_HINT)
    pages = (page for _, page in read_jsonl(source, skip_blank=True))
    yield from track(pages, "reading KILT's pages", total=KILT_SOURCE_PAGES)


def kilt_revision() -> str:
    """What pins the KILT pages: the file's name (KILT has never re-released it)."""
    return kilt_source().rsplit("/", 1)[-1]


def kilt_source() -> str:
    """Where the KILT knowledge source is read from: KILT's URL, or the copy
    `LABELER_KILT_SOURCE` names."""
    return settings.kilt_source(KILT_SOURCE_URL)


def kilt_source_bytes() -> int | None:
    """About the bytes a corpus cut from KILT's pages takes in the cache, with room to spare:
    its source's (the cut keeps the pages' text, not their anchors and Wikidata fields), read
    from a local copy or the one downloaded, else KILT's declared size for its own URL, which
    is downloaded into the same cache first: that download's bytes too. None for another URL
    not downloaded yet, or offline (the download says why)."""
    source = kilt_source()
    if not source.startswith(("http://", "https://")):
        return os.path.getsize(source) if os.path.isfile(source) else None
    if (downloaded := download_path(source)).exists():
        return downloaded.stat().st_size
    if source != KILT_SOURCE_URL or settings.offline():
        return None
    declared = round(KILT_SOURCE_GIB * 2**30)
    return declared + to_download(source, declared)


def tevatron_batches(rows: Iterable[dict]) -> Batches:
    """Tevatron corpus rows `{docid, title, text}` -> passage column batches, pid = docid."""
    return in_batches((str(row["docid"]), row.get("title") or "", row["text"]) for row in rows)


def kilt_paragraph_batches(pages: Iterable[dict]) -> Batches:
    """KILT pages -> one passage per paragraph, pid `<wikipedia_id>_<index>` (index 0 is the
    page title, as KILT counts paragraphs), text without its trailing newline. A page's `text`
    is a list of paragraphs (KILT's file) or `{paragraph: [...]}` (the Hub builder's layout)."""
    return in_batches((f"{page['wikipedia_id']}_{i}", page["wikipedia_title"], paragraph.strip())
                      for page in pages
                      for i, paragraph in enumerate(page["text"]["paragraph"]
                                                    if isinstance(page["text"], dict)
                                                    else page["text"]))


def _corpus(name: str, revision: str, batches: Callable[[], Batches], total: int | None,
            size: Callable[[], int | None]) -> Corpus:
    """The named corpus at `revision`, stored once from its passage batches (an on-disk table
    memory-mapped on later runs) where the cache's disk has about `size()` bytes free."""
    return Corpus.stored(f"{name}@{revision}", batches, name=name, revision=revision,
                         license=LICENSE[name], what=f"corpus '{name}'", total=total,
                         size=size)
