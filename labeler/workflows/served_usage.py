"""What a build asked a served model: the requests and tokens its answers reported between
two marks, its cost at the prices given, and the ways the server answered, for the manifest's
`served` section and one closing line. Counted in this process: an executor whose workers
run elsewhere (Ray) records none."""

from __future__ import annotations

from labeler.llm.config import LLMConfig
from labeler.llm.served_limits import cost, since
from labeler.progress import info


def usage_mark(llm: LLMConfig, cache_dir: str | None) -> dict | None:
    """The served model's usage so far; None for a model that runs here."""
    return None if llm.backend != "openai" else _served(llm, cache_dir).server.usage.snapshot()


def served_section(llm: LLMConfig, cache_dir: str | None, mark: dict | None) -> dict:
    """{"served": ...} since `mark` for the manifest, with a line saying the tokens and the
    cost; {} for a model that runs here."""
    if mark is None:
        return {}
    backend = _served(llm, cache_dir)
    usage = since(backend.server.usage.snapshot(), mark)
    dollars = cost(usage, llm.price_in, llm.price_out)
    info(f"{backend.alias} (served): {usage['requests']:,} requests, "
         f"{usage['prompt_tokens']:,} prompt and {usage['completion_tokens']:,} completion "
         "tokens" + ("" if dollars is None else f", cost ${dollars:,.4f}"))
    return {"served": {**backend.report(), "usage": usage,
                       **({} if dollars is None else {"cost_usd": dollars})}}


def _served(llm: LLMConfig, cache_dir: str | None):
    """The loaded openai backend (loaded once per process: the one the build asked)."""
    return llm.load(cache_dir).inner
