"""A user's cluster for ``--from-cluster`` runs: a second local control plane holding the
``from-cluster`` example's Tunnels at release 1, ``count`` objects over a few namespaces, a
known set of which the candidate (release 2, which drops mode ``legacy``) refuses.

Used by ``nox -s bench_from_cluster`` and by ``tests/test_gate_from_cluster.py``: the
ground truth (which objects the candidate refuses) is known by construction.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from crdharness.backends.controlplane import ControlPlane, ControlPlaneOptions
from crdharness.backends.local import local_cluster
from crdharness.binaries import assets, versions
from crdharness.cluster import Cluster
from crdharness.polling import wait_for

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "gate" / "from-cluster"
GROUP, PLURAL, KIND = "network.gate.example.com", "tunnels", "Tunnel"
CRD = f"{PLURAL}.{GROUP}"
NAMESPACES = ("team-a", "team-b", "team-c")
MODES = ("direct", "relay")


@dataclass
class Seeded:
    """What the source cluster holds: every object as ``namespace/name``, and those the
    candidate refuses."""

    objects: list[str] = field(default_factory=list)
    refused: set[str] = field(default_factory=set)


@contextlib.contextmanager
def source_plane(
    k8s: str | None = None, extra_flags: list[str] | None = None
) -> Iterator[tuple[ControlPlane, Cluster]]:
    """A control plane of its own standing for the user's cluster; always stopped."""
    release = versions.resolve(k8s)
    options = ControlPlaneOptions(extra_apiserver_flags=list(extra_flags or []))
    plane = ControlPlane(assets.resolve(release), release, options, report=lambda line: None)
    plane.start()
    cluster = local_cluster(plane)
    try:
        yield plane, cluster
    finally:
        cluster.close()
        plane.stop()


def _ok(answer) -> dict:
    if answer.status_code >= 300:
        raise RuntimeError(
            f"{answer.request.method} {answer.url}: {answer.status_code} {answer.text}"
        )
    return answer.json()


def install_release_1(cluster: Cluster) -> None:
    manifest = yaml.safe_load((EXAMPLE / "release-1.yaml").read_text())
    _ok(cluster.http.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=manifest))
    cluster.kubectl("wait", "--for=condition=Established", f"crd/{CRD}")

    def served() -> bool:  # Established a moment ago: discovery may still 404
        return cluster.http.get(f"/apis/{GROUP}/v1beta1/{PLURAL}").status_code == 200

    wait_for(served, timeout=60, what=f"the API server serving {GROUP}/v1beta1 {PLURAL}")


def body(index: int, refused: bool) -> dict:
    """Object ``index``: mode legacy when the candidate must refuse it, else a valid mode;
    some with an endpoint or replicas, so that the objects have several shapes."""
    spec: dict = {"mode": "legacy" if refused else MODES[index % len(MODES)]}
    if index % 3 == 0:
        spec["endpoint"] = f"tcp://host-{index}:443"
    if index % 5 == 0:
        spec["replicas"] = 1 + index % 4
    return {
        "apiVersion": f"{GROUP}/v1beta1",
        "kind": KIND,
        "metadata": {"name": f"tunnel-{index:05d}", "namespace": NAMESPACES[index % 3]},
        "spec": spec,
    }


def seed(cluster: Cluster, count: int, refused_every: int, workers: int = 8) -> Seeded:
    """Release 1 installed and ``count`` Tunnels created; every ``refused_every``-th one
    (0: none) in mode legacy, which the candidate refuses."""
    bodies = [body(i, bool(refused_every) and i % refused_every == 0) for i in range(count)]
    return seed_bodies(cluster, bodies, workers)


def seed_bodies(cluster: Cluster, bodies: list[dict], workers: int = 8) -> Seeded:
    """Release 1 installed and ``bodies`` (Tunnels at v1beta1, in ``NAMESPACES``) created,
    ``workers`` at once; those in mode legacy are the ones the candidate refuses."""
    install_release_1(cluster)
    for namespace in NAMESPACES:
        _ok(cluster.http.post("/api/v1/namespaces", json={"metadata": {"name": namespace}}))

    def create(item: dict) -> None:
        namespace = item["metadata"]["namespace"]
        _ok(cluster.http.post(f"/apis/{GROUP}/v1beta1/namespaces/{namespace}/{PLURAL}", json=item))

    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(create, bodies))
    seeded = Seeded()
    for item in bodies:
        label = f"{item['metadata']['namespace']}/{item['metadata']['name']}"
        seeded.objects.append(label)
        if item["spec"]["mode"] == "legacy":
            seeded.refused.add(label)
    return seeded


def named_in_answer(report: dict) -> set[str]:
    """The objects an operator's answer says to fix: report.json's ``objects_to_fix`` (the
    answer itself lists the first 20), checked against the answer's own lines."""
    listed = {line[4:].split(":", 1)[0] for line in report["answer"] if line.startswith("  - ")}
    listed = {label for label in listed if not label.startswith("and ")}
    every = set(report.get("objects_to_fix", {}))
    if not listed <= every:
        raise AssertionError(f"the answer lists objects objects_to_fix lacks: {listed - every}")
    return every
