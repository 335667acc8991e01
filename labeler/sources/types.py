"""What a source is made of: gold references, queries, and the loaded source (its passages:
`labeler.sources.passage`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from labeler.errors import InputError
from labeler.sources.passage import Passage

if TYPE_CHECKING:
    from labeler.sources.corpus import Corpus
    from labeler.sources.heads import Head

#: what a query can be (`Source.kind`)
KINDS = ("question", "claim")

@dataclass(frozen=True)
class GoldRef:
    """A human gold passage known only by where it is: a KILT provenance, which names a
    Wikipedia page and a paragraph range of the KILT knowledge source but holds no text."""

    wikipedia_id: str  # the KILT knowledge source's page id
    title: str  # the page title
    start_paragraph_id: int  # first paragraph (index into the page's `text` list)
    end_paragraph_id: int  # last paragraph, inclusive

    def pids_in(self, corpus: Corpus) -> list[str]:
        """The pids of the `corpus` passages it names (`Corpus.gold_pids`)."""
        return corpus.gold_pids(self.wikipedia_id, self.start_paragraph_id,
                                self.end_paragraph_id)

    @property
    def title_only(self) -> bool:
        """Whether it names only the page's title (KILT's paragraph 0), no text."""
        return self.end_paragraph_id == 0


@dataclass
class Query:
    """A question (or a claim), its gold answers, and the human-annotated gold passages (may
    be empty); `gold_refs` names gold passages whose text the source does not hold."""

    qid: str
    question: str
    answers: list[str]
    gold: list[Passage] = field(default_factory=list)
    gold_refs: list[GoldRef] = field(default_factory=list)
    # graded human judgments by pid (TREC qrels, label > 0 relevant) where the source has them
    relevance: dict[str, int] = field(default_factory=dict)


@dataclass
class Source:
    """A loaded dataset: what a build labels and where its pools come from."""

    name: str  # the name it was loaded by, e.g. "nq-sample", "jsonl:data/dev.jsonl"
    revision: str  # pins the data: sha256 of bundled/local files, or the Hub commit
    queries: list[Query]
    corpus: Corpus | None  # None: no passages to retrieve from (pass --corpus)
    # The licence the data's authors release it under, as a Hub licence id ("cc-by-sa-3.0",
    # "apache-2.0", ...; "other": their own terms; "unknown": nobody has said). Each adapter
    # declares its own; published cards take it from here.
    license: str = field(default="unknown", kw_only=True)
    # What a query is, which picks a task's prompts: "question" (answered), or "claim"
    # (verified: the answers are verdicts, SUPPORTS / REFUTES).
    kind: str = field(default="question", kw_only=True)
    # True when the answers are free-text sentences (MS MARCO) that an LLM must reduce to
    # short entity answers before has_answer can match them: `--answer-extractor`.
    sentence_answers: bool = field(default=False, kw_only=True)
    # The language of the queries and passages (ISO 639-1, "en"); None where nobody has said
    # (a user's file).
    language: str | None = field(default=None, kw_only=True)
    # The Hub dataset repos the data was read from ("facebook/kilt_tasks"); none for a bundled
    # sample or a user's file.
    repos: tuple[str, ...] = field(default=(), kw_only=True)
    # The BM25 settings the data's own experiments rank with, {fields, stemmer, k1, b} (any
    # of them; `labeler.retrieval.bm25_config.BM25.of`): the defaults of the --bm25-* options.
    bm25: dict = field(default_factory=dict, kw_only=True)
    # Set by a dry run that read only the first rows of the dataset's file (not downloaded):
    # the queries (and a corpus pooled from the file) are those rows'; `labeler.sources.heads`
    head: Head | None = field(default=None, kw_only=True)
    # (n, seed) where the queries are a seeded sample already (labeler.sources.sampling)
    drawn: tuple[int, int] | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise InputError(f"query kind {self.kind!r} is not one of {', '.join(KINDS)}",
                             field_name="kind")
        if not re.fullmatch(r"[a-z0-9][a-z0-9.+-]*", self.license):
            raise InputError(
                f"licence {self.license!r} is not a Hugging Face Hub licence id",
                field_name="license",
                hint="use one like cc-by-sa-4.0, apache-2.0, mit, other or unknown",
            )

    def describe(self) -> dict:
        """What a manifest records of the source: name, revision, licence, and its corpus
        (size; a named corpus's name, revision and licence; how much gold it holds)."""
        corpus = self.corpus
        return {
            "source_dataset": self.name,
            "source_revision": self.revision,
            "source_repos": list(self.repos),
            "language": self.language,
            "license": self.license,
            "corpus_passages": None if corpus is None else len(corpus),
            "corpus_source": None if corpus is None or corpus.name is None else {
                "name": corpus.name, "revision": corpus.revision, "license": corpus.license},
            "corpus_gold": self.gold_in_corpus(),
        }

    def gold_in_corpus(self) -> dict | None:
        """How many of the queries' human gold passages the corpus holds (a KILT reference
        counts as the passages it names, or as one missing where the corpus holds none):
        {gold, in_corpus, queries_with_gold, queries_with_gold_in_corpus, title_only}, where
        `title_only` counts the missing references that name only a page's title (KILT's
        paragraph 0: a passage corpus holds it as every passage's title, in no passage's
        text, so it maps onto none); None without a corpus or without gold."""
        if self.corpus is None:
            return None
        gold = found = queries = queries_found = title_only = 0
        for q in self.queries:
            pids = dict.fromkeys(p.pid for p in q.gold)  # references the corpus holds too
            unheld = [ref for ref in q.gold_refs if not ref.pids_in(self.corpus)]
            if not pids and not unheld:
                continue
            hits = sum(pid in self.corpus for pid in pids)
            gold, found = gold + len(pids) + len(unheld), found + hits
            queries, queries_found = queries + 1, queries_found + (hits > 0)
            title_only += sum(ref.title_only for ref in unheld)
        if not queries:
            return None
        return {"gold": gold, "in_corpus": found, "queries_with_gold": queries,
                "queries_with_gold_in_corpus": queries_found, "title_only": title_only}
