"""Artifact kinds: what the writer and `labeler validate` know of each kind of version folder
(the one registry of them is `labeler.tasks.KINDS`).

A kind names its folder, schemas/<name>.schema.json and cards/<name>.md.j2. Its statistics
are a pure function of its written records, its card context of its manifest alone, so that
`labeler validate` recomputes both. A labelling task (`labeler.tasks.base.Task`) is a kind;
so is `compare`'s comparison.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import ClassVar

from labeler.errors import InputError


class ArtifactKind(ABC):
    """One kind of artifact version. Subclasses set the class attributes and implement
    `statistics` and, if their records can be scored against, `reference`."""

    #: the folder name, schemas/<name>.schema.json, cards/<name>.md.j2
    name: ClassVar[str]
    #: tables beside "data", each written as `<table>-NNNNN.jsonl` per shard and following
    #: schemas/<name>-<table>.schema.json
    tables: ClassVar[tuple[str, ...]] = ()
    #: (statistics key, row label, "count" | "share" | "mean") for the summary table
    rows: ClassVar[tuple[tuple[str, str, str], ...]] = ()
    #: Hub card metadata: pretty_name, task_categories, tags
    metadata: ClassVar[dict] = {}
    #: `labeler score` averages ranking metrics over the queries whose gold set is not empty
    #: (as the utility paper does), instead of over all queries (as trec_eval does)
    rank_nonempty_gold: ClassVar[bool] = False
    #: `labeler score --rag` answers from its records (each holds a query's question, gold
    #: answers and candidates): with the utility task's prompts and greedy decoding, or with
    #: `own_answer_prompts`; False: --rag refuses the kind
    answers_from: ClassVar[bool] = False
    #: its manifest records the answer prompts and decoding it asked (a utility artifact's):
    #: --rag and compare ask the same again, so the call cache serves its own answers
    own_answer_prompts: ClassVar[bool] = False

    @staticmethod
    @abstractmethod
    def statistics(records: Iterable[dict]) -> dict:
        """The version's statistics, computed from the written data records alone."""

    @staticmethod
    def attachments(read: Callable[[str], Iterator[dict]]) -> dict[str, str | bytes]:
        """Extra files of a version, {file name: text or bytes} in the order the manifest
        lists them, made from its tables once all are written (`read(table)` yields a
        table's records in shard order)."""
        return {}

    @classmethod
    def rederive(cls, manifest: dict, tables: Mapping[str, list[dict]]
                 ) -> dict[str, list[dict]] | None:
        """One shard's tables made again from its written `tables` and `manifest` by the
        kind's own functions (`labeler validate` compares them with the files); None for a
        kind whose tables derive nothing."""
        return None

    @classmethod
    def card_context(cls, manifest: dict) -> dict:
        """Variables the kind's card template takes beyond the manifest and statistics,
        computed from the manifest alone (so `labeler validate` renders the same card)."""
        return {}

    @staticmethod
    def best_evidence(record: dict) -> str | None:
        """The kind's own evidence for a record's query, a row of `score --rag`'s table (a
        SEER record's rank-1 extraction); None for a kind that extracts none."""
        return None

    @staticmethod
    def reference(record: dict) -> tuple[dict[str, int], list[str]]:
        """How `labeler score` reads a record: ({pid: label} over the judged candidates, the
        gold set). Kinds whose records are no reference leave this refusing."""
        raise InputError("these records carry no relevance labels to score against")

