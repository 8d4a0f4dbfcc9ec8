"""The state of this checkout, for the root conftest's guard: tests leave it as they found it."""

from __future__ import annotations

import subprocess
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[1]


def checkout_status(root: Path = CHECKOUT) -> frozenset[str] | None:
    """`git status --porcelain` of the checkout at `root`, a line per changed or new file (None outside
    one, or without git)."""
    try:
        done = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=all"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return frozenset(done.stdout.splitlines())
