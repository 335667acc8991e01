"""Product-search datasets with graded human judgments, as the rubric experiment evaluates on:
products are passages (title: the product's name, text: its description), queries carry
their judgments as `Query.relevance`, and the judged-relevant products (grade > 0) the
catalogue holds are their gold.

`wands`: Wayfair's WANDS (Chen et al., ECIR 2022; MIT), the three tab-separated files of the
wayfair/WANDS repository at a pinned commit, read by `datasets`' csv builder: 42,994
products, 480 queries, 233,448 judgments graded as the experiment grades them, Exact 2,
Partial 1, Irrelevant 0. Its BM25 is the experiment's: `title^9.4,text^4`, English Snowball
stems (`Source.bm25`).
"""

from __future__ import annotations

from pathlib import Path

from labeler import settings
from labeler.errors import InputError
from labeler.paths import file_sha256
from labeler.sources.corpus import Corpus
from labeler.sources.hubload import fetch_url
from labeler.sources.types import Query, Source

#: the BM25 the experiment ranks products with: name boosted 9.4, description 4, stemmed
EXPERIMENT_BM25 = {"fields": "title^9.4,text^4", "stemmer": "english"}
#: wayfair/WANDS at its last commit ("Review (#1)"), read from GitHub's raw files
WANDS_REPO = "wayfair/WANDS"
WANDS_COMMIT = "3b74dcf4ba29ab8ff3e6a50b5b09fc627cb882b5"
WANDS_FILES = {"products": "dataset/product.csv", "queries": "dataset/query.csv",
               "labels": "dataset/label.csv"}
#: each file's columns, in order (the repository's README), all read as text
WANDS_COLUMNS = {
    "products": ("product_id", "product_name", "product_class", "category hierarchy",
                 "product_description", "product_features", "rating_count", "average_rating",
                 "review_count"),
    "queries": ("query_id", "query", "query_class"),
    "labels": ("id", "query_id", "product_id", "label"),
}
WANDS_GRADES = {"Exact": 2, "Partial": 1, "Irrelevant": 0}
RAW_GITHUB = "https://raw.githubusercontent.com"


def load_wands(*, limit: int | None = None) -> Source:
    """WANDS's first `limit` queries (file order) with their judgments, over all its products;
    `revision` is the pinned commit."""
    paths = {name: fetch_url(f"{settings.github_raw(RAW_GITHUB)}/{WANDS_REPO}/{WANDS_COMMIT}/"
                             f"{path}", what="dataset 'wands'", repo=WANDS_REPO)
             for name, path in WANDS_FILES.items()}
    queries = _csv(paths["queries"], WANDS_COLUMNS["queries"])
    if not len(queries):
        raise InputError("no queries", paths["queries"])
    queries = queries.select(range(min(limit or len(queries), len(queries))))
    wanted = {str(qid) for qid in queries["query_id"]}
    judged: dict[str, dict[str, int]] = {}
    labels = _csv(paths["labels"], WANDS_COLUMNS["labels"])
    for row, (qid, pid, label) in enumerate(zip(labels["query_id"], labels["product_id"],
                                                labels["label"]), 2):
        if label not in WANDS_GRADES:
            raise InputError(f"unknown label {label!r} (not {', '.join(WANDS_GRADES)})",
                             paths["labels"], row, "label")
        if qid in wanted:
            judged.setdefault(qid, {})[pid] = WANDS_GRADES[label]
    corpus = _products(paths["products"])
    source = Source("wands", f"{WANDS_REPO}@{WANDS_COMMIT}", [
        Query(str(qid), text, [], relevance=judged.get(str(qid), {}))
        for qid, text in zip(queries["query_id"], queries["query"])], corpus,
        license="mit", language="en", bm25=dict(EXPERIMENT_BM25))
    for q in source.queries:
        q.gold = [corpus[pid] for pid, grade in q.relevance.items() if grade > 0 and pid in corpus]
    return source


def _csv(path: str, columns: tuple[str, ...]):
    """A tab-separated file with a header of `columns` as a `datasets.Dataset` of text
    columns; InputError naming the file when its header differs."""
    import datasets

    with open(path, encoding="utf-8") as f:
        header = tuple(f.readline().rstrip("\r\n").split("\t"))
    if header != columns:
        raise InputError(f"the header is {list(header)}, not {list(columns)}", path, 1)
    features = datasets.Features({c: datasets.Value("string") for c in columns})
    return datasets.load_dataset("csv", data_files={"train": [path]}, split="train", sep="\t",
                                 features=features)


def _products(path: str) -> Corpus:
    """The products as a stored corpus: pid = product_id, title = product_name, text =
    product_description (empty where it has none)."""
    table = _csv(path, WANDS_COLUMNS["products"])

    def batches():
        for batch in table.iter(batch_size=8_192):
            yield {"pid": batch["product_id"],
                   "title": [name or "" for name in batch["product_name"]],
                   "text": [text or "" for text in batch["product_description"]]}

    return Corpus.stored(f"wands-products:{file_sha256(Path(path))}", batches, name="wands-products",
                         revision=WANDS_COMMIT, license="mit", what="WANDS products",
                         total=len(table))
