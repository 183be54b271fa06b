"""Control-plane start-to-ready time (binaries cached) and peak memory.

Starts the local control plane ``--runs`` times; each time it measures start-to-ready and
samples the resident memory of kube-apiserver + etcd every 50 ms while a small workload runs
(a two-version CRD and ``--objects`` custom resources created and read back at the other
version). Writes ``artifacts/bench/control_plane.json`` and prints a Markdown table.

    python -m benchmarks.control_plane [--runs 5] [--objects 200]

It also times ``--reuse-cluster``'s start, attaching to a running control plane after checking
its command lines and ``/readyz`` (``ControlPlane.attach``), the edit-test loop's start.
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from pathlib import Path

import psutil

from crdharness.backends.controlplane import ControlPlane
from crdharness.binaries import assets, versions
from crdharness.progress import to_stderr
from crdharness.scenarios.versioned import VersionedCRD, crontab_manifest, unique_group, version

OUT = Path(__file__).resolve().parent.parent / "artifacts" / "bench"


class PeakMemory:
    """Sum of the RSS of some processes, sampled until stopped; keeps the peak."""

    def __init__(self, pids: list[int], interval: float = 0.05):
        self.processes = [psutil.Process(p) for p in pids]
        self.interval, self.peak = interval, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.wait(self.interval):
            try:
                self.peak = max(self.peak, sum(p.memory_info().rss for p in self.processes))
            except psutil.Error:
                return

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def workload(plane: ControlPlane, objects: int) -> None:
    from crdharness.backends import local_cluster

    cluster = local_cluster(plane)
    crd = VersionedCRD(
        cluster,
        crontab_manifest(
            unique_group("bench"),
            [version("v1beta1", storage=True), version("v1")],
        ),
    ).create()
    for i in range(objects):
        crd.create_object("v1beta1", "default", f"o{i}", host="h", port=str(i))
    assert len(crd.list_objects("v1", "default")) == objects
    cluster.close()


def attach_times(binaries, release, runs: int) -> list[float]:
    plane = ControlPlane(binaries, release, report=lambda line: None).start()
    try:
        times = []
        for _ in range(runs):
            began = time.monotonic()
            ControlPlane.attach(plane.path, binaries, release, plane.options)
            times.append(round(time.monotonic() - began, 3))
        return times
    finally:
        plane.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--objects", type=int, default=200)
    parser.add_argument("--k8s-version", default=None)
    args = parser.parse_args()
    release = versions.resolve(args.k8s_version)
    binaries = assets.resolve(release, report=to_stderr)
    runs = []
    for _ in range(args.runs):
        plane = ControlPlane(binaries, release, report=lambda line: None).start()
        try:
            with PeakMemory([plane.etcd.pid, plane.apiserver.pid]) as memory:
                workload(plane, args.objects)
            runs.append(
                {
                    "start_to_ready_s": round(plane.start_to_ready_seconds, 3),
                    "peak_rss_mib": round(memory.peak / 2**20, 1),
                }
            )
        finally:
            plane.stop()
    attach = attach_times(binaries, release, args.runs)
    summary = {
        "kubernetes": release.kubernetes,
        "runs": runs,
        "start_to_ready_s_median": statistics.median(r["start_to_ready_s"] for r in runs),
        "reuse_attach_s": attach,
        "reuse_attach_s_median": statistics.median(attach),
        "peak_rss_mib_max": max(r["peak_rss_mib"] for r in runs),
        "objects": args.objects,
    }
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "control_plane.json").write_text(json.dumps(summary, indent=2))
    print(
        "| Kubernetes | runs | start-to-ready median (s) | --reuse-cluster attach median (s) "
        "| peak RSS apiserver+etcd (MiB) |"
    )
    print("|---|---:|---:|---:|---:|")
    print(
        f"| {release.kubernetes} | {len(runs)} | {summary['start_to_ready_s_median']} | "
        f"{summary['reuse_attach_s_median']} | {summary['peak_rss_mib_max']} |"
    )


if __name__ == "__main__":
    main()
