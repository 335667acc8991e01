"""What a build asked a served model: the requests and tokens its answers reported, their
cost at the prices given, and the ways the server answered, for the manifest's `served`
section and one closing line.

Each worker counts what its model asked from the shard it loaded it for on (`worker_mark`)
and returns that count with every shard it labels (`worker_usage`), wherever it runs: in this
process, or on a Ray actor in another process or on another node, whose counts this process
never sees otherwise. The driver keeps each worker's latest count (a count only grows) and
adds them up (`ServedTally`).
"""

from __future__ import annotations

from labeler.llm.base import Backend
from labeler.llm.config import LLMConfig
from labeler.llm.served_limits import cost, since
from labeler.progress import info


def worker_mark(llm: LLMConfig | None, model: Backend | None) -> dict | None:
    """The served `model`'s usage so far (the loaded `llm`, behind the call cache), where a
    worker starts counting; None for a model that runs here."""
    return None if llm is None or llm.backend != "openai" else _server(model).usage.snapshot()


def worker_usage(worker: str, model: Backend, mark: dict | None) -> dict | None:
    """What `worker` has asked its served `model` since `mark`, and what the server offered
    and the ways the worker used, for the driver's tally; None for a model that runs here."""
    if mark is None:
        return None
    served = model.inner
    return {"worker": worker, **served.report(),
            "usage": since(served.server.usage.snapshot(), mark)}


class ServedTally:
    """The usage the workers of one build report with their shards: each worker's latest."""

    def __init__(self) -> None:
        self.latest: dict[str, dict] = {}

    def add(self, report: dict | None) -> None:
        """Keep `report` where it is its worker's latest (its shards may arrive out of
        order; its counts only grow)."""
        if report is None:
            return
        kept = self.latest.get(report["worker"])
        if kept is None or report["usage"]["requests"] >= kept["usage"]["requests"]:
            self.latest[report["worker"]] = report

    def section(self, llm: LLMConfig | None, alias: str) -> dict:
        """{"served": ...} for the manifest, the workers' usage added up, with a line saying
        the tokens and their cost; {} where no worker reported (a model that runs here, or a
        run that labelled no shard)."""
        if not self.latest:
            return {}
        reports = list(self.latest.values())
        usage = {k: sum(r["usage"][k] for r in reports) for k in reports[0]["usage"]}
        dollars = cost(usage, llm.price_in, llm.price_out)
        info(f"{alias} (served): {usage['requests']:,} requests, "
             f"{usage['prompt_tokens']:,} prompt and {usage['completion_tokens']:,} completion "
             "tokens" + ("" if dollars is None else f", cost ${dollars:,.4f}"))
        used = sorted({way for r in reports for way in r["used"]})
        return {"served": {**{k: v for k, v in reports[0].items() if k != "worker"},
                           "used": used, "usage": usage,
                           **({} if dollars is None else {"cost_usd": dollars})}}


def _server(model: Backend):
    """The served model's client (the openai backend behind the call cache)."""
    return model.inner.server
