"""Product-search datasets with graded human judgments, as the rubric experiment evaluates on:
products are passages (title: the product's name, text: its description), queries carry
their judgments as `Query.relevance`, and the judged-relevant products (grade > 0) the
catalogue holds are their gold.

`wands`: Wayfair's WANDS (Chen et al., ECIR 2022; MIT), the three tab-separated files of the
wayfair/WANDS repository at a pinned commit, read by `datasets`' csv builder: 42,994
products, 480 queries, 233,448 judgments graded as the experiment grades them, Exact 2,
Partial 1, Irrelevant 0 (a product judged twice for a query keeps its first grade). Its BM25
is the one the experiment's decision arms retrieve and fuse with: `title^9.4,text^4`, English
Snowball stems (`Source.bm25`; `labeler.sources.search_experiments`, whose BM25 baseline arm
alone weighs 9.3/4.1).

`esci`: Amazon's Shopping Queries Dataset (Reddy et al., 2022; Apache-2.0), the two Git LFS
parquet files of amazon-science/esci-data at a pinned commit, read with pyarrow in batches:
products in three locales (us, es, jp), about 130k queries and 2.6M judgments (the paper), all
of them (no locale or split filter) graded as the experiment grades them, Exact 3, Substitute 2,
Complement 1, Irrelevant 0. A product is its locale and id (`us:B01N5Y6002`: the files key
products by both; the experiment keys by id alone); its description is cleaned of HTML as the
experiment's lxml `text_content()` and white-space collapse do. Its BM25 is WANDS's.
"""

from __future__ import annotations

import html
import os
from pathlib import Path

import numpy as np
import pyarrow as pa

from labeler import settings
from labeler.errors import InputError
from labeler.sources.corpus import COMPRESSED, Corpus
from labeler.sources.hubload import fetch_url
from labeler.sources.sampling import drawn
from labeler.sources.search_experiments import DECISION_BM25
from labeler.sources.types import Query, Source

#: the BM25 the experiment's decision arms rank products with (`bm25_boosted`: name boosted
#: 9.4, description 4), stemmed
EXPERIMENT_BM25 = {"fields": DECISION_BM25, "stemmer": "english"}
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
#: amazon-science/esci-data's parquet files are Git LFS objects, served from here
MEDIA_GITHUB = "https://media.githubusercontent.com/media"
ESCI_REPO = "amazon-science/esci-data"
ESCI_COMMIT = "7916cdf6ab75a462e77f20ab40428a10923998d5"
ESCI_FILES = {"examples": "shopping_queries_dataset/shopping_queries_dataset_examples.parquet",
              "products": "shopping_queries_dataset/shopping_queries_dataset_products.parquet"}
#: each file's columns, in order (the repository's README)
ESCI_COLUMNS = {
    "examples": ("example_id", "query", "query_id", "product_id", "product_locale",
                 "esci_label", "small_version", "large_version", "split"),
    "products": ("product_id", "product_title", "product_description", "product_bullet_point",
                 "product_brand", "product_color", "product_locale"),
}
ESCI_GRADES = {"E": 3, "S": 2, "C": 1, "I": 0}


def load_wands(*, limit: int | None = None) -> Source:
    """WANDS's first `limit` queries (file order) with their judgments, over all its products;
    `revision` is the pinned commit."""
    paths = _github_files(RAW_GITHUB, WANDS_REPO, WANDS_COMMIT, WANDS_FILES, "wands")
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
        if qid in wanted:  # a (query, product) judged twice keeps its first grade, as the
            judged.setdefault(qid, {}).setdefault(pid, WANDS_GRADES[label])  # experiment
    return _source("wands", f"{WANDS_REPO}@{WANDS_COMMIT}", "mit", "en",
                   zip(queries["query_id"], queries["query"]), judged,
                   _products(paths["products"]))


