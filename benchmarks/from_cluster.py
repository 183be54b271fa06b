"""How fast ``crdharness gate --from-cluster`` answers for a cluster holding many objects.

A second local control plane stands for the user's cluster (``source_cluster``): the
``from-cluster`` example's release 1 installed, ``count`` Tunnels over three namespaces,
every 50th in the mode the candidate drops. The gate runs as an operator runs it (the CLI,
the source's kubeconfig, no cap); the figures are its wall time, objects per second, and
whether it named exactly the refused objects. Writes ``artifacts/bench/from_cluster.json``.

    python -m benchmarks.from_cluster [--counts 1000 10000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.peak_memory import PeakMemory
from benchmarks.source_cluster import EXAMPLE, named_in_answer, seed, source_plane

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "artifacts" / "bench"
REFUSED_EVERY = 50
GOAL_SECONDS = {10000: 120.0}  # issue 35: 10,000 objects replayed and judged in two minutes


def one_run(count: int) -> dict:
    with source_plane() as (plane, cluster), tempfile.TemporaryDirectory() as scratch:
        started = time.perf_counter()
        seeded = seed(cluster, count, REFUSED_EVERY)
        seeding = time.perf_counter() - started
        artifacts = Path(scratch) / "gate"
        command = [sys.executable, "-m", "crdharness", "gate", str(EXAMPLE / "gate.yaml")]
        command += ["--from-cluster", str(plane.kubeconfig), "--artifacts", str(artifacts)]
        started = time.perf_counter()
        with tempfile.TemporaryFile("w+") as output:
            process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, text=True)
            memory = PeakMemory(process.pid)
            returncode = process.wait()
            wall = time.perf_counter() - started
            peaks = memory.stop()
            output.seek(0)
            printed = output.read()
        report_file = artifacts / "report.json"
        if not report_file.is_file():
            raise SystemExit(f"the gate wrote no report (exit {returncode}):\n{printed[-3000:]}")
        report = json.loads(report_file.read_text())
    named = named_in_answer(report)
    return {
        "objects": count,
        "refused_planted": len(seeded.refused),
        "named": len(named),
        "named_exactly_the_refused": named == seeded.refused,
        "missed": sorted(seeded.refused - named)[:10],
        "extra": sorted(named - seeded.refused)[:10],
        "exit": returncode,
        "peak_memory_mib": peaks,
        "wall_seconds": round(wall, 1),
        "objects_per_second": round(count / wall, 1),
        "phases_seconds": report.get("seconds", {}),
        "seeding_seconds": round(seeding, 1),
        "goal_seconds": GOAL_SECONDS.get(count),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--counts", type=int, nargs="+", default=[1000, 10000])
    args = parser.parse_args()
    runs = []
    for count in args.counts:
        run = one_run(count)
        print(json.dumps(run), flush=True)
        runs.append(run)
    OUT.mkdir(parents=True, exist_ok=True)
    figures = {"cpus": os.cpu_count(), "load_before": os.getloadavg()[0], "runs": runs}
    (OUT / "from_cluster.json").write_text(json.dumps(figures, indent=2))
    wrong = [r for r in runs if not r["named_exactly_the_refused"] or r["exit"] != 1]
    if wrong:
        raise SystemExit(f"the gate's answer was wrong: {wrong}")


if __name__ == "__main__":
    main()
