"""The GPU check's clocks: the device's matmul rate (the MFU ceiling), a time limit per stage,
and the device's name and synchronisation."""

from __future__ import annotations

import signal
import statistics
import time
from contextlib import contextmanager

import click
import torch


def matmul_rate(device: torch.device, dtype: torch.dtype, n: int, blocks: int = 5,
                per_block: int = 10) -> float:
    """FLOP/s of an n x n x n matrix product on random data: warm-ups, then the mean of
    `blocks` timed blocks of `per_block` products (CUDA events on a GPU)."""
    a, b = (torch.randn(n, n, device=device, dtype=dtype) for _ in range(2))
    out = torch.empty(n, n, device=device, dtype=dtype)
    for _ in range(per_block):
        torch.matmul(a, b, out=out)
    rates = []
    for _ in range(blocks):
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(per_block):
                torch.matmul(a, b, out=out)
            end.record()
            end.synchronize()
            seconds = start.elapsed_time(end) / 1e3
        else:
            begin = time.perf_counter()
            for _ in range(per_block):
                torch.matmul(a, b, out=out)
            seconds = time.perf_counter() - begin
        rates.append(2 * n**3 * per_block / seconds)
    return statistics.mean(rates)


class StageTimeout(click.ClickException):
    """A stage ran past its time limit."""


@contextmanager
def time_limit(seconds: int, stage: str):
    """Raise StageTimeout in the block once `seconds` have passed (SIGALRM, main thread)."""
    def expire(signum, frame):
        raise StageTimeout(f"{stage}: timed out after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def device_name(device: torch.device) -> str:
    """The GPU's name, or the CPU with its torch threads."""
    return torch.cuda.get_device_name(device) if device.type == "cuda" else \
        f"cpu ({torch.get_num_threads()} threads)"


def sync(device: torch.device) -> None:
    """Wait for the GPU's queued work (nothing on the CPU), so a clock reads finished work."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
