"""Run ``python -m crdharness gate`` as a user does, in a child process, for the tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def run_gate(
    gate_file: Path, artifacts: Path, *args: str, cwd: Path | None = None, env: dict | None = None
) -> subprocess.CompletedProcess:
    """The gate on ``gate_file``, writing into ``artifacts``; no time limit of its own (the
    gate's ``timeout:`` bounds a run, and a slow machine is no failure)."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "crdharness",
            "gate",
            str(gate_file),
            "--artifacts",
            str(artifacts),
            *args,
        ],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        check=False,
    )


def report_of(done: subprocess.CompletedProcess, report_file: Path) -> dict:
    """The run's report.json; a failure quoting what the gate said when it wrote none."""
    assert report_file.exists(), (
        f"no report; the gate said:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return json.loads(report_file.read_text())
