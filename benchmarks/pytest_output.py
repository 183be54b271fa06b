"""Reading a pytest run's output (``-q``): its summary line and the tests that failed."""

from __future__ import annotations

import re

_FAILED = re.compile(r"^(FAILED|ERROR) (\S+)")


def summary(stdout: str) -> str:
    return (stdout.strip().splitlines() or [""])[-1]


def failed_tests(stdout: str) -> list[str]:
    """The node IDs pytest's short test summary names as FAILED or ERROR."""
    return [m.group(2) for line in stdout.splitlines() if (m := _FAILED.match(line))]
