"""Reading a pytest run's output (``-q``): its summary line and the tests that failed."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

_FAILED = re.compile(r"^(FAILED|ERROR) (\S+)")


def summary(stdout: str) -> str:
    return (stdout.strip().splitlines() or [""])[-1]


def failed_tests(stdout: str) -> list[str]:
    """The node IDs pytest's short test summary names as FAILED or ERROR."""
    return [m.group(2) for line in stdout.splitlines() if (m := _FAILED.match(line))]


def keep_if_failed(done: subprocess.CompletedProcess, path: Path) -> str | None:
    """Write a failed run's output to ``path`` (a benchmark's figures are no use without the
    reason a run failed); returns the path written, or None when the run passed."""
    if done.returncode == 0:
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{done.stdout}\n--- stderr ---\n{done.stderr}")
    return str(path)
