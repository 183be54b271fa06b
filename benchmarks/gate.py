"""How long the upgrade gate takes, and where the time goes.

The issue's reference case: a two-version CRD with a conversion webhook (the documented
CronTab and crdconvert, run as the user's ``command``) and ``generate: N`` objects per
version (100 by default), on the local backend with cached binaries. Runs the gate as a user
does (``python -m crdharness gate``) ``--runs`` times; writes ``artifacts/bench/gate.json``.

Then how fast it fails: the three-version Backup (six version pairs) through a webhook that
loses ``status.conditions``, against the same CRD's passing run; the failing one should take
at most twice as long.

Then a slow webhook: the same passing Backup run with every review answered after 40 ms
(crdconvert's ``delay`` fault), as a webhook in plain Python or behind a slow dependency
answers. The gate's requests go out ``concurrency`` at once, so this should pass in a
minute, not in the webhook's latency times its reviews (``--concurrency 1`` shows that).

    python -m benchmarks.gate [--runs 3] [--generate 100]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "artifacts" / "bench"
EXAMPLE = ROOT / "examples" / "gate" / "crontab-webhook"


def one_run(generate: int, directory: Path) -> dict:
    gate_file = directory / "gate.yaml"
    webhook = (EXAMPLE / "gate.yaml").read_text().split("webhook:", 1)[1].split("generate:")[0]
    gate_file.write_text(f"crds: [{EXAMPLE / 'crd.yaml'}]\nwebhook:{webhook}generate: {generate}\n")
    artifacts = directory / "artifacts"
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "crdharness", "gate", str(gate_file), "--artifacts", str(artifacts)],
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - started
    report = json.loads((artifacts / "report.json").read_text())
    return {
        "wall_seconds": round(wall, 1),
        "exit": result.returncode,
        "verdict": report["verdict"],
        "seconds": report["seconds"],
        "objects_compared": sum(
            c["counts"].get("compared", 0) for c in report["checks"] if c["check"] == "round-trip"
        ),
        "reviews": next(
            (
                c["counts"].get("reviews")
                for c in report["checks"]
                if c["check"] == "webhook-conduct"
            ),
            None,
        ),
    }


THREE = ROOT / "examples" / "gate" / "backup-three-versions"


def timed(gate_file: Path, directory: Path) -> dict:
    artifacts = directory / "artifacts"
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "crdharness", "gate", str(gate_file), "--artifacts", str(artifacts)],
        capture_output=True,
        text=True,
        check=False,
    )
    report = json.loads((artifacts / "report.json").read_text())
    return {
        "wall_seconds": round(time.perf_counter() - started, 1),
        "verdict": report["verdict"],
        "seconds": report["seconds"],
    }


def fail_vs_pass() -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-gate-") as directory:
        passing = timed(THREE / "gate.yaml", Path(directory) / "pass")
        failing = timed(THREE / "gate-drops-conditions.yaml", Path(directory) / "fail")
    return {
        "passing": passing,
        "failing": failing,
        "ratio": round(failing["wall_seconds"] / passing["wall_seconds"], 2),
    }


SLOW_REVIEW_SECONDS = 0.04


def slow_webhook(concurrency: int | None) -> dict:
    """The passing three-version run with a webhook answering each review after 40 ms."""
    text = (THREE / "gate.yaml").read_text()
    text = text.replace(
        "--identity Backup", f"--identity Backup --fault delay={SLOW_REVIEW_SECONDS}"
    )
    text = text.replace("  - crd.yaml", f"  - {THREE / 'crd.yaml'}")
    if concurrency is not None:
        text += f"concurrency: {concurrency}\n"
    with tempfile.TemporaryDirectory(prefix="bench-gate-") as directory:
        gate_file = Path(directory) / "gate.yaml"
        gate_file.write_text(text)
        run = timed(gate_file, Path(directory))
        report = json.loads((Path(directory) / "artifacts" / "report.json").read_text())
    conduct = next(c for c in report["checks"] if c["check"] == "webhook-conduct")
    return {
        **run,
        "review_delay_ms": SLOW_REVIEW_SECONDS * 1000,
        "concurrency": concurrency or "default",
        "reviews": conduct["counts"].get("reviews"),
        "webhook_conduct": conduct["evidence"],
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--generate", type=int, default=100)
    parser.add_argument(
        "--concurrency",
        type=int,
        default=None,
        help="the slow-webhook run's (default: the gate's)",
    )
    args = parser.parse_args()
    runs = []
    for i in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="bench-gate-") as directory:
            runs.append(one_run(args.generate, Path(directory)))
        print(f"run {i + 1}: {runs[-1]['wall_seconds']} s, {runs[-1]['verdict']}", flush=True)
    data = {
        "generate": args.generate,
        "runs": runs,
        "wall_seconds_median": statistics.median(r["wall_seconds"] for r in runs),
        "three_versions_fail_vs_pass": fail_vs_pass(),
        "three_versions_slow_webhook": slow_webhook(args.concurrency),
    }
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "gate.json").write_text(json.dumps(data, indent=2))
    print(json.dumps(data, indent=2))
    if any(r["exit"] != 0 for r in runs):
        raise SystemExit("the reference gate did not pass: see the runs above")
    if data["three_versions_slow_webhook"]["verdict"] != "PASS":
        raise SystemExit("the slow-webhook run did not pass: see its figures above")


if __name__ == "__main__":
    main()
