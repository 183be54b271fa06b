"""End to end through the API server: how LIST and storage migration scale.

- LIST of N custom resources persisted at v1beta1, read at v1 (conversion) and at v1beta1
  (none), with `None` conversion and with the reference webhook, for N = 100, 1000, 10000.
- Storage migration of N objects (crdharness.scenarios.migrate): objects rewritten per
  second one at a time (what kube-storage-version-migrator does) and with 4 concurrent writers.

Writes artifacts/bench/scaling.json, a Markdown table, and a plot (scaling.png).

    python -m benchmarks.scaling [--sizes 100 1000 10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from crdharness import certs
from crdharness.backends import local_cluster
from crdharness.backends.controlplane import ControlPlane, ControlPlaneOptions
from crdharness.binaries import assets, versions
from crdharness.cluster import Cluster
from crdharness.progress import to_stderr
from crdharness.scenarios.migrate import migrate
from crdharness.scenarios.versioned import (
    HOSTPORT_SCHEMA,
    VersionedCRD,
    crontab_manifest,
    unique_group,
    version,
    webhook_conversion,
)
from crdharness.webhooks.reference import LocalWebhook

OUT = Path(__file__).resolve().parent.parent / "artifacts" / "bench"
NAMESPACE = "default"


def make_crd(cluster: Cluster, strategy: str, webhook: LocalWebhook) -> VersionedCRD:
    if strategy == "None":
        manifest = crontab_manifest(
            unique_group("scale-none"), [version("v1beta1", storage=True), version("v1")]
        )
    else:
        manifest = crontab_manifest(
            unique_group("scale-webhook"),
            [version("v1beta1", storage=True, schema=HOSTPORT_SCHEMA), version("v1")],
            webhook_conversion(webhook),
        )
    return VersionedCRD(cluster, manifest).create()


def fill(crd: VersionedCRD, strategy: str, start: int, stop: int) -> None:
    def create(i: int) -> None:
        fields = (
            {"host": f"h{i}", "port": str(i)} if strategy == "None" else {"hostPort": f"h{i}:{i}"}
        )
        crd.create_object("v1beta1", NAMESPACE, f"o{i:05d}", **fields)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(create, range(start, stop)))


def timed_list(crd: VersionedCRD, at: str, expected: int, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        items = crd.list_objects(at, NAMESPACE)
        times.append(time.perf_counter() - began)
        assert len(items) == expected, (len(items), expected)
    return round(statistics.median(times), 4)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--no-watch-cache",
        action="store_true",
        help="kube-apiserver --watch-cache=false: LIST reads etcd and converts "
        "every object at request time (with the cache, objects are converted in "
        "the background and LIST serves them from memory)",
    )
    args = parser.parse_args()
    suffix = "-no-watch-cache" if args.no_watch_cache else ""
    release = versions.resolve()
    binaries = assets.resolve(release, report=to_stderr)
    results = {
        "kubernetes": release.kubernetes,
        "watch_cache": not args.no_watch_cache,
        "list": [],
        "migration": [],
    }
    options = ControlPlaneOptions(watch_cache=not args.no_watch_cache)
    with (
        tempfile.TemporaryDirectory() as tmp,
        ControlPlane(binaries, release, options, report=to_stderr) as plane,
    ):
        cluster = local_cluster(plane)
        webhook = LocalWebhook(certs.CertificateAuthority(Path(tmp)), Path(tmp)).start()
        try:
            for strategy in ("None", "Webhook"):
                crd, filled = make_crd(cluster, strategy, webhook), 0
                for size in sorted(args.sizes):
                    fill(crd, strategy, filled, size)
                    filled = size
                    timed_list(crd, "v1", size, 1)  # warm-up: caches and connections
                    row = {
                        "strategy": strategy,
                        "objects": size,
                        "list_at_stored_version_s": timed_list(crd, "v1beta1", size, args.repeat),
                        "list_converted_s": timed_list(crd, "v1", size, args.repeat),
                    }
                    reviews = [r for r in webhook.records() if "uid" in r]
                    row["webhook_objects_converted_so_far"] = sum(
                        len(r["objects"]) for r in reviews
                    )
                    results["list"].append(row)
                    print(json.dumps(row), flush=True)
                if strategy == "None":
                    for workers in (1, 4):
                        target = "v1" if crd.storage_version() == "v1beta1" else "v1beta1"
                        crd.set_storage(target)
                        began = time.perf_counter()
                        done = migrate(
                            cluster.api_client, crd.group, target, crd.plural, workers=workers
                        )
                        seconds = time.perf_counter() - began
                        row = {
                            "objects": len(done.rewritten),
                            "workers": workers,
                            "seconds": round(seconds, 2),
                            "objects_per_second": round(len(done.rewritten) / seconds, 1),
                        }
                        results["migration"].append(row)
                        print(json.dumps(row), flush=True)
                crd.delete()
        finally:
            webhook.stop()
            cluster.close()
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"scaling{suffix}.json").write_text(json.dumps(results, indent=2))
    print(table(results))
    plot(results, OUT / f"scaling{suffix}.png")


def table(results: dict) -> str:
    lines = [
        "| strategy | objects | LIST at stored version (s) | LIST converted (s) |",
        "|---|---:|---:|---:|",
    ]
    lines += [
        f"| {r['strategy']} | {r['objects']} | {r['list_at_stored_version_s']} | "
        f"{r['list_converted_s']} |"
        for r in results["list"]
    ]
    lines += ["", "| migration objects | writers | seconds | objects/s |", "|---:|---:|---:|---:|"]
    lines += [
        f"| {r['objects']} | {r['workers']} | {r['seconds']} | {r['objects_per_second']} |"
        for r in results["migration"]
    ]
    return "\n".join(lines)


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(7, 4.5))
    for strategy in ("None", "Webhook"):
        rows = [r for r in results["list"] if r["strategy"] == strategy]
        sizes = [r["objects"] for r in rows]
        axis.plot(
            sizes,
            [r["list_converted_s"] for r in rows],
            marker="o",
            label=f"{strategy}: LIST at v1 (converted)",
        )
        axis.plot(
            sizes,
            [r["list_at_stored_version_s"] for r in rows],
            marker="x",
            linestyle="--",
            label=f"{strategy}: LIST at v1beta1 (stored)",
        )
    axis.set_xscale("log")
    axis.set_yscale("log")
    axis.set_xlabel("custom resources")
    axis.set_ylabel("LIST time (s, median)")
    cache = "watch cache on" if results["watch_cache"] else "--watch-cache=false"
    axis.set_title(f"LIST through kube-apiserver v{results['kubernetes']} ({cache})")
    axis.grid(True, which="both", alpha=0.3)
    axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
