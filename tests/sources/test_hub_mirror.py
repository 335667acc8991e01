"""Every named dataset and corpus through its real loading code and `datasets`, against the
tests' Hub server mirroring the real repos (tests/support/hub_mirror.py): real ids, file paths,
formats, pinned commits and loading scripts; nothing patched. Each process starts fresh, with
HF_ENDPOINT at the mirror and empty caches, as a new user's would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.hub_mirror import CONTENT, FIXTURES, KILT_SOURCE_COMMIT, mirror_env
from support.hub_server import HubServer

from labeler.sources import product_search
from labeler.sources.hub_files import HUB_FILES, KILT_SOURCE_REPO
from labeler.sources.product_search import ESCI_COMMIT, ESCI_FILES, ESCI_REPO, WANDS_COMMIT
from labeler.sources.registry import CORPORA, SOURCES

LOAD_ALL = r'''
import json, sys
from labeler.errors import LabelerError
from labeler.sources.registry import load_corpus, load_source
out = {}
for name in sys.argv[1:]:
    try:
        if name.startswith("corpus:"):
            c = load_corpus(name[7:])
            out[name] = {"passages": len(c), "revision": c.revision, "license": c.license}
        elif name.startswith("nq+"):
            s = load_source("nq", corpus=name[3:])
            out[name] = {"gold": s.gold_in_corpus()}
        else:
            s = load_source(name)
            out[name] = {"queries": len(s.queries), "revision": s.revision,
                         "corpus": None if s.corpus is None else len(s.corpus),
                         "answers": [q.answers for q in s.queries][:2]}
    except LabelerError as e:
        out[name] = {"error": e.line()}
print(json.dumps(out))
'''

LOAD_SPEC = r'''
import json, sys
from labeler.errors import LabelerError
from labeler.sources.hub_files import HubFiles
from labeler.sources.hubload import load_hub
repo, revision, path = sys.argv[1:4]
try:
    dataset, rev = load_hub(HubFiles(repo, revision, (path,), "parquet", "validation", "", ""))
    print(json.dumps({"rows": len(dataset), "revision": rev}))
except LabelerError as e:
    print(json.dumps({"error": e.line()}))
'''


def _run(code: str, args: list[str], env: dict[str, str]) -> dict:
    run = subprocess.run([sys.executable, "-c", code, *args], check=False,
                         env={**os.environ, **env},
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.splitlines()[-1])


@pytest.fixture
def mirror(tmp_path):
    with HubServer() as hub:
        yield hub, mirror_env(hub, tmp_path)


def test_the_mirror_serves_every_file_the_sources_name():
    assert set(CONTENT) == set(HUB_FILES)
    assert {"nq", "tq", "hotpotqa", "fever", "msmarco-fqa", "2wiki", "nq-tevatron",
            "tq-tevatron-distant", "hotpotqa-distractor", "nq-open-train", "tq-train",
            "hotpotqa-train"} <= set(SOURCES)
    assert set(CORPORA) <= set(HUB_FILES) | {"kilt-wikipedia", "kilt-w100"}


def test_every_named_dataset_and_corpus_loads_from_the_hub(mirror):
    hub, env = mirror
    names = ["nq", "tq", "hotpotqa", "fever", "msmarco-fqa", "2wiki", "nq-tevatron",
             "tq-tevatron-distant", "hotpotqa-distractor", "nq-open-train", "tq-train",
             "hotpotqa-train", "wands", "esci", "corpus:wiki-dpr",
             "corpus:msmarco-passage", "corpus:kilt-wikipedia", "corpus:kilt-w100",
             "nq+kilt-wikipedia"]
    got = _run(LOAD_ALL, names, env)

    assert not [n for n, r in got.items() if "error" in r], got
    # every served KILT record has provenance; without --corpus they retrieve from kilt-w100,
    # here the 3 served pages' 3 passages
    kilt_w100 = "+corpus:kilt-w100@kilt_knowledgesource.json:cut1"
    for name in ("nq", "hotpotqa", "fever"):
        assert got[name] == {**got[name], "queries": 5, "corpus": 3,
                             "revision": HUB_FILES[name].revision + kilt_w100}
    # tq: its questions come from mandarjoshi/trivia_qa (pinned); the one served TriviaQA
    # record's id is not among the served KILT ids (no offline pair), so no query is left
    assert got["tq"]["revision"] == (f"{HUB_FILES['tq'].revision}+mandarjoshi/trivia_qa:"
                                     f"{HUB_FILES['tq-questions'].revision}{kilt_w100}")
    assert got["tq"]["queries"] == 0
    assert got["msmarco-fqa"]["corpus"] == 7  # its one record is a 'description' query
    assert got["2wiki"]["answers"] == [["The Mask Of Fu Manchu"], ["no"]]
    # SEER's training splits: FlashRAG's nq/ and triviaqa/ train.jsonl beside 2wiki's file in
    # one pinned commit, KILT's hotpotqa train beside its validation
    for name, queries in (("nq-open-train", 6), ("tq-train", 2), ("hotpotqa-train", 5)):
        assert got[name] == {**got[name], "queries": queries, "corpus": 3,
                             "revision": HUB_FILES[name].revision + kilt_w100}
    assert HUB_FILES["nq-open-train"].revision == HUB_FILES["2wiki"].revision
    for name in ("nq-tevatron", "tq-tevatron-distant"):  # split 'dev', beside a script
        assert (got[name]["queries"], got[name]["corpus"]) == (2, 15)
        assert got[name]["revision"] == HUB_FILES[name].revision
    # a branch (the parquet conversion) pins the commit it resolved to
    assert got["hotpotqa-distractor"]["revision"] == hub.repo("hotpotqa/hotpot_qa").branches[
        "refs/convert/parquet"]
    assert got["corpus:wiki-dpr"] == {"passages": 35, "license": "cc-by-sa-3.0",
                                      "revision": HUB_FILES["wiki-dpr"].revision}
    assert got["corpus:msmarco-passage"]["passages"] == 4
    assert got["corpus:kilt-wikipedia"]["passages"] == 6  # 3 pages, title + 1 paragraph
    assert got["corpus:kilt-w100"] == {"passages": 3, "license": "cc-by-sa-3.0",
                                       "revision": "kilt_knowledgesource.json:cut1"}
    # WANDS: its three tab-separated files from GitHub at the pinned commit (the mirror serves
    # raw.githubusercontent.com's layout): 7 queries over the 12 served products
    assert got["wands"] == {**got["wands"], "queries": 7, "corpus": 12,
                            "revision": f"wayfair/WANDS@{WANDS_COMMIT}"}
    # ESCI: its two Git LFS parquet files at the pinned commit (media.githubusercontent.com's
    # layout): the 2 queries of the 32 served judgments, over the 20 served products
    assert got["esci"] == {**got["esci"], "queries": 2, "corpus": 20,
                           "revision": f"amazon-science/esci-data@{ESCI_COMMIT}"}
    # the served pages are those 3 of the 5 served NQ questions' provenance names
    assert got["nq+kilt-wikipedia"]["gold"]["queries_with_gold_in_corpus"] == 3


def test_a_second_run_offline_reads_the_cache(mirror):
    _, env = mirror
    online = _run(LOAD_ALL, ["nq-tevatron", "corpus:kilt-wikipedia", "wands", "esci"], env)
    offline = _run(LOAD_ALL, ["nq-tevatron", "corpus:kilt-wikipedia", "wands", "esci"],
                   {**env, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"})
    assert offline == online


LOAD_ESCI = r'''
import json
from labeler.errors import LabelerError
from labeler.sources.registry import load_source
try:
    s = load_source("esci", limit=2)
    print(json.dumps({q.qid: {"text": q.question, "relevance": q.relevance,
                              "gold": sorted(p.pid for p in q.gold),
                              "titles": {p.pid: (p.title, p.text) for p in q.gold}}
                      for q in s.queries} | {"bm25": s.bm25, "license": s.license,
                                             "language": s.language}))
except LabelerError as e:
    print(json.dumps({"error": e.line()}))
'''


def test_esci_grades_each_judgment_as_the_experiment_does(mirror):
    _, env = mirror
    got = _run(LOAD_ESCI, [], env)

    assert (got["license"], got["language"]) == ("apache-2.0", None)  # en, es and ja
    assert got["bm25"] == {"fields": "title^9.4,text^4", "stemmer": "english"}
    revent, mower = got["0"], got["1"]
    assert (revent["text"], mower["text"]) == ("revent 80 cfm", "!awnmower tires without rims")
    # E 3, S 2, C 1, I 0; a product is its locale and id
    assert revent["relevance"]["us:B01N5Y6002"] == 3 and revent["relevance"]["us:B000MOO21W"] == 0
    assert {mower["relevance"][f"us:{pid}"] for pid in ("B07P4CF3DP", "B01M3SJ699",
                                                        "B075SCHMPY")} == {2, 1, 0}
    assert (len(revent["relevance"]), len(mower["relevance"])) == (16, 16)
    # gold: the judged-relevant products the catalogue holds (titles cut in the source: not)
    assert revent["gold"] == sorted(f"us:{p}" for p in (
        "B07WDM7MQQ", "B07RH6Z8KW", "B07QJ7WYFQ", "B075ZBF9HG", "B06W2LB17J", "B00XBZFWWM",
        "B003O0MNGC", "B001E6DMKY"))
    assert "us:B01N5Y6002" not in revent["gold"]  # judged E, but not served
    assert len(mower["gold"]) == 8 and "us:B01M3SJ699" not in mower["gold"]
    assert revent["titles"]["us:B003O0MNGC"] == [
        "Delta BreezSignature VFB25ACH 80 CFM Exhaust Bath Fan with Humidity Sensor", ""]


def test_an_esci_file_with_other_columns_is_one_error_line(mirror, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    hub, env = mirror
    path = tmp_path / "examples.parquet"
    pq.write_table(pa.table({"example_id": [0], "query": ["revent 80 cfm"]}), path)
    hub.static(f"{ESCI_REPO}/{ESCI_COMMIT}/{ESCI_FILES['examples']}", path.read_bytes())
    got = _run(LOAD_ESCI, [], env)["error"]

    assert "\n" not in got
    assert "shopping_queries_dataset_examples.parquet" in got
    assert "the columns are ['example_id', 'query'], not ['example_id', 'query', 'query_id'" in got


def test_an_esci_label_outside_e_s_c_i_names_its_row(mirror, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    hub, env = mirror
    examples = pq.read_table(FIXTURES / "hub_mirror" / "esci" / Path(ESCI_FILES["examples"]).name)
    labels = examples["esci_label"].to_pylist()
    labels[5] = "X"
    path = tmp_path / "examples.parquet"
    pq.write_table(examples.set_column(5, "esci_label", pa.array(labels)), path)
    hub.static(f"{ESCI_REPO}/{ESCI_COMMIT}/{ESCI_FILES['examples']}", path.read_bytes())
    got = _run(LOAD_ESCI, [], env)["error"]

    assert "shopping_queries_dataset_examples.parquet:6 field 'esci_label'" in got
    assert "unknown label 'X' (not E, S, C, I)" in got and "\n" not in got


def test_a_wands_product_judged_twice_keeps_its_first_grade_as_the_experiment(mirror):
    hub, env = mirror
    labels = (FIXTURES / "hub_mirror" / "wands" / "label.csv").read_text()
    hub.static(f"{product_search.WANDS_REPO}/{WANDS_COMMIT}/"
               f"{product_search.WANDS_FILES['labels']}",
               (labels + "234015\t0\t25434\tIrrelevant\n").encode())  # first: Exact
    got = _run(LOAD_ESCI.replace('"esci", limit=2', '"wands", limit=1'), [], env)

    assert got["0"]["relevance"]["25434"] == 2


def test_offline_with_an_empty_cache_needs_network_on_first_use(mirror):
    _, env = mirror
    got = _run(LOAD_ALL, ["nq", "corpus:kilt-wikipedia"],
               {**env, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"})
    assert "not in the local cache" in got["nq"]["error"]
    assert "needs network on first use" in got["nq"]["error"]
    assert "needs network on first use" in got["corpus:kilt-wikipedia"]["error"]


def test_each_hub_failure_names_its_cause(mirror):
    hub, env = mirror
    hub.seed("lab/gated", {"v.parquet": CONTENT["nq"]()}, sha="a" * 40, gated=True)
    missing = _run(LOAD_SPEC, ["lab/no-such-repo", "b" * 40, "v.parquet"], env)["error"]
    gated = _run(LOAD_SPEC, ["lab/gated", "a" * 40, "v.parquet"], env)["error"]
    script = _run(LOAD_SPEC, [KILT_SOURCE_REPO, KILT_SOURCE_COMMIT, "2019-08-01/full.parquet"],
                  env)["error"]

    assert "no such dataset repo" in missing and "hf auth login" in missing
    assert "gated" in gated and "accept its conditions" in gated and "hf auth login" in gated
    assert "only a loading script (kilt_wikipedia.py)" in script
    for line in (missing, gated, script):
        assert "needs network" not in line and "\n" not in line
