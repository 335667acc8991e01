"""The GPU check's report: what each workload measured, its JSON row with MFU against the
matmul ceiling, the table printed, and OUT/gpu_check.json."""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from rich.table import Table

#: prefill MFU the issue asks of the hf backend in bf16 on a GPU
TARGET_MFU = 0.40
#: the workload vllm runs too, and its row's name
VLLM_WORKLOAD = "decode: generate, greedy"
VLLM_ROW = f"{VLLM_WORKLOAD} (vllm)"


@dataclass
class Result:
    """What one workload measured; `flops` counts useful model FLOPs (see the docstring)."""

    name: str
    prefill: bool  # the target applies
    rows: int  # sequences the model ran (prompts x samples)
    tokens: int  # prefill: prompt tokens; decode: generated tokens
    flops: int
    seconds: list[float] = field(default_factory=list)  # each timed repeat
    padding: float = 0.0  # share of the padded batches' positions that are padding
    error: str = ""  # why the workload did not finish

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)


def workload_row(result: Result, ceiling: float) -> dict:
    """One workload's JSON: its measures and MFU against `ceiling` FLOP/s."""
    if result.error:
        return {"name": result.name, "prefill": result.prefill, "error": result.error,
                "met": False}
    flops_per_s = result.flops / result.median
    mfu = flops_per_s / ceiling
    return {"name": result.name, "prefill": result.prefill, "rows": result.rows, "tokens": result.tokens,
            "seconds": result.seconds, "median_s": result.median,
            "tokens_per_s": result.tokens / result.median, "flops": result.flops,
            "flops_per_token": result.flops / result.tokens, "flops_per_s": flops_per_s,
            "mfu": mfu, "padding": result.padding,
            "met": mfu >= TARGET_MFU if result.prefill else None}


def vllm_row(result: Result, rows: list[dict], ceiling: float) -> dict:
    """The vllm row's JSON, with its tokens/s over the hf row's of the same workload."""
    row, hf = workload_row(result, ceiling), next(w for w in rows if w["name"] == VLLM_WORKLOAD)
    if "error" not in row and "error" not in hf:
        row["vllm_over_hf"] = row["tokens_per_s"] / hf["tokens_per_s"]
    return row


def table(report: dict, size: int) -> Table:
    """The report as the table the check prints."""
    smoke = " (smoke: a tiny model, not the target's setting)" if report["smoke"] else ""
    table = Table(title=f"GPU check: hf backend, Llama-3.1-8B shape with random weights, "
                        f"{report['parameters'] / 1e9:.2f} B parameters, {report['dtype']}, "
                        f"{report['attention']} attention, {report['device']}{smoke}")
    for column in ("measure", "rows", "tokens", "tokens/s", "FLOP/token", "FLOP/s", "MFU",
                   "target"):
        table.add_column(column, justify="left" if column in ("measure", "target") else "right")
    for k, rate in enumerate(report["matmul"]):
        table.add_row(f"matmul {size}^3, {report['dtype']} ({('before', 'after')[k]})", "", "",
                      "", "", si(rate), "", "the ceiling" if rate == max(
                          report["matmul"]) else "")
    for w in report["workloads"]:
        if "error" in w:
            table.add_row(w["name"], "", "", "", "", "", "", f"[red]{w['error']}")
            continue
        padding = f", {w['padding']:.0%} padding" if w["padding"] else ""
        verdict = f"vllm/hf {w['vllm_over_hf']:.2f}x" if "vllm_over_hf" in w else \
            "" if w["met"] is None else \
            f">= {TARGET_MFU:.0%} " + ("[green]met" if w["met"] else "[red]not met")
        table.add_row(w["name"] + padding, f"{w['rows']}", f"{w['tokens']:,}",
                      f"{w['tokens_per_s']:,.1f}", si(w["flops_per_token"]),
                      si(w["flops_per_s"]), f"{w['mfu']:.1%}", verdict)
    vllm = report["vllm"]
    if "skipped" in vllm:
        table.add_row(VLLM_ROW, "", "", "", "", "", "", "[yellow]skipped")
    table.caption = (f"prefill >= {TARGET_MFU:.0%} MFU in bf16: "
                     + ("met" if report["target_met"] else "NOT met") + smoke
                     + ". FLOPs/token = (2 W new + 2 V d kept + 4 L d_attn sum t) / tokens; "
                     "decode rows include each prompt's prefill. (vllm): "
                     + (f"skipped: {vllm['skipped']}" if "skipped" in vllm else
                        f"vllm {vllm['version']}'s LLM.generate on the same prompts in the same "
                        f"dtype, dummy weights{', eager' if vllm['enforce_eager'] else ''}"))
    return table


def si(value: float) -> str:
    """FLOPs with a prefix: 0.92 M, 15.27 G, 612.4 T."""
    if value >= 1e12:
        return f"{value / 1e12:,.1f} T"
    return f"{value / 1e9:,.2f} G" if value >= 1e9 else f"{value / 1e6:,.2f} M"


def write(out: str | None, report: dict) -> None:
    """OUT/gpu_check.json, rewritten after each stage (nothing without `out`)."""
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / "gpu_check.json").write_text(json.dumps(report, indent=1))
