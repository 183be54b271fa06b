"""Wall time of the whole e2e suite on the local backend, serially and with parallel workers.

    python -m benchmarks.suite [--workers 0 6]      # 0 = serial (no xdist)

The xdist workers share the session's control planes (crdharness.backends.sharing); 6 is what
``nox -s e2e`` runs by default. Binaries must be cached (``nox -s bench`` prepares them). Writes
``artifacts/bench/suite.json`` and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

from benchmarks import pytest_output

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "artifacts" / "bench"


def run_suite(workers: int) -> dict:
    command = [sys.executable, "-m", "pytest", "e2e", "-q", "-p", "no:cacheprovider"]
    if workers:
        command += ["-n", str(workers)]
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    seconds = time.monotonic() - started
    summary = pytest_output.summary(done.stdout)
    counts = {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|error|skipped)", summary)}
    return {
        "workers": workers or "serial",
        "exit": done.returncode,
        "wall_seconds": round(seconds, 1),
        "summary": summary,
        "failed_tests": pytest_output.failed_tests(done.stdout),
        "output": pytest_output.keep_if_failed(done, OUT / f"suite-{workers or 'serial'}.log"),
        **counts,
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 6])
    args = parser.parse_args()
    results = []
    for workers in args.workers:
        results.append(run_suite(workers))
        print(json.dumps(results[-1]), flush=True)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "suite.json").write_text(json.dumps(results, indent=2))
    table = ["| workers | wall s | passed | failed | exit |", "|---|---:|---:|---:|---:|"]
    table += [
        f"| {r['workers']} | {r['wall_seconds']} | {r.get('passed', 0)} | "
        f"{r.get('failed', 0) + r.get('error', 0)} | {r['exit']} |"
        for r in results
    ]
    (OUT / "suite.md").write_text("\n".join(table) + "\n")
    print("\n".join(table))
    return 0 if all(r["exit"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
