"""The rubric's question generator: the original experiment's prompts and structured response,
and how an output becomes questions.

The experiment asks its LLM for a `BagOfDecisionsQuestions` object whose one field,
`decisions`, is a list of strings described as RESPONSE_DESCRIPTION (the API puts that schema
in front of the model). Here the same JSON schema follows the experiment's system prompt, and a
backend that can constrain its output to a JSON schema (`Backend.structured_output`: vllm) is
made to; `read_questions` takes the `decisions` of an output that parses as that object, and
falls back to `parse_questions`, free-text parsing of numbered, bulleted, JSON and prose lists,
when it does not (an unconstrained backend, or a cut or malformed answer).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import replace

from labeler.llm.base import Chat, Sampling, chat

#: The original experiment's question-generation prompts, verbatim.
GENERATE_SYSTEM = (
    "You are a search relevance decision engine. You will be given a query, and your job is to "
    "generate a list of yes/no questions that can be used to determine if a document is "
    "relevant to the query."
)
GENERATE_USER = (
    "For the given query, please generate a list of yes/no questions where the affirmative\n"
    "indicates the document is relevant to the query.\n\nHere's the query:\n\n{query}"
)
#: The experiment's response model: its name, its one field and that field's description,
#: verbatim, as the JSON schema pydantic writes for it.
RESPONSE_FIELD = "decisions"
RESPONSE_DESCRIPTION = ("A list of concise yes/no questions whose affirmative answer indicates "
                        "relevance to the search query.")
RESPONSE_SCHEMA = json.dumps({
    "properties": {RESPONSE_FIELD: {"description": RESPONSE_DESCRIPTION,
                                    "items": {"type": "string"}, "title": "Decisions",
                                    "type": "array"}},
    "required": [RESPONSE_FIELD], "title": "BagOfDecisionsQuestions", "type": "object"})
#: Ours: how the schema reaches a model that reads it from the prompt (after the system prompt).
RESPONSE_FORMAT = "Respond with a JSON object that follows this JSON schema:\n{schema}"
#: sampled question lists, so that a retry with the next seed can differ
GENERATE = Sampling(temperature=0.7, top_p=0.95, max_tokens=256, seed=0)


def generation_prompt(query: str) -> Chat:
    """The experiment's question-generation chat for `query`, its response schema after the
    system prompt."""
    system = f"{GENERATE_SYSTEM}\n\n{RESPONSE_FORMAT.format(schema=RESPONSE_SCHEMA)}"
    return chat(GENERATE_USER.format(query=query), system=system)


def generation_sampling(structured: bool, seed: int = 0) -> Sampling:
    """GENERATE with `seed`, constrained to RESPONSE_SCHEMA when `structured`."""
    return replace(GENERATE, seed=seed, json_schema=RESPONSE_SCHEMA if structured else None)


def read_questions(text: str) -> tuple[list[str], bool]:
    """The questions of a generator output, and whether they were read as free text (the
    fallback): an output that parses whole as RESPONSE_SCHEMA's object gives its `decisions`.

    >>> read_questions('{"decisions": ["Is it a desk?", "Is it a desk?", " "]}')
    (['Is it a desk?'], False)
    >>> read_questions('1. Is it a desk?\\n2. Is it for kids?')
    (['Is it a desk?', 'Is it for kids?'], True)
    """
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    decisions = value.get(RESPONSE_FIELD) if isinstance(value, dict) else None
    if isinstance(decisions, list) and all(isinstance(d, str) for d in decisions):
        return _unique(decisions), False
    return parse_questions(text), True


def parse_questions(text: str) -> list[str]:
    """The questions of an LLM's free-text list: JSON (a list, or an object holding one),
    numbered or bulleted lines, the complete quoted strings holding a "?" (JSON cut at the
    token cap), else the sentences ending in "?"; markdown and labels stripped, blanks and
    exact repeats (ignoring case and spacing) dropped.

    >>> parse_questions('1. Does it cover X?\\n2. **Scope**: Is Y discussed?\\n- Does it cover X?')
    ['Does it cover X?', 'Is Y discussed?']
    """
    found = _from_json(text)
    if found is None:
        items = [m.group(1) for m in map(_ITEM.match, text.splitlines()) if m]
        asked = [i for i in items if "?" in i]
        quoted = [_unquoted(q) for q in _QUOTED.findall(text) if "?" in q]
        found = asked or items or quoted or _SENTENCE.findall(text)
    return _unique(found)


_ITEM = re.compile(r"^\s*(?:(?:question\s*|q)?\d+\s*[.):]|\(\d+\)|[-*•+])\s+(.+)$",
                   re.IGNORECASE)
_SENTENCE = re.compile(r"[^.?!\n]*\?")
_QUOTED = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_LABEL = re.compile(r"^(?:\d+\s*[.):]\s+|(?:\*\*[^*]+\*\*|__[^_]+__)\s*:?\s*"
                    r"|(?:question|q)\s*\d*\s*[:.-]\s*)+", re.IGNORECASE)


def _unique(items: Iterable[str]) -> list[str]:
    """The items cleaned (`_clean`), blanks and exact repeats (ignoring case and spacing)
    dropped, in order."""
    questions: dict[str, str] = {}
    for item in items:
        question = _clean(item)
        if question:
            questions.setdefault(" ".join(question.casefold().split()), question)
    return list(questions.values())


def _from_json(text: str) -> list[str] | None:
    """The strings of the first JSON list in `text` (or of an object's list value), else None."""
    start = min((i for i in (text.find("["), text.find("{")) if i >= 0), default=-1)
    if start < 0:
        return None
    try:
        value, _ = json.JSONDecoder().raw_decode(text[start:])
    except ValueError:
        return None
    if isinstance(value, dict):
        value = next((v for v in value.values() if isinstance(v, list)), None)
    if not isinstance(value, list):
        return None
    items = [v.get("question") or v.get("text") if isinstance(v, dict) else v for v in value]
    return [v for v in items if isinstance(v, str)]


def _unquoted(literal: str) -> str:
    """A quoted string's text: JSON's unescaping, or just the quotes dropped."""
    try:
        return json.loads(literal)
    except ValueError:
        return literal[1:-1]


def _clean(item: str) -> str:
    """A list item as a question: no label, markdown emphasis or quotes around it."""
    text = _LABEL.sub("", item.strip()).strip()
    return text.replace("**", "").strip(" \"'`").strip()
