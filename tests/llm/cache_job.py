"""A labeling-like job for the cache tests: cached `generate` over questions, run as a process.

    python cache_job.py CACHE_DIR QUESTIONS_JSONL SAMPLING_JSON

Prints {"answers": [[{"text", "capped"}, ...], ...], "backend_calls": N} as JSON on stdout.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict

from labeler.llm import Sampling, chat, load_backend


def main(cache_dir: str, questions: str, sampling: str) -> None:
    with open(questions, encoding="utf-8") as handle:
        prompts = [chat(json.loads(line)["question"]) for line in handle]
    backend = load_backend("smollm2-135m", batch_size=2, cache_dir=cache_dir)
    params = json.loads(sampling)
    answers = backend.generate(prompts, Sampling(**{**params, "stop": tuple(params["stop"])}))
    print(json.dumps({"answers": [[asdict(c) for c in samples] for samples in answers],
                      "backend_calls": backend.backend_calls}))


if __name__ == "__main__":
    main(*sys.argv[1:])
