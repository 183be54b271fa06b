"""Storage migration, the two documented options side by side, on the same objects.

- Option 1: Kubernetes' own storage version migration (a ``StorageVersionMigration`` run by
  kube-controller-manager's migrator), from creation to ``Succeeded``.
- Option 2: ``crdharness.scenarios.migrate`` (list, then write each object back), with 1
  and 4 writers.

One control plane with kube-controller-manager; N objects (default 10,000) stored at v1beta1,
the storage version switched before each run (v1, then back to v1beta1, ...), and every run
checked in etcd: all N objects at the new storage version. Also records how long
kube-controller-manager took to start. Writes artifacts/bench/migration.json.

    python -m benchmarks.migration [--objects 10000]
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from crdharness.backends import local_cluster
from crdharness.backends.controlplane import ControlPlane, controller_manager
from crdharness.binaries import assets, versions
from crdharness.progress import to_stderr
from crdharness.scenarios import storage_migration
from crdharness.scenarios.migrate import migrate
from crdharness.scenarios.versioned import VersionedCRD, crontab_manifest, unique_group, version

OUT = Path(__file__).resolve().parent.parent / "artifacts" / "bench"
NAMESPACE = "default"


def fill(crd: VersionedCRD, count: int) -> None:
    def create(i: int) -> None:
        crd.create_object("v1beta1", NAMESPACE, f"o{i:05d}", host=f"h{i}", port=str(i))

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(create, range(count)))


def all_at(crd: VersionedCRD, storage: str, count: int) -> None:
    stored = crd.all_stored()
    at = {s.api_version for s in stored}
    assert len(stored) == count and at == {f"{crd.group}/{storage}"}, (len(stored), at)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--objects", type=int, default=10000)
    args = parser.parse_args()
    release = versions.resolve()
    binaries = assets.resolve(release, report=to_stderr)
    manager_binary = assets.controller_manager(release, to_stderr)
    results = {"kubernetes": release.kubernetes, "objects": args.objects, "runs": []}
    with ControlPlane(binaries, release, report=to_stderr) as plane:
        began = time.perf_counter()
        controller_manager.start(plane, manager_binary)
        results["controller_manager_start_s"] = round(time.perf_counter() - began, 2)
        cluster = local_cluster(plane)
        try:
            manifest = crontab_manifest(
                unique_group("bench-migration"), [version("v1beta1", storage=True), version("v1")]
            )
            crd = VersionedCRD(cluster, manifest).create()
            fill(crd, args.objects)
            runs = [
                ("Kubernetes StorageVersionMigration", 0),
                *[("crdharness.scenarios.migrate", w) for w in (1, 4)],
            ]
            for method, workers in runs:
                target = "v1" if crd.storage_version() == "v1beta1" else "v1beta1"
                crd.set_storage(target)
                began = time.perf_counter()
                if workers:
                    migrate(cluster.api_client, crd.group, target, crd.plural, workers=workers)
                else:
                    storage_migration.migrate(
                        cluster,
                        release,
                        crd.group,
                        crd.plural,
                        target,
                        nudge=lambda target=target: crd.touch(target, "default"),
                    )
                seconds = time.perf_counter() - began
                all_at(crd, target, args.objects)
                row = {
                    "method": method,
                    "writers": workers or "controller",
                    "seconds": round(seconds, 2),
                    "objects_per_second": round(args.objects / seconds, 1),
                }
                results["runs"].append(row)
                print(json.dumps(row), flush=True)
        finally:
            cluster.close()
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "migration.json").write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