def load_esci(*, limit: int | None = None, sample: tuple[int, int] | None = None) -> Source:
    """ESCI's first `limit` queries (in the order they first occur), or the seeded `sample`
    (n, seed) of them (`sampling.drawn`), with their judgments, over all its products;
    `revision` is the pinned commit. Only the queries kept become Python objects."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    paths = _github_files(MEDIA_GITHUB, ESCI_REPO, ESCI_COMMIT, ESCI_FILES, "esci")
    examples = pq.read_table(_parquet(paths["examples"], ESCI_COLUMNS["examples"]),
                             columns=["query", "query_id", "product_id", "product_locale",
                                      "esci_label"])
    labels = examples["esci_label"]
    unknown = pc.invert(pc.fill_null(pc.is_in(labels, pa.array(list(ESCI_GRADES))), False))
    if pc.any(unknown).as_py():
        row = pc.index(unknown, True).as_py()
        raise InputError(f"unknown label {labels[row].as_py()!r} (not {', '.join(ESCI_GRADES)})",
                         paths["examples"], row + 1, "esci_label")
    qids = examples["query_id"].to_numpy()
    firsts = np.sort(np.unique(qids, return_index=True)[1])
    if not len(firsts):
        raise InputError("no queries", paths["examples"])
    firsts = firsts[:limit] if sample is None else firsts[drawn(len(firsts), *sample)]
    wanted = examples.filter(pc.is_in(examples["query_id"], pa.array(qids[firsts])))
    judged: dict[str, dict[str, int]] = {}
    for qid, pid, locale, label in zip(*(wanted[c].to_pylist() for c in (
            "query_id", "product_id", "product_locale", "esci_label"))):
        judged.setdefault(str(qid), {})[f"{locale}:{pid}"] = ESCI_GRADES[label]
    queries = examples.take(pa.array(firsts))
    source = _source("esci", f"{ESCI_REPO}@{ESCI_COMMIT}", "apache-2.0", None,
                     zip(queries["query_id"].to_pylist(), queries["query"].to_pylist()), judged,
                     _esci_products(paths["products"]))
    source.drawn = sample
    return source


def _github_files(default: str, repo: str, commit: str, files: dict[str, str],
                  dataset: str) -> dict[str, str]:
    """`files` of GitHub's `repo` at `commit`, downloaded once from `default`'s
    `<owner>/<repo>/<commit>/<path>` (or LABELER_GITHUB_RAW's); their local paths by name."""
    base = settings.github_raw(default)
    return {name: fetch_url(f"{base}/{repo}/{commit}/{path}", what=f"dataset '{dataset}'",
                            repo=repo) for name, path in files.items()}


def _download_key(path: str) -> str:
    """What keys a downloaded file's stored corpus without reading its bytes (ESCI's products
    are over a gigabyte): its cache name, which hashes the URL and so the pinned commit and
    any mirror, and its size."""
    return f"{Path(path).name}:{Path(path).stat().st_size}"


def _source(name: str, revision: str, license: str, language: str | None, queries,
            judged: dict[str, dict[str, int]], corpus: Corpus) -> Source:
    """The Source of `queries` ((qid, text) pairs) judged as `judged` says (qid -> pid ->
    grade); a query's gold, its judged-relevant products the catalogue holds. `language`: its ISO
    639-1 code, None for ESCI (English, Spanish and Japanese: no one code names them)."""
    source = Source(name, revision, [
        Query(str(qid), text, [], relevance=judged.get(str(qid), {})) for qid, text in queries],
        corpus, license=license, language=language, bm25=dict(EXPERIMENT_BM25))
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

    return Corpus.stored(f"wands-products:{_download_key(path)}", batches, name="wands-products",
                         revision=WANDS_COMMIT, license="mit", what="WANDS products",
                         total=len(table), size=lambda: os.path.getsize(path))


def _parquet(path: str, columns: tuple[str, ...]) -> str:
    """`path`, after checking its columns are `columns` (InputError naming the file if not)."""
    import pyarrow.parquet as pq

    try:
        names = tuple(pq.read_schema(path).names)
    except (OSError, pa.ArrowException) as e:
        raise InputError(f"not a parquet file ({e})", path) from e
    if names != columns:
        raise InputError(f"the columns are {list(names)}, not {list(columns)}", path)
    return path


def _esci_products(path: str) -> Corpus:
    """ESCI's products as a stored corpus, read a batch at a time: pid = locale:product_id,
    title = product_title, text = product_description's text as the experiment cleans it
    (tags dropped, entities decoded, white space collapsed; empty where it has none)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    parquet = pq.ParquetFile(_parquet(path, ESCI_COLUMNS["products"]))

    def batches():
        for batch in parquet.iter_batches(batch_size=8_192, columns=[
                "product_id", "product_title", "product_description", "product_locale"]):
            text = pc.replace_substring_regex(batch["product_description"], "<[^>]*>", "")
            yield {"pid": pc.binary_join_element_wise(batch["product_locale"],
                                                      batch["product_id"], ":").to_pylist(),
                   "title": pc.fill_null(batch["product_title"], "").to_pylist(),
                   "text": [" ".join(html.unescape(t).split())
                            for t in pc.fill_null(text, "").to_pylist()]}

    return Corpus.stored(f"esci-products:{_download_key(path)}", batches,
                         name="esci-products", revision=ESCI_COMMIT, license="apache-2.0",
                         what="ESCI products", total=parquet.metadata.num_rows,
                         size=lambda: COMPRESSED * os.path.getsize(path))
