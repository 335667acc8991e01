"""Write tests/fixtures/paper_prompts.json: the judge prompts exactly as the utility paper's code
builds them, for one real NQ question and one real FEVER claim over three real passages.

    python scripts/paper_prompts.py PAPER_REPO > tests/fixtures/paper_prompts.json

PAPER_REPO is a checkout of hengran/LLM_specific_utility. Its src/dataset.py (questions) and
src/fever/dataset.py (claims) are read, not imported (they read the paper's data at import):
their top-level prompt functions are compiled alone, and each script's instruction is the
triple-quoted `utility_instruct` of the Dataset class the script uses, taken from the source.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures"
#: the Dataset class each method's script uses (src/point_run_verberlized.py, ...)
INSTRUCT_OF = {"lvs": "ListEncodeDataset", "lvs_answer": "ListUtilityEncodeDataset",
               "lvr": "ListRankEncodeDataset", "lvr_answer": "ListRankWithAnswerEncodeDataset"}


def paper_module(path: Path) -> tuple[dict, dict[str, tuple[str, int]]]:
    """(the module's top-level functions, compiled; class -> (utility_instruct, its line))."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    functions = ast.Module([n for n in tree.body if isinstance(n, ast.FunctionDef)], [])
    namespace: dict = {}
    exec(compile(functions, str(path), "exec"), namespace)  # noqa: S102 - the paper's own code
    instructs = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            for item in ast.walk(node):
                if (isinstance(item, ast.Assign) and isinstance(item.targets[0], ast.Attribute)
                        and item.targets[0].attr == "utility_instruct"):
                    instructs[node.name] = (item.value.value, item.lineno)
    return namespace, instructs


def prompts(fn: dict, instructs: dict, query: str, rows: list[dict], answer: str) -> dict:
    """method -> the messages the paper's code sends (a list of chats for pointwise methods)."""
    texts = [fn["format_passage"](r["text"], r["title"]) for r in rows]
    instruct = {name: instructs[cls][0] for name, cls in INSTRUCT_OF.items()}
    return {
        "pvs": [fn["get_direct_judge_point_utility_no_cot"](query, t) for t in texts],
        "pvs_answer": [fn["get_direct_judge_point_utility_no_cot_answer"](query, t, answer)
                       for t in texts],
        "lvs": fn["get_direct_judge_list_utility"](query, instruct["lvs"], rows),
        "lvs_answer": fn["get_direct_judge_list_utility_with_answer"](
            query, instruct["lvs_answer"], rows, answer),
        "lvr": fn["get_direct_rank_list_utility"](query, instruct["lvr"], rows),
        "lvr_answer": fn["get_direct_rank_list_utility_with_answer"](
            query, instruct["lvr_answer"], rows, answer),
        "pseudo_answer": fn["generate_answer_prompt_passages"](query, texts),
        "likelihood": [fn["generate_answer_prompt_passages_with_answer"](query, t, answer)[:1]
                       for t in texts],
    }


def main(repo: Path) -> None:
    commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True,
                            text=True, check=True).stdout.strip()
    nq = json.loads((FIXTURES / "tevatron_nq_dev.jsonl").read_text().splitlines()[0])
    distinct = {p["docid"]: p for p in nq["positive_passages"]}  # DPR repeats a positive
    rows = [{"docid": p["docid"], "title": p["title"], "text": p["text"]}
            for p in [*list(distinct.values())[:2], nq["negative_passages"][0]]]
    claim = json.loads((FIXTURES / "kilt_fever_dev.jsonl").read_text().splitlines()[0])
    out = {"source": {"repo": "hengran/LLM_specific_utility", "commit": commit}, "rows": rows,
           "kinds": {}}
    for kind, path, query, answer in (
            ("question", "src/dataset.py", nq["query"], nq["answers"][0]),
            ("claim", "src/fever/dataset.py", claim["input"], claim["output"][0]["answer"])):
        fn, instructs = paper_module(repo / path)
        out["kinds"][kind] = {
            "path": path, "query": query, "answer": answer,
            "instruct_lines": {name: instructs[cls][1] for name, cls in INSTRUCT_OF.items()},
            "prompts": prompts(fn, instructs, query, rows, answer)}
    json.dump(out, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
