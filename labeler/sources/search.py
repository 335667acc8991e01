"""Search data: queries with graded human relevance (TREC qrels) over a passage corpus.

`search:PATH` loads a queries file, TSV (`qid<TAB>query` per line) or JSONL (`{qid, text}`;
`_id`/`id` and `query`/`question` are read too); its corpus comes from `--corpus` (a
FlashRAG-format file) and its judgments from `--qrels` (`with_qrels`). `cisi-sample` is the
bundled default (labeler/data/cisi_sample, made by scripts/make_cisi_sample.py).
"""

from __future__ import annotations

import hashlib
from importlib.resources import files
from pathlib import Path

from labeler.errors import InputError
from labeler.formats import Qrels
from labeler.lines import is_jsonl, iter_query_records
from labeler.paths import file_sha256
from labeler.sources.flashrag import read_corpus
from labeler.sources.types import Query, Source

_QID_FIELDS, _TEXT_FIELDS = ("qid", "_id", "id"), ("text", "query", "question")


def load_cisi_sample(*, limit: int | None = None) -> Source:
    """30 CISI queries with their human judgments, over the 965 documents they judge or BM25
    ranks in their top 20; `revision` is the sha256 over its data files."""
    folder = Path(str(files("labeler") / "data" / "cisi_sample"))
    source = load_search(folder / "queries.jsonl", limit=limit, name="cisi-sample")
    source.corpus = read_corpus(folder / "corpus.jsonl.gz")
    source.license = "unknown"  # CISI is a public research collection without a stated licence
    source.language = "en"
    source.revision = _digest(folder / n for n in ("queries.jsonl", "corpus.jsonl.gz"))
    return with_qrels(source, folder / "qrels.txt")


def load_search(path: str | Path, *, limit: int | None = None, name: str | None = None
                ) -> Source:
    """Queries from a TSV or JSONL file, in file order; no corpus yet (`--corpus`)."""
    path = Path(path)
    if is_jsonl(path):
        texts = dict(iter_query_records(path, _query_record))
    else:
        texts = _read_tsv(path)
    if not texts:
        raise InputError("no queries in the file", str(path))
    queries = [Query(qid, text, []) for qid, text in texts.items()][:limit]
    return Source(name or f"search:{path}", file_sha256(path), queries, None)


def with_qrels(source: Source, qrels: str | Path) -> Source:
    """`source` with each query's graded judgments from TREC qrels: `Query.relevance`, and
    as gold the judged-relevant (label > 0) passages its corpus holds."""
    qrels = Path(qrels)
    judged = Qrels.from_file(qrels)
    if not {q.qid for q in source.queries} & set(judged):
        raise InputError(f"the qrels judge none of the queries of '{source.name}'", str(qrels),
                         hint="pass the qrels of these queries (TREC: qid iter docid label)")
    for q in source.queries:
        q.relevance = dict(judged.get(q.qid, {}))
        if source.corpus is not None:
            q.gold = [source.corpus[pid] for pid, label in q.relevance.items()
                      if label > 0 and pid in source.corpus]
    source.revision = f"{source.revision}+qrels:{file_sha256(qrels)[:16]}"
    return source


def _query_record(record: dict) -> tuple[str, str]:
    qid = next((record[k] for k in _QID_FIELDS if k in record), None)
    text = next((record[k] for k in _TEXT_FIELDS if k in record), None)
    if not isinstance(qid, (str, int)) or str(qid) == "":
        raise InputError("missing or empty qid", field_name="qid")
    if not isinstance(text, str) or not text.strip():
        raise InputError("missing or empty query text", field_name="text")
    return str(qid), text.strip()


def _read_tsv(path: Path) -> dict[str, str]:
    texts: dict[str, str] = {}
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()
    except FileNotFoundError:
        raise InputError("no such file", str(path)) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8: {exc.reason}", str(path)) from None
    for line_no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        qid, tab, text = line.partition("\t")
        if not tab or not qid.strip() or not text.strip():
            raise InputError("a queries line is qid<TAB>query", str(path), line_no)
        if qid.strip() in texts:
            raise InputError(f"duplicate qid '{qid.strip()}'", str(path), line_no, "qid")
        texts[qid.strip()] = text.strip()
    return texts


def _digest(paths) -> str:
    digest = hashlib.sha256()
    for path in paths:
        digest.update(bytes.fromhex(file_sha256(path)))
    return digest.hexdigest()
