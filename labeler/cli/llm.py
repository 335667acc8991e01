"""`labeler models` and `labeler cache stats`: parse, call the llm package, render rich tables."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from labeler.cli.options import cache_dir_option
from labeler.cli.output import emit, json_option


@click.command()
@json_option
def models(as_json: bool) -> None:
    """List the model aliases and what each resolves to.

    Any Hugging Face repo id, local model folder or .gguf file works as a model name too. A
    chat template that reads `enable_thinking` (Qwen3's, under any name) renders with it False.
    """
    from labeler.llm.models import ALIASES, model_availability, resolve_model

    rows = [{"alias": alias, "model_id": spec.model_id, "source": model_availability(spec)}
            for alias, spec in ((alias, resolve_model(alias)) for alias in ALIASES)]
    table = Table(title="model aliases",
                  caption="thinking off wherever the chat template reads enable_thinking")
    table.add_column("alias", no_wrap=True)
    table.add_column("resolves to", overflow="fold")
    table.add_column("source", no_wrap=True)
    for row in rows:
        table.add_row(*row.values())
    emit(rows, [table], as_json=as_json)


@click.group()
def cache() -> None:
    """Inspect the persistent LLM call cache."""


@cache.command()
@cache_dir_option
@json_option
def stats(cache_dir: Path | None, as_json: bool) -> None:
    """Entries, size on disk and hit rate of the call cache."""
    from labeler.llm.call_store import cache_stats

    found = cache_stats(cache_dir)
    data = {"location": found.path, "entries": found.entries, "size_bytes": found.size_bytes,
            "hits": found.hits, "misses": found.misses, "hit_rate": found.hit_rate,
            "by_model": [{"model": m, "operation": op, "entries": n}
                         for m, op, n in found.by_model]}
    emit(data, _tables(found), as_json=as_json)


def _tables(found):
    """The summary table, and the entries by model where there are any."""
    rate = "-" if found.hit_rate is None else f"{found.hit_rate:.1%}"
    summary = Table(title="LLM call cache", show_header=False)
    summary.add_column(style="bold")
    summary.add_column(justify="right")
    for label, value in (("location", str(found.path)), ("entries", f"{found.entries:,}"),
                         ("size on disk", _size(found.size_bytes)), ("hits", f"{found.hits:,}"),
                         ("misses", f"{found.misses:,}"), ("hit rate", rate)):
        summary.add_row(label, value)
    yield summary
    if found.by_model:
        detail = Table(title="entries by model")
        for column, justify in (("model", "left"), ("operation", "left"), ("entries", "right")):
            detail.add_column(column, justify=justify)
        for model, op, count in found.by_model:
            detail.add_row(model, op, f"{count:,}")
        yield detail


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"
