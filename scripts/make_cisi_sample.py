"""Derive the bundled `cisi-sample` (labeler/data/cisi_sample/) from the CISI files in shared/data.

    python scripts/make_cisi_sample.py [--data ../shared/data] [--queries 30] [--top 20]

Queries: the first N CISI queries that have relevance judgments (CISI.QRY `.W`, CISI.REL).
Corpus: every document those queries' judgments name, plus each query's top BM25 documents
over the whole collection (labeler.retrieval.bm25), in CISI order, as FlashRAG records
`{id, contents: "\\"Title\\"\\ntext"}`. Qrels: their judgments as TREC qrels (CISI's are
binary: label 1). Output is byte-reproducible (gzip mtime 0, fixed order).
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
from pathlib import Path

from labeler.retrieval.bm25 import bm25_run
from labeler.sources.corpus import Corpus
from labeler.sources.passage import Passage
from labeler.sources.types import Query

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "labeler" / "data" / "cisi_sample"


def fields(path: Path) -> list[dict[str, str]]:
    """The `.I`-numbered records of a SMART-format file, field letter -> text (one line)."""
    records: list[dict[str, str]] = []
    key = None
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        mark = re.match(r"^\.([A-Z])(?:\s+(\d+))?\s*$", line)
        if mark and mark.group(1) == "I":
            records.append({"I": mark.group(2)})
            key = None
        elif mark:
            key = mark.group(1)
            records[-1].setdefault(key, "")
        elif key is not None:
            records[-1][key] = f"{records[-1][key]} {line.strip()}".strip()
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    cisi = args.data / "cisi"
    docs = [Passage(r["I"], r.get("T", ""), r.get("W", "")) for r in fields(cisi / "CISI.ALL")]
    judged: dict[str, dict[str, int]] = {}
    for line in (cisi / "CISI.REL").read_text().splitlines():
        qid, pid = line.split()[:2]
        judged.setdefault(qid, {})[pid] = 1
    queries = [Query(r["I"], r["W"], []) for r in fields(cisi / "CISI.QRY") if r["I"] in judged]
    queries = queries[:args.queries]
    top = bm25_run(Corpus(docs), queries, k=args.top)
    keep = {pid for q in queries for pid in [*judged[q.qid], *top[q.qid]]}
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "queries.jsonl", "w", encoding="utf-8") as f:
        f.writelines(json.dumps({"qid": q.qid, "text": q.question}, ensure_ascii=False) + "\n"
                     for q in queries)
    with open(out / "corpus.jsonl.gz", "wb") as raw, \
            gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
        for d in docs:
            if d.pid in keep:
                line = {"id": d.pid, "contents": f'"{d.title}"\n{d.text}'}
                f.write((json.dumps(line, ensure_ascii=False) + "\n").encode())
    with open(out / "qrels.txt", "w", encoding="utf-8") as f:
        for q in queries:
            f.writelines(f"{q.qid} 0 {pid} {label}\n" for pid, label in judged[q.qid].items())
    print(f"{len(queries)} queries, {len(keep)} documents, "
          f"{sum(len(judged[q.qid]) for q in queries)} judgments -> {out}")


if __name__ == "__main__":
    main()
