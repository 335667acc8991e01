"""Derive the bundled `nq-sample` (labeler/data/nq_sample/) from the real files in shared/data.

    python scripts/make_nq_sample.py [--data ../shared/data] [--questions 300] [--out DIR]

Queries: the first N questions of lost-in-the-middle's nq-open-oracle (NQ-open dev), each with
its human-annotated gold 100-word chunk (`ctxs[0]`, `isgold`). Corpus, as shared/data's
PROVENANCE.md suggests: all 2,655 oracle gold chunks + the 751 passages of the DPR nq-dev
sample + the 1,000 FlashRAG wiki passages, deduplicated by pid and by identical title+text.

Pids: the DPR psgs_w100 `passage_id` where the source has one; `nq-oracle:<sha1[:12]>` of
title+text for oracle chunks (they carry no id); `flashrag:<id>` for the FlashRAG sample.
Output is byte-reproducible (gzip mtime 0, fixed order), so `Source.revision` is stable.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "labeler" / "data" / "nq_sample"


def oracle_pid(title: str, text: str) -> str:
    """Content-derived id for an oracle chunk, which has no psgs_w100 id."""
    return "nq-oracle:" + hashlib.sha1(f"{title}\n{text}".encode()).hexdigest()[:12]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--questions", type=int, default=300)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    data, out = args.data, args.out

    corpus: dict[str, dict] = {}
    seen_text: dict[tuple[str, str], str] = {}

    def add(pid: str, title: str, text: str, origin: str) -> str:
        """Add a passage unless its pid or exact title+text is there; return the kept pid."""
        key = (title, text)
        if key in seen_text:
            return seen_text[key]
        if pid not in corpus:
            corpus[pid] = {"pid": pid, "title": title, "text": text, "origin": origin}
            seen_text[key] = pid
        return pid

    with gzip.open(data / "nq_oracle" / "nq-open-oracle.jsonl.gz", "rt", encoding="utf-8") as f:
        oracle = [json.loads(line) for line in f]
    queries = []
    for index, row in enumerate(oracle):
        gold = row["ctxs"][0]
        if not gold["isgold"]:
            raise SystemExit(f"nq-open-oracle line {index + 1}: ctxs[0] is not the gold chunk")
        pid = add(oracle_pid(gold["title"], gold["text"]), gold["title"], gold["text"], "nq_oracle")
        if index < args.questions:
            queries.append(
                {
                    "qid": f"nq-open-dev-oracle-{index}",
                    "question": row["question"],
                    "answers": row["answers"],
                    "gold_pids": [pid],
                }
            )

    dpr = json.loads((data / "nq_dpr_sample" / "sample.json").read_text(encoding="utf-8"))
    for row in dpr:
        for key in ("positive_ctxs", "negative_ctxs", "hard_negative_ctxs"):
            for ctx in row[key]:
                add(str(ctx["passage_id"]), ctx["title"], ctx["text"], "nq_dpr_sample")

    with open(data / "wiki_passages" / "sample_data.jsonl", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            title, _, text = row["contents"].partition("\n")
            add(f"flashrag:{row['id']}", title.strip('"'), text, "wiki_passages")

    out.mkdir(parents=True, exist_ok=True)
    _write_jsonl_gz(out / "queries.jsonl.gz", queries)
    _write_jsonl_gz(out / "corpus.jsonl.gz", list(corpus.values()))
    for folder, name in (("nq_oracle", "lost-in-the-middle"), ("nq_dpr_sample", "haystack"),
                         ("wiki_passages", "flashrag")):
        shutil.copyfile(data / folder / "LICENSE", out / f"LICENSE.{name}")
    origins = {o: sum(p["origin"] == o for p in corpus.values()) for o in
               ("nq_oracle", "nq_dpr_sample", "wiki_passages")}
    print(f"{len(queries)} queries, {len(corpus)} passages {origins} -> {out}")


def _write_jsonl_gz(path: Path, rows: list[dict]) -> None:
    """Deterministic gzip JSONL (mtime 0) so identical input gives identical bytes."""
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
        for row in rows:
            gz.write((json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8"))


if __name__ == "__main__":
    main()
