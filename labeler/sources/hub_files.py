"""Where every named dataset and corpus lives: the data files `datasets` reads directly, at a
pinned Hub commit, so no loading script runs (datasets 4+ refuses them) and a source reads the
same bytes whatever the repo's main branch becomes. docs/building.md ("Hub sources") has this table.

Chosen from the Hub's file listings (searched 2025): a repo's own data files where it has them
(also where a loading script sits beside them, as on the Tevatron repos), else its parquet
conversion. `size` is the listing's, for the one file a source reads; `license` is the repo
card's (each adapter declares the data's own licence). Where a fact could not be confirmed it
says so in `note`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HubFiles:
    """Data files of one split in a Hub dataset repo, at a pinned revision."""

    repo: str
    revision: str  # a commit sha; a branch name only where no sha could be confirmed
    files: tuple[str, ...]
    format: str  # the `datasets` builder that reads them: "parquet" or "json"
    split: str  # the split name the source asks for
    size: str  # as the Hub lists the file(s)
    license: str  # the repo card's licence field ("none": the card declares none)
    script: str | None = None  # the repo's loading script, which is not run
    note: str = ""
    # the file's rows, where known: a corpus's passages (its progress bar's total), a JSON
    # dataset's records (a dry run's count of a file it does not download: labeler.sources.heads)
    rows: int | None = None
    filters: bool = False  # the source leaves some rows out, so its rows are not its queries
    language: str = "en"  # of its queries and passages (ISO 639-1): every one listed is English


def _kilt(config: str, size: str, split: str = "validation", note: str = "") -> HubFiles:
    return HubFiles("facebook/kilt_tasks", "1cad10cf9f9fd11636165a712988bccb9435be71",
                    (f"{config}/{split}-00000-of-00001.parquet",), "parquet", split, size, "mit",
                    note="; ".join(filter(None, ["main after 'Convert dataset to Parquet (#2)'",
                                                 note])), filters=True)  # rows with no gold


def _flashrag(path: str, split: str, size: str, note: str = "", rows: int | None = None,
              filters: bool = False) -> HubFiles:
    return HubFiles("RUC-NLPIR/FlashRAG_datasets", "578fa499dca93cae1a12cd38803855b12f13ded0",
                    (path,), "json", split, size, "cc-by-sa-4.0", note=note, rows=rows,
                    filters=filters)


#: source key -> its files; keys are the dataset/corpus names, plus the TriviaQA questions
HUB_FILES: dict[str, HubFiles] = {
    "nq": _kilt("nq", "2.43 MB"),
    "tq": _kilt("triviaqa_support_only", "unconfirmed"),
    "hotpotqa": _kilt("hotpotqa", "1.05 MB"),
    "fever": _kilt("fever", "1.03 MB"),
    "tq-questions": HubFiles(
        "mandarjoshi/trivia_qa", "0f7faf33a3908546c6fd5b73a660e0f8ff173c2f",
        ("unfiltered.nocontext/validation-00000-of-00001.parquet",), "parquet", "validation",
        "4.39 MB", "unknown", note="merge of 'Convert dataset to Parquet (#8)'"),
    "msmarco-fqa": HubFiles(
        "microsoft/ms_marco", "a47ee7aae8d7d466ba15f9f0bfac3b3681087b3a",
        ("v1.1/validation-00000-of-00001.parquet",), "parquet", "validation", "21.4 MB",
        "none", note="'Convert dataset to Parquet (#5)'", filters=True),  # factoid only
    "2wiki": _flashrag("2wikimultihopqa/dev.jsonl", "dev", "54.7 MB",
                       "12,576 questions, as the utility paper's Table 1 counts", 12_576),
    # SEER's training splits (its Table 3: 79.1k / 78.7k / 88.9k): DPR's NQ-open and TriviaQA
    # train as FlashRAG ships them, and KILT's HotpotQA train, whose dev (5.6k) is SEER's
    # HotpotQA test. FlashRAG's nq/ and triviaqa/ each have one commit (their July 2024
    # uploads, b068341 and 896e34b) in every listing seen, main's included; that the 2wiki pin
    # holds them is inferred from that, not seen.
    "nq-open-train": _flashrag("nq/train.jsonl", "train", "9.96 MB",
                               "DPR's NQ-open train split, 79,168 questions; pin inferred",
                               79_168, filters=True),  # long answers
    "tq-train": _flashrag("triviaqa/train.jsonl", "train", "33 MB",
                          "DPR's TriviaQA train split, 78,785 questions; pin inferred", 78_785),
    "hotpotqa-train": _kilt("hotpotqa", "16.3 MB", "train", "88,869 questions"),
    "nq-tevatron": HubFiles(
        "Tevatron/wikipedia-nq", "a74adc28b51157e1db1a75aff1fb056651df69b8",
        ("nq-dev.jsonl.gz",), "json", "dev", "150 MB", "none", script="wikipedia-nq.py"),
    "tq-tevatron-distant": HubFiles(
        "Tevatron/wikipedia-trivia", "a3896e5a56a47518ae9b9fb155f3144c28fe39dd",
        ("trivia-dev.jsonl.gz",), "json", "dev", "148,334,995 B", "none",
        script="wikipedia-trivia.py"),
    "hotpotqa-distractor": HubFiles(
        "hotpotqa/hotpot_qa", "refs/convert/parquet", ("distractor/validation/0000.parquet",),
        "parquet", "validation", "27,462,047 B", "cc-by-sa-4.0", script="hotpot_qa.py",
        note="parquet conversion; no commit sha of it could be confirmed, so the branch is "
             "named and the manifest records the commit it resolved to"),
    "wiki-dpr": HubFiles(
        "Tevatron/wikipedia-nq-corpus", "56fe4cbb5f79b501f4441c5f1a150695ba2d4088",
        ("corpus.jsonl.gz",), "json", "train", "4.73 GB", "none",
        script="wikipedia-nq-corpus.py", note="DPR psgs_w100, 21,015,324 passages",
        rows=21_015_324),
    "msmarco-passage": HubFiles(
        "Tevatron/msmarco-passage-corpus", "5b250efbb2149162100c58f2394e990651b47beb",
        ("corpus.jsonl.gz",), "json", "train", "1.12 GB", "none",
        script="msmarco-passage-corpus.py", note="8,841,823 passages", rows=8_841_823),
}

#: The KILT knowledge source (5,903,530 pages of the 2019-08-01 dump, one JSON object a line:
#: `{_id, wikipedia_id, wikipedia_title, text: [paragraph, ...], anchors, categories, history,
#: wikidata_info}`). facebook/kilt_wikipedia (@368d91fb8e1ed16ee210a1ec800d659a8e7b0ae3) holds
#: only its loading script, which downloads this file, and its parquet conversion is partial
#: (`2019-08-01/partial-full`), so the canonical file is read by URL (34.76 GiB, as KILT's
#: README says); `LABELER_KILT_SOURCE` names another copy (a URL or a local path).
KILT_SOURCE_URL = "http://dl.fbaipublicfiles.com/KILT/kilt_knowledgesource.json"
KILT_SOURCE_GIB = 34.76
KILT_SOURCE_PAGES = 5_903_530
KILT_SOURCE_REPO = "facebook/kilt_wikipedia"
KILT_SOURCE_SCRIPT = "kilt_wikipedia.py"
