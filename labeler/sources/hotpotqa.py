"""`hotpotqa-distractor`: HotpotQA dev, distractor setting (7,405 questions; the paper's
`hotpotqa` is KILT's 5,600, labeler.sources.kilt). The paragraphs named by `supporting_facts`
are the human gold; the corpus pools every context paragraph of the whole split, whatever
`limit` loads, so pools do not change with --limit. A
paragraph's pid is its Wikipedia title with spaces as underscores (HotpotQA's own key)."""

from __future__ import annotations

from labeler.sources.corpus import Corpus
from labeler.sources.hub_files import HUB_FILES
from labeler.sources.hubload import head, load_hub, read_from
from labeler.sources.passage import Passage
from labeler.sources.types import Query, Source

#: HotpotQA is CC BY-SA 4.0 (hotpotqa.github.io; the Hub card says the same).
LICENSE = "cc-by-sa-4.0"


def load_hotpotqa(*, limit: int | None = None) -> Source:
    """HotpotQA distractor validation from the Hub."""
    spec = HUB_FILES["hotpotqa-distractor"]
    dataset, revision = load_hub(spec)
    return read_from(from_dataset(dataset, name="hotpotqa-distractor", revision=revision,
                                  license=LICENSE, limit=limit), spec)


def from_dataset(dataset, *, name: str, revision: str, license: str = "unknown",
                 limit: int | None = None) -> Source:
    """HotpotQA-layout rows (`context{title,sentences}`, `supporting_facts{title,sent_id}`)."""
    pool = {}
    for row in dataset:
        context = row["context"]
        for title, sentences in zip(context["title"], context["sentences"]):
            pid = title.replace(" ", "_")
            pool.setdefault(pid, Passage(pid, title, "".join(sentences).strip()))
    queries = []
    for row in head(dataset, limit):
        titles = set(row["context"]["title"])
        supporting = dict.fromkeys(row["supporting_facts"]["title"])
        gold = [pool[t.replace(" ", "_")] for t in supporting if t in titles]
        queries.append(Query(str(row["id"]), row["question"], [row["answer"]], gold))
    return Source(name, revision, queries, Corpus(list(pool.values())), license=license)
