"""The paper's retrieval corpora as named sources for `--corpus NAME` (`CORPORA`).

- `wiki-dpr`: DPR's 100-word Wikipedia passages (psgs_w100, 21,015,324 passages of the
  2018-12-20 dump), the corpus the paper retrieves from for NQ, TriviaQA, HotpotQA and
  FEVER, as Tevatron/wikipedia-nq-corpus `{docid, title, text}`; pids are the psgs_w100
  ids, the same as DPR's and Tevatron's gold passage ids (`nq-tevatron`).
- `msmarco-passage`: MS MARCO's 8,841,823 passages, the paper's corpus for MS MARCO, as
  Tevatron/msmarco-passage-corpus (same layout; pids the MS MARCO passage ids).
- `kilt-wikipedia`: the KILT knowledge source (facebook/kilt_wikipedia, 2019-08-01 dump, 5.9M
  pages), cut into its paragraphs with pids `<wikipedia_id>_<paragraph>`: the corpus in which
  KILT provenance (`Query.gold_refs` of `nq`, `tq`, `hotpotqa`, `fever`) names gold passages.

Each is read through `datasets` (labeler.sources.hubload): the first use downloads it (tens
of GB for the Wikipedia ones), later ones read the local cache. The whole corpus is held in
memory, so it must fit on the machine; encoding it is resumable (labeler.retrieval.index).
Offline with no cached copy, the error names the corpus and how to pass a file instead.
"""

from __future__ import annotations

from labeler.sources import Corpus, Passage
from labeler.sources.hubload import load_hub, rows

#: name -> (Hub id, config, split)
HUB = {
    "wiki-dpr": ("Tevatron/wikipedia-nq-corpus", None, "train"),
    "msmarco-passage": ("Tevatron/msmarco-passage-corpus", None, "train"),
    "kilt-wikipedia": ("facebook/kilt_wikipedia", "2019-08-01", "full"),
}
#: The text's own licences: Wikipedia's text is CC BY-SA 3.0 (DPR's psgs_w100 and KILT's
#: knowledge source are cuts of Wikipedia dumps); MS MARCO's terms allow non-commercial
#: research use only ("other"), as labeler.sources.msmarco says.
LICENSE = {"wiki-dpr": "cc-by-sa-3.0", "msmarco-passage": "other",
           "kilt-wikipedia": "cc-by-sa-3.0"}
_FILE_HINT = ("or pass --corpus FILE: a FlashRAG corpus jsonl, one {id, contents} per line, "
              "contents \"Title\"\\ntext")


def load_wiki_dpr() -> Corpus:
    """DPR's 100-word Wikipedia passages (psgs_w100)."""
    return _load("wiki-dpr", from_tevatron_rows)


def load_msmarco_passage() -> Corpus:
    """MS MARCO's 8.8M passages."""
    return _load("msmarco-passage", from_tevatron_rows)


def load_kilt_wikipedia() -> Corpus:
    """The KILT knowledge source, one passage per paragraph, pids `<wikipedia_id>_<i>`."""
    return _load("kilt-wikipedia", from_kilt_rows)


def from_tevatron_rows(dataset) -> list[Passage]:
    """Tevatron corpus rows `{docid, title, text}` -> passages, pid = docid."""
    return [Passage(str(row["docid"]), row.get("title") or "", row["text"]) for row in dataset]


def from_kilt_rows(dataset) -> list[Passage]:
    """kilt_wikipedia rows `{wikipedia_id, wikipedia_title, text: {paragraph: [...]}}` ->
    one passage per paragraph, pid `<wikipedia_id>_<index>` (index 0 is the page title, as
    KILT counts paragraphs), text without its trailing newline."""
    passages = []
    for row in dataset:
        text = row["text"]
        paragraphs = text["paragraph"] if isinstance(text, dict) else [p["paragraph"]
                                                                      for p in rows(text)]
        passages += [Passage(f"{row['wikipedia_id']}_{i}", row["wikipedia_title"],
                             paragraph.strip())
                     for i, paragraph in enumerate(paragraphs)]
    return passages


def _load(name: str, convert) -> Corpus:
    repo, config, split = HUB[name]
    dataset, revision = load_hub(repo, config=config, split=split, what=f"corpus '{name}'",
                                 hint=_FILE_HINT)
    return Corpus(convert(dataset), name=name, revision=revision, license=LICENSE[name])
