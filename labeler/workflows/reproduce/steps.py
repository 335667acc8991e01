"""What every `labeler reproduce` command shares: what a run hands back."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass
class Reproduced:
    """A written report: its version folder, its records, and the steps run or skipped (done
    before)."""

    path: Path
    records: list[dict]
    ran: list
    skipped: list
