"""``crdharness gate --from-cluster`` on clusters holding many objects, the ground truth known
by construction (``benchmarks.source_cluster``: a second local control plane, the
``from-cluster`` example's release 1, Tunnels in mode ``legacy`` being exactly what the
candidate refuses). Every object is judged: past ``upgrade_screen.FULL_WRITES`` most are
screened by dry runs, and the answer must still name every refused object and no other."""

from __future__ import annotations

import pytest

from benchmarks.source_cluster import (
    CRD,
    EXAMPLE,
    body,
    named_in_answer,
    seed,
    seed_bodies,
    source_plane,
)
from crdharness.gate.checks.upgrade_screen import FULL_WRITES
from tests.gate_cli import report_of, run_gate

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def _gate(kubeconfig, artifacts, *extra: str) -> tuple[int, dict, str]:
    done = run_gate(EXAMPLE / "gate.yaml", artifacts, "--from-cluster", str(kubeconfig), *extra)
    return done.returncode, report_of(done, artifacts / "report.json"), done.stdout + done.stderr


def test_over_a_thousand_objects_every_refused_one_is_named_and_no_other(tmp_path, request):
    # 1,100 objects: over three times FULL_WRITES, three pages of LIST (the last one short);
    # the same answer at 10,000 is `nox -s bench_from_cluster`'s to prove (it fails on a wrong
    # answer), not a test's.
    k8s = request.config.getoption("--k8s-version")
    with source_plane(k8s) as (plane, cluster):
        seeded = seed(cluster, 1_100, refused_every=50)
        code, report, output = _gate(plane.kubeconfig, tmp_path / "gate")
    assert len(seeded.refused) == 22
    assert code == 1, output[-3000:]
    assert named_in_answer(report) == seeded.refused
    assert "22 of its objects are refused" in report["answer"][0], report["answer"][0]
    assert "1100 objects" in report["answer"][0]
    assert report["objects_not_replayed"] == {}
    upgrade = next(c for c in report["checks"] if c["check"] == "upgrade")
    assert upgrade["status"] == "FAIL"
    assert "gate-recreated-" not in "\n".join(report["answer"])  # names the gate made up


def test_a_cap_below_the_count_is_the_first_line_with_findings_and_without(tmp_path, request):
    k8s = request.config.getoption("--k8s-version")
    count = FULL_WRITES + 100  # past the screening threshold too
    with source_plane(k8s) as (plane, cluster):
        seeded = seed(cluster, count, refused_every=40)
        code, report, output = _gate(plane.kubeconfig, tmp_path / "findings", "--max-objects", "50")
    left_out = count - 50
    first = report["answer"][0]
    assert code == 1, output[-3000:]
    crd = "tunnels.network.gate.example.com"
    assert first.startswith(f"{left_out} of {count} objects of {crd} were not replayed"), first
    assert "--max-objects 50); raise it" in first
    assert named_in_answer(report) <= seeded.refused
    assert named_in_answer(report)  # one of each shape first: a legacy one is in

    with source_plane(k8s) as (plane, cluster):
        seed(cluster, count, refused_every=0)
        code, report, output = _gate(plane.kubeconfig, tmp_path / "clean", "--max-objects", "50")
    first = report["answer"][0]
    assert code == 2, output[-3000:]  # not proven: what was not replayed was not judged
    assert first.startswith(f"{left_out} of {count} objects of {crd} were not replayed"), first


def test_an_empty_field_is_a_shape_of_its_own_when_a_cap_chooses(tmp_path, request):
    # Every object holds only spec.mode but one, which also holds `endpoint: ""`: were an
    # empty field no field, that one would share the others' shape, and a cap of 50 would
    # leave it out (it is the 151st).
    bodies = [body(i, refused=False) for i in range(300)]
    for item in bodies:
        item["spec"] = {"mode": "direct"}
    bodies[150]["spec"] = {"mode": "legacy", "endpoint": ""}
    k8s = request.config.getoption("--k8s-version")
    with source_plane(k8s) as (plane, cluster):
        seeded = seed_bodies(cluster, bodies)
        code, report, output = _gate(plane.kubeconfig, tmp_path / "gate", "--max-objects", "50")
    assert code == 1, output[-3000:]
    assert named_in_answer(report) == seeded.refused == {"team-a/tunnel-00150"}


def test_objects_the_installed_crd_no_longer_admits_are_replayed_as_the_cluster_holds_them(
    tmp_path, request
):
    # Created while release 1 allowed mode legacy; the cluster's CRD was then narrowed, so
    # a create through the API server refuses them. Screened objects are stored straight into
    # etcd, as the cluster holds them: replayed, and what both releases refuse is release
    # 1's hazard, not the candidate's finding.
    bodies = [body(i, refused=i in (100, 101, 203)) for i in range(FULL_WRITES + 100)]
    k8s = request.config.getoption("--k8s-version")
    with source_plane(k8s) as (plane, cluster):
        seed_bodies(cluster, bodies)
        narrowed = cluster.http.get(
            f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{CRD}"
        )
        crd = narrowed.json()
        for version in crd["spec"]["versions"]:
            mode = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["mode"]
            mode["enum"] = ["direct", "relay"]
        answer = cluster.http.put(
            f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{CRD}", json=crd
        )
        assert answer.status_code == 200, answer.text
        code, report, output = _gate(plane.kubeconfig, tmp_path / "gate")
    hazards = "\n".join(report["hazards"])
    for label in ("team-c/tunnel-00101", "team-c/tunnel-00203"):  # screened: stored directly
        assert f"refuses re-creating {label}" in hazards and label not in report["objects_to_fix"]
    assert "team-b/tunnel-00100" in hazards  # written in full: its create refused, not replayed
    assert report["objects_to_fix"] == {}, report["objects_to_fix"]
    assert code in (0, 2), output[-3000:]
