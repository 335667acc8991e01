"""FlashRAG formats: datasets `{id, question, golden_answers[, gold_passages]}` (`jsonl:PATH`,
and from the Hub `2wiki`, `tq-train`, `tq-test`, `nq-open-train`, `nq-open-test`) and corpora
`{id, contents: "\\"Title\\"\\ntext"}` (`--corpus`).

`gold_passages`, optional, lists passages as `{id, contents}` or `{id, title, text}`.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from pathlib import Path

from labeler.errors import InputError
from labeler.lines import read_jsonl
from labeler.paths import file_sha256
from labeler.sources.corpus import COMPRESSED, Corpus, in_batches
from labeler.sources.hub_files import HUB_FILES
from labeler.sources.hubload import load_hub, read_from
from labeler.sources.kilt import LICENSE as KILT_LICENSE
from labeler.sources.passage import Passage
from labeler.sources.types import Query, Source

#: The datasets' own licences, not the collection's cc-by-sa-4.0 on FlashRAG_datasets' card:
#: 2WikiMultihopQA Apache-2.0 (Alab-NII/2wikimultihop LICENSE); TriviaQA's as for KILT's `tq`.
TWOWIKI_LICENSE = "apache-2.0"
TQ_LICENSE = KILT_LICENSE["tq"]


def load_jsonl(path: str | Path, *, limit: int | None = None) -> Source:
    """A FlashRAG-format dataset file; `revision` is its sha256. No corpus (pass --corpus)."""
    path = Path(path)
    queries = []
    for line_no, record in read_jsonl(path, skip_blank=True):
        queries.append(query_from_record(record, str(path), line_no))
        if limit is not None and len(queries) >= limit:
            break
    if not queries:
        raise InputError("no queries in the file", str(path))
    revision = file_sha256(path)
    return Source(f"jsonl:{path}", revision, queries, None, license="unknown")  # a user's file


def load_2wiki(*, limit: int | None = None) -> Source:
    """2WikiMultihopQA dev (FlashRAG layout) from the Hub; retrieves from kilt-w100 by default."""
    return load_hub_split("2wiki", license=TWOWIKI_LICENSE, limit=limit)


def load_tq_train(*, limit: int | None = None) -> Source:
    """TriviaQA train as DPR split it (78,785 questions), SEER's TriviaQA training set."""
    return load_hub_split("tq-train", license=TQ_LICENSE, limit=limit)


def load_tq_test(*, limit: int | None = None) -> Source:
    """TriviaQA test as DPR split it (11,313 questions), SEER's TriviaQA test set."""
    return load_hub_split("tq-test", license=TQ_LICENSE, limit=limit)


def load_hub_split(name: str, *, license: str, limit: int | None = None,
                   prepare: Callable[[Query], Query | None] | None = None) -> Source:
    """Dataset `name` of `HUB_FILES`, a FlashRAG-layout file, read into Arrow by `datasets`
    (rows become Python objects only as they are taken); `prepare` may change a query or
    leave it out (None), and `limit` counts the queries kept."""
    spec = HUB_FILES[name]
    dataset, revision = load_hub(spec)
    where = f"{spec.repo}/{spec.files[0]}"
    queries = []
    for line_no, row in enumerate(dataset, 1):
        if limit is not None and len(queries) >= limit:
            break
        query = query_from_record(row, where, line_no)
        query = query if prepare is None else prepare(query)
        if query is not None:
            queries.append(query)
    return read_from(Source(name, revision, queries, None, license=license), spec)


def query_from_record(record: dict, where: str, line_no: int) -> Query:
    """One FlashRAG dataset record -> Query; InputError names the file, line and field."""

    def fail(message: str, field: str) -> InputError:
        return InputError(message, where, line_no, field)

    qid, question, answers = record.get("id"), record.get("question"), record.get("golden_answers")
    if not isinstance(qid, (str, int)) or str(qid) == "":
        raise fail("missing or empty id", "id")
    if not isinstance(question, str) or not question.strip():
        raise fail("missing or empty question", "question")
    if isinstance(answers, str):
        answers = [answers]
    if not isinstance(answers, list) or not answers or not all(isinstance(a, str) for a in answers):
        raise fail("golden_answers must be a non-empty list of strings", "golden_answers")
    gold = record.get("gold_passages") or []
    if not isinstance(gold, list):
        raise fail("gold_passages must be a list", "gold_passages")
    return Query(str(qid), question, answers, [_gold(p, fail) for p in gold])


def read_corpus(path: str | Path) -> Corpus:
    """A FlashRAG corpus (`.jsonl` or `.jsonl.gz`), stored as an on-disk table on first use
    and memory-mapped after: the cache is keyed by the file's path, size and mtime, so an
    edited file is read again. Duplicate or malformed lines fail at their line."""
    path = Path(path)
    try:
        stat = path.stat()
    except FileNotFoundError:
        raise InputError("no such file", str(path)) from None
    lines = array("q")  # the line of each passage, for a duplicate's error

    def rows():
        for line_no, record in read_jsonl(path, skip_blank=True):
            pid, contents = record.get("id"), record.get("contents")
            if not isinstance(pid, (str, int)) or str(pid) == "":
                raise InputError("missing or empty id", str(path), line_no, "id")
            if not isinstance(contents, str):
                raise InputError("missing or non-string contents", str(path), line_no, "contents")
            lines.append(line_no)
            yield (str(pid), *split_contents(contents))
        if not lines:
            raise InputError("no passages in the corpus file", str(path))

    def duplicate(row: int, pid: str) -> InputError:
        return InputError(f"duplicate passage id '{pid}'", str(path), lines[row], "id")

    key = f"flashrag-file:{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"
    return Corpus.stored(key, lambda: in_batches(rows()), what=f"corpus {path.name}",
                         duplicate=duplicate,
                         size=lambda: stat.st_size * (COMPRESSED if path.suffix == ".gz" else 1))


def split_contents(contents: str) -> tuple[str, str]:
    """FlashRAG `contents` -> (title, text): the first line, unquoted, is the title."""
    title, newline, text = contents.partition("\n")
    return (title.strip().strip('"'), text) if newline else ("", contents)


def _gold(passage: object, fail) -> Passage:
    if not isinstance(passage, dict) or not isinstance(passage.get("id"), (str, int)):
        raise fail("each gold passage needs an id", "gold_passages")
    if isinstance(passage.get("contents"), str):
        return Passage(str(passage["id"]), *split_contents(passage["contents"]))
    if isinstance(passage.get("text"), str):
        return Passage(str(passage["id"]), str(passage.get("title") or ""), passage["text"])
    raise fail("each gold passage needs contents, or title and text", "gold_passages")
