"""One Markdown page of every figure found in ``artifacts/bench/*.json``.

    python -m benchmarks.report        # writes artifacts/bench/results.md

Each benchmark writes its own JSON; this only reads them, so a section appears once its
benchmark has run.
"""

from __future__ import annotations

import json
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "artifacts" / "bench"


def _load(name: str):
    path = OUT / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def _table(header: list[str], rows: list[list]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---:|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return [*lines, ""]


def control_plane(data) -> list[str]:
    return [
        f"Kubernetes {data['kubernetes']}, {len(data['runs'])} starts with cached binaries: "
        f"start-to-ready median **{data['start_to_ready_s_median']} s**; peak RSS of "
        f"kube-apiserver + etcd with {data['objects']} objects **{data['peak_rss_mib_max']} MiB**."
        + (
            f" `--reuse-cluster` attaches to a kept one in **{data['reuse_attach_s_median']} s**"
            " (median; command lines and /readyz checked)."
            if "reuse_attach_s_median" in data
            else ""
        ),
        "",
    ]


def suite(data) -> list[str]:
    rows = [[r["workers"], r["wall_seconds"], r.get("passed", 0), r["exit"]] for r in data]
    return _table(["workers", "wall s", "passed", "exit"], rows)


def webhook(data) -> list[str]:
    rows = [
        [
            r["batch"],
            r["clients"],
            r["reviews_per_second"],
            r["objects_per_second"],
            r["latency_ms_p50"],
            r["latency_ms_p99"],
        ]
        for r in data
    ]
    return _table(["batch", "clients", "reviews/s", "objects/s", "p50 ms", "p99 ms"], rows)


def agnhost(data) -> list[str]:
    rows = [
        [
            r["batch"],
            r["clients"],
            r["ours"]["objects_per_second"],
            r["agnhost"]["objects_per_second"],
            f"**{r['ratio_objects_per_second']}**",
            f"{r['ours']['latency_ms_p50']} / {r['agnhost']['latency_ms_p50']}",
            f"{r['ours']['latency_ms_p99']} / {r['agnhost']['latency_ms_p99']}",
        ]
        for r in data
    ]
    header = ["batch", "clients", "ours obj/s", "agnhost obj/s", "ours/agnhost"]
    header += ["p50 ms ours/agnhost", "p99 ms ours/agnhost"]
    if all("http_floor" in r for r in data):  # wrk runs also measure the do-nothing server
        header.append("do-nothing Python server obj/s")
        for row, r in zip(rows, data, strict=True):
            row.append(r["http_floor"]["objects_per_second"])
    return _table(header, rows)


def scaling(data) -> list[str]:
    rows = [
        [r["strategy"], r["objects"], r["list_at_stored_version_s"], r["list_converted_s"]]
        for r in data["list"]
    ]
    lines = _table(["conversion", "objects", "LIST stored version s", "LIST other s"], rows)
    for m in data.get("migration", []):
        lines.append(
            f"- migration of {m['objects']} objects with {m['workers']} writer(s): "
            f"{m['objects_per_second']} objects/s ({m['seconds']} s)"
        )
    return [*lines, ""]


def repeat(data) -> list[str]:
    seconds = sorted(r["seconds"] for r in data["runs"])
    return [
        f"{len(data['runs'])} back-to-back runs: **{data['failures']} failed**, "
        f"**{data['leaks']} left something behind**; run time median "
        f"{seconds[len(seconds) // 2]} s (min {seconds[0]}, max {seconds[-1]}).",
        "",
    ]


def interrupt(data) -> list[str]:
    rows = [[r["signal"], r["after_s"], len(r["leftovers"])] for r in data["runs"]]
    lines = _table(["signal", "after s", "leftovers"], rows)
    return [*lines, f"Next run after the interrupts: exit {data['next_run_exit']}.", ""]


def soak(data) -> list[str]:
    memory = data["memory"]
    return [
        f"{data['clients']} clients for {data['seconds']} s: {data['requests']} requests "
        f"({data['requests_per_second']}/s answered, {data['over_limit']} over the size limit, "
        f"{data['abandoned']} dropped half-way); problems: **{len(data['problems'])}**; RSS "
        f"{memory.get('rss_mib_second_quarter_median')} → "
        f"{memory.get('rss_mib_last_quarter_median')} MiB (max {memory.get('rss_mib_max')}), "
        f"stable: **{memory.get('stable')}**.",
        "",
    ]


def gate(data) -> list[str]:
    phases = sorted({k for r in data["runs"] for k in r["seconds"]})
    rows = [[r["wall_seconds"], *(r["seconds"].get(p, "") for p in phases)] for r in data["runs"]]
    return [
        f"Two-version CRD with a webhook, `generate: {data['generate']}` per version: median "
        f"**{data['wall_seconds_median']} s** wall time for `python -m crdharness gate`.",
        "",
        *_table(["wall s", *phases], rows),
    ]


def migration(data) -> list[str]:
    rows = [
        [r["method"], r["writers"], r["seconds"], r["objects_per_second"]] for r in data["runs"]
    ]
    return [
        f"{data['objects']} objects, Kubernetes {data['kubernetes']}; kube-controller-manager "
        f"started in {data['controller_manager_start_s']} s.",
        "",
        *_table(["method", "writers", "seconds", "objects/s"], rows),
    ]


def from_cluster(data) -> list[str]:
    rows = [
        [
            r["objects"],
            r["wall_seconds"],
            r["objects_per_second"],
            f"{r['named']}/{r['refused_planted']}",
            "yes" if r["named_exactly_the_refused"] else "NO",
        ]
        for r in data["runs"]
    ]
    return [
        f"`--from-cluster` on a second local control plane, {data['cpus']} CPUs (load "
        f"{data['load_before']:.1f} before); every 50th object refused by the candidate.",
        "",
        *_table(["objects", "wall s", "objects/s", "named", "exactly the refused"], rows),
    ]


SECTIONS = (
    ("Control plane", "control_plane", control_plane),
    ("Whole e2e suite", "suite", suite),
    ("Webhook throughput", "webhook", webhook),
    ("Ours vs agnhost crd-conversion-webhook (Python load generator)", "agnhost_compare", agnhost),
    ("Ours vs agnhost crd-conversion-webhook (wrk)", "agnhost_compare-wrk", agnhost),
    ("LIST and migration (watch cache on)", "scaling", scaling),
    ("LIST without watch cache", "scaling-no-watch-cache", scaling),
    ("Reliability: back-to-back runs", "reliability-repeat", repeat),
    ("Reliability: interrupts", "reliability-interrupt", interrupt),
    ("Webhook soak", "webhook-soak", soak),
    ("Upgrade gate", "gate", gate),
    ("Upgrade gate on a cluster (--from-cluster)", "from_cluster", from_cluster),
    ("Storage migration: Kubernetes' own vs crdharness.scenarios.migrate", "migration", migration),
)


def render() -> str:
    lines = ["# Benchmark results", ""]
    for title, name, section in SECTIONS:
        data = _load(name)
        if data is None:
            continue
        lines += [f"## {title}", "", *section(data)]
        if (OUT / f"{name}.png").exists():
            lines += [f"![{title}]({name}.png)", ""]
    return "\n".join(lines)


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "results.md").write_text(render())
    print(f"wrote {OUT / 'results.md'}")


if __name__ == "__main__":
    main()
