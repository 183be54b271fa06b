"""Reliability: the suite passes run after run and leaves nothing behind, however it ends.

    python -m benchmarks.reliability repeat [--runs 20]      # back-to-back full runs
    python -m benchmarks.reliability interrupt [--runs 6]    # SIGINT/SIGTERM/SIGKILL at random

After every run it checks — polling with a deadline, not assuming — that no kube-apiserver,
etcd, webhook, guardian or webhook container is left, no port is still listening that was not
listening before the first run, and nothing new remains in the temporary directory (a
crdharness workspace, or files such as the key files the Kubernetes client writes).
Results go to artifacts/bench/reliability-*.json and are printed.
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from benchmarks import pytest_output
from crdharness.polling import WaitTimeout, wait_for
from crdharness.workspace import PREFIX

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "artifacts" / "bench"
MARKERS = ("kube-apiserver", "crdharness-", "crdconvert", "crdharness.guardian")


def listening_ports() -> set[int]:
    """TCP ports something listens on (any address): a port the suite opened and left taken
    shows up here even if its process is gone from the process table's names."""
    return {
        c.laddr.port for c in psutil.net_connections(kind="tcp") if c.status == psutil.CONN_LISTEN
    }


BASELINE_PORTS: set[int] = set()  # what listened before the first run: not ours
BASELINE_TMP: set[str] = set()  # what the temporary directory held before the first run


def temporary_entries() -> set[str]:
    # pytest keeps its own basetemp (pytest-of-<user>) on purpose.
    return {
        p.name for p in Path(tempfile.gettempdir()).iterdir() if not p.name.startswith("pytest-of-")
    }


def leftovers() -> list[str]:
    found = [f"port {p} still listening" for p in sorted(listening_ports() - BASELINE_PORTS)]
    for process in psutil.process_iter(["pid", "cmdline"]):
        cmdline = " ".join(process.info["cmdline"] or [])
        if any(m in cmdline for m in MARKERS) and "benchmarks.reliability" not in cmdline:
            found.append(f"process {process.info['pid']}: {cmdline[:120]}")
    found += [f"workspace {p}" for p in Path(tempfile.gettempdir()).glob(f"{PREFIX}*")]
    found += [
        f"temporary file {name}"
        for name in sorted(temporary_entries() - BASELINE_TMP)
        if not name.startswith(PREFIX)
    ]
    containers = subprocess.run(
        ["docker", "ps", "-q", "--filter", "label=crdharness=webhook"],
        capture_output=True,
        text=True,
        check=False,
    )
    found += [f"container {c}" for c in containers.stdout.split()]
    return found


def wait_clean(timeout: float = 60) -> list[str]:
    try:
        wait_for(lambda: not leftovers(), timeout, "every harness process to be gone")
        return []
    except WaitTimeout:
        return leftovers()


def pytest_command(extra: list[str], tests: str = "e2e") -> list[str]:
    return [sys.executable, "-m", "pytest", tests, "-q", "-p", "no:cacheprovider", *extra]


def repeat(runs: int, extra: list[str]) -> dict:
    results = []
    for i in range(runs):
        started = time.monotonic()
        done = subprocess.run(
            pytest_command(extra), cwd=ROOT, capture_output=True, text=True, check=False
        )
        left = wait_clean()
        results.append(
            {
                "run": i + 1,
                "exit": done.returncode,
                "seconds": round(time.monotonic() - started, 1),
                "summary": pytest_output.summary(done.stdout),
                "failed_tests": pytest_output.failed_tests(done.stdout),
                "output": pytest_output.keep_if_failed(done, OUT / f"reliability-run-{i + 1}.log"),
                "leftovers": left,
            }
        )
        print(json.dumps(results[-1]), flush=True)
    return {
        "runs": results,
        "failures": sum(r["exit"] != 0 for r in results),
        "leaks": sum(bool(r["leftovers"]) for r in results),
    }


def interrupt(runs: int, extra: list[str], seed: int) -> dict:
    rng = random.Random(seed)
    signals = [signal.SIGINT, signal.SIGTERM, signal.SIGKILL]
    results = []
    for i in range(runs):
        signum = signals[i % len(signals)]
        after = rng.uniform(3, 40)  # a random moment: during start-up or in the middle of tests
        process = subprocess.Popen(
            pytest_command(extra), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            process.wait(after)
        except subprocess.TimeoutExpired:
            process.send_signal(signum)
            process.wait(120)
        left = wait_clean()
        results.append(
            {
                "run": i + 1,
                "signal": signum.name,
                "after_s": round(after, 1),
                "exit": process.returncode,
                "leftovers": left,
            }
        )
        print(json.dumps(results[-1]), flush=True)
    # The next run starts clean and passes.
    check = subprocess.run(
        pytest_command(extra, "e2e/test_control_plane.py"),
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    return {
        "runs": results,
        "leaks": sum(bool(r["leftovers"]) for r in results),
        "next_run_exit": check.returncode,
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=("repeat", "interrupt"))
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("pytest_args", nargs="*")
    # Intermixed: `repeat --runs 8 -- -n 6` (the nox session appends the suite's -n after the
    # options one passes it) would otherwise leave "-n 6" unrecognised.
    args = parser.parse_intermixed_args()
    BASELINE_PORTS.update(listening_ports())
    BASELINE_TMP.update(temporary_entries())
    if args.mode == "repeat":
        result = repeat(args.runs or 20, args.pytest_args)
        ok = result["failures"] == 0 and result["leaks"] == 0
    else:
        result = interrupt(args.runs or 6, args.pytest_args, args.seed)
        ok = result["leaks"] == 0 and result["next_run_exit"] == 0
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"reliability-{args.mode}.json").write_text(json.dumps(result, indent=2))
    print(
        f"{args.mode}: {'OK' if ok else 'PROBLEMS'} "
        f"({json.dumps({k: v for k, v in result.items() if k != 'runs'})})"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
