"""`Sampling.json_schema` on each backend with the bundled model: vllm, in process or served
(the openai backend on a vLLM server), holds the rubric's question output to the experiment's
schema; hf cannot, says so and refuses the schema."""

from __future__ import annotations

import json

import pytest

from labeler.errors import InputError
from labeler.tasks.rubric_questions import generation_prompt, generation_sampling, read_questions

#: two real WANDS queries (wayfair/WANDS dataset/query.csv, ids 1 and 0)
QUERIES = ("smart coffee table", "salon chair")


def test_only_a_backend_that_can_constrain_its_output_takes_a_schema(backend):
    prompts = [generation_prompt(q) for q in QUERIES]
    key = backend.key()  # the openai backend's "server" is the vLLM version it reports
    is_vllm = key["backend"] == "vllm" or (key["backend"] == "openai" and bool(key["server"]))
    assert backend.structured_output is is_vllm
    if not is_vllm:
        with pytest.raises(InputError, match="hf backend cannot constrain its output"):
            backend.generate(prompts, generation_sampling(True))
        return
    for [completion] in backend.generate(prompts, generation_sampling(True)):
        if not completion.capped:  # a cut answer is a valid JSON prefix, not JSON
            value = json.loads(completion.text)
            assert set(value) == {"decisions"}
            assert all(isinstance(d, str) for d in value["decisions"])
            assert read_questions(completion.text)[1] is False  # no fallback
