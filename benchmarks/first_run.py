"""First contact: ``nox -s e2e`` on a machine that has built nothing yet.

From a fresh binary cache (``CRDHARNESS_CACHE``) and, unless ``--warm-go-cache``, fresh Go
build and module caches (as a new machine has): the time until the first test passes and
until the suite ends, then the same suite again with everything cached (a later run).

    python -m benchmarks.first_run [--up-front] [--warm-go-cache] [--workers 6] [--load N]

``--up-front`` builds every binary before pytest starts, as ``nox -s e2e`` did before the
suite built what only some tests need in the background: the figure to compare with. Steps
run as ``nox -s e2e`` runs them (``crdharness binaries``, then pytest); writes
``artifacts/bench/first_run[-up-front][-loaded].json``.

``--load N`` keeps N busy loops running at normal priority beside the whole run (default:
one per core), as a laptop's other work or a shared CI runner does: the background build
(at niceness 10) then takes far longer than any test's timeout, and the run must still pass.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from benchmarks import pytest_output
from crdharness.guardian import Guardian
from crdharness.processes import identity

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "artifacts" / "bench"


def _run(command: list[str], env: dict[str, str], log: Path) -> subprocess.CompletedProcess:
    with log.open("a") as out:
        out.write(f"$ {' '.join(command)}\n")
        out.flush()
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
        out.write(done.stdout + done.stderr)
    return done


def _suite(env: dict[str, str], workers: int, log: Path, first_pass: Path) -> dict:
    command = [sys.executable, "-m", "pytest", "e2e", "-q", "-p", "no:cacheprovider"]
    command += ["-p", "benchmarks.first_pass_clock", "-n", str(workers)]
    done = _run(command, {**env, "BENCH_FIRST_PASS_FILE": str(first_pass)}, log)
    summary = pytest_output.summary(done.stdout)
    counts = {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|error|skipped)", summary)}
    background = re.findall(r"crdharness: background build [^\n]*", done.stdout)
    return {"exit": done.returncode, "summary": summary, "background": background, **counts}


@contextmanager
def cpu_load(processes: int) -> Iterator[None]:
    """``processes`` busy loops beside the block; a guardian stops them if this dies."""
    guardian = Guardian()
    burners = []
    try:
        for _ in range(processes):
            burner = subprocess.Popen(
                [sys.executable, "-c", "while True: pass"], start_new_session=True
            )
            burners.append(burner)
            guardian.watch_group(burner.pid, (identity(burner.pid) or (burner.pid, 0.0))[1])
        yield
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
        guardian.release()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--up-front", action="store_true", help="build every binary first")
    parser.add_argument("--warm-go-cache", action="store_true", help="keep Go's own caches")
    parser.add_argument("--workers", type=int, default=6)
    parser.add_argument(
        "--load",
        type=int,
        nargs="?",
        const=os.cpu_count() or 2,
        default=0,
        help="busy loops beside the run (default with the flag: one per core)",
    )
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    name = "first_run-up-front" if args.up_front else "first_run"
    name += "-loaded" if args.load else ""
    with cpu_load(args.load):
        return _measure(args, name)


def _measure(args: argparse.Namespace, name: str) -> int:
    log = OUT / f"{name}.log"
    log.write_text("")
    with tempfile.TemporaryDirectory(prefix="bench-first-run-") as scratch:
        env = {**os.environ, "CRDHARNESS_CACHE": f"{scratch}/crdharness"}
        if not args.warm_go_cache:
            env |= {"GOCACHE": f"{scratch}/go-build", "GOMODCACHE": f"{scratch}/go-mod"}
        first_pass = Path(scratch) / "first-pass"
        binaries = [sys.executable, "-m", "crdharness", "binaries"]
        if args.up_front:
            binaries += ["--controller-manager", "--upgrade-pair"]
        started = time.time()
        built = _run(binaries, env, log)
        if built.returncode != 0:
            print(built.stderr[-2000:], file=sys.stderr)
            return 1
        binaries_seconds = time.time() - started
        suite = _suite(env, args.workers, log, first_pass)
        ended = time.time()
        if not first_pass.exists():
            print(f"no test passed: see {log}", file=sys.stderr)
            return 1
        passed_at, first_test = first_pass.read_text().split(" ", 1)
        first_pass.unlink()
        later_started = time.time()
        later = _suite(env, args.workers, log, first_pass)
        later_seconds = time.time() - later_started
        subprocess.run(["go", "clean", "-modcache"], env=env, capture_output=True, check=False)
    data = {
        "mode": "up front" if args.up_front else "background",
        "go_caches": "warm" if args.warm_go_cache else "fresh",
        "workers": args.workers,
        "load_processes": args.load,
        "binaries_before_pytest_seconds": round(binaries_seconds, 1),
        "first_passing_test_seconds": round(float(passed_at) - started, 1),
        "first_passing_test": first_test.strip(),
        "whole_first_run_seconds": round(ended - started, 1),
        "first_run": suite,
        "later_run_seconds": round(later_seconds, 1),
        "later_run": later,
    }
    (OUT / f"{name}.json").write_text(json.dumps(data, indent=2))
    print(json.dumps(data, indent=2))
    return 0 if suite["exit"] == 0 and later["exit"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
