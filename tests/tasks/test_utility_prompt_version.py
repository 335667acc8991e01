"""Prompt version 2 shows a passage as the utility paper's `format_passage` does (title and
text each stripped); an artifact built before (no `prompt_version`: 1) is asked again as it
was built."""

from __future__ import annotations

from labeler.scoring.rag import prompt_version
from labeler.sources.passage import Passage
from labeler.sources.registry import load_source
from labeler.tasks.utility import (
    PASSAGE_FORMATS,
    PROMPT_VERSION,
    UtilityConfig,
    UtilityTask,
    departures,
    passage_prompt,
)


def test_the_prompt_strips_title_and_text_and_version_1_shows_them_as_stored():
    passage = Passage("1", " Reba ", "It's a duet.\n")
    new = passage_prompt("who sang it?", [passage])[-1].content
    old = passage_prompt("who sang it?", [passage], version=1)[-1].content
    assert "Information: \nReba It's a duet.\n Answer" in new
    assert "Information: \n Reba  It's a duet.\n\n Answer" in old


def test_on_nq_sample_the_prompts_differ_only_where_a_passage_has_edge_white_space():
    """79 of nq-sample's 4,349 passages have a title or text with white space at an edge:
    only their prompts change (the issue's count)."""
    corpus = load_source("nq-sample").corpus
    passages = [corpus[pid] for pid in corpus.pids(list(range(len(corpus))))]
    edged = [p for p in passages
             if p.title != p.title.strip() or p.text != p.text.strip()]
    changed = [p for p in passages if PASSAGE_FORMATS[1](p) != PASSAGE_FORMATS[2](p)]
    assert (len(passages), len(edged)) == (4349, 79)
    assert changed == edged


def test_the_manifest_records_the_version_and_an_old_artifact_reads_as_version_1():
    manifest = UtilityTask(UtilityConfig("nq-sample")).manifest()
    assert manifest["prompt_version"] == PROMPT_VERSION == 2
    assert prompt_version(manifest) == 2 and prompt_version({}) == 1
    assert any("prompt version 1" in d for d in departures({"prompt_templates": {}}))
    assert not any("prompt version" in d for d in departures(manifest | {"pool": "rp"}))
