"""A pytest plugin for ``benchmarks.first_run``: writes the time of the first passing test
(wall clock, seconds since the epoch) to ``$BENCH_FIRST_PASS_FILE``. Under xdist the
controller sees every worker's reports, so it is the run's first, whichever worker ran it."""

from __future__ import annotations

import os
import time
from pathlib import Path


def pytest_runtest_logreport(report) -> None:
    target = os.environ.get("BENCH_FIRST_PASS_FILE")
    if not target or report.when != "call" or not report.passed:
        return
    path = Path(target)
    if not path.exists():
        path.write_text(f"{time.time()} {report.nodeid}\n")
