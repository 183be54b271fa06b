"""What kube-apiserver and etcd hold with many CRDs installed, and how long installing them
takes: N generated CRDs (``benchmarks.many_crds``) applied on a local control plane one
after another without waiting, then waited for (Established and served) all together, as
the gate's install does; then the processes' resident memory.

    python -m benchmarks.crds_installed [--count 2000]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import psutil

from benchmarks import many_crds
from crdharness.backends import local_cluster
from crdharness.backends.controlplane import ControlPlane
from crdharness.binaries import assets, versions
from crdharness.gate.api import apply_crd
from crdharness.progress import to_stderr
from crdharness.scenarios import crds

MIB = 1024 * 1024


def installed(count: int) -> dict:
    release = versions.resolve(None)
    binaries = assets.resolve(release, report=to_stderr)
    plane = ControlPlane(binaries, release, report=lambda line: None).start()
    try:
        cluster = local_cluster(plane)
        memory_before = _rss(plane)
        manifests = [many_crds.crd(i) for i in range(count)]
        started = time.perf_counter()
        for manifest in manifests:
            answer = apply_crd(cluster, manifest)
            assert answer.ok, answer.message
        applied = time.perf_counter() - started
        for manifest in manifests:
            crds.wait_settled(cluster.api_client, manifest, timeout=600)
        settled = time.perf_counter() - started
        memory_after = _rss(plane)  # right after every one serves
        cluster.close()
        return {
            "crds": count,
            "kubernetes": release.kubernetes,
            "apply_seconds": round(applied, 1),
            "applied_and_settled_seconds": round(settled, 1),
            "seconds_per_crd": round(settled / count, 3),
            "rss_mib_empty": memory_before,
            "rss_mib_installed": memory_after,
        }
    finally:
        plane.stop()


def _rss(plane: ControlPlane) -> dict[str, float]:
    found = {}
    for kind, pid in (("kube-apiserver", plane.apiserver.pid), ("etcd", plane.etcd.pid)):
        found[kind] = round(psutil.Process(pid).memory_info().rss / MIB, 1)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).resolve().parent.parent / "artifacts" / "bench"
    )
    args = parser.parse_args()
    result = installed(args.count)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "crds_installed.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
