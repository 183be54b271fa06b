"""``crdharness gate --from-cluster``: a second local control plane stands for a user's
cluster. Its Tunnel objects were written at v1alpha1 and v1beta1 (two in a mode the candidate
drops) and its ``status.storedVersions`` still lists v1alpha1, which the candidate removes.

The gate reads it as a user with only the ClusterRole ``--print-rbac`` prints, reports the
422 and each refused object by name, never shows a token, and leaves the source untouched:
every resourceVersion as it was, and no write from its user in the source's audit log. Once
the cluster is migrated and its objects fixed, the same gate passes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from crdharness import kubeconfig
from crdharness.backends.controlplane import ControlPlane
from crdharness.backends.local import local_cluster
from crdharness.cluster import Cluster
from tests.audited import audited_control_plane
from tests.gate_cli import report_of, run_gate

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "gate" / "from-cluster"
CRD = "tunnels.network.gate.example.com"
GROUP, PLURAL = "network.gate.example.com", "tunnels"
READER = "gate-reader"
TOKEN = "tk-4f9b2e61c0d8a7"  # a Secret-like value: it must never be shown


@pytest.fixture
def source(tmp_path, request):
    """The user's cluster: a control plane of its own, with an audit log of every request."""
    with audited_control_plane(tmp_path, request.config.getoption("--k8s-version")) as (
        plane,
        audit_log,
    ):
        cluster = local_cluster(plane)
        yield plane, cluster, audit_log
        cluster.close()


def _ok(answer) -> dict:
    assert answer.status_code < 300, answer.text
    return answer.json()


def _apply_crd(cluster: Cluster, manifest: dict) -> None:
    path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{manifest['metadata']['name']}"
    current = cluster.http.get(path)
    if current.status_code == 404:
        _ok(
            cluster.http.post(
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=manifest
            )
        )
    else:
        manifest = {
            **manifest,
            "metadata": {
                **manifest["metadata"],
                "resourceVersion": current.json()["metadata"]["resourceVersion"],
            },
        }
        _ok(cluster.http.put(path, json=manifest))
    cluster.kubectl("wait", "--for=condition=Established", f"crd/{manifest['metadata']['name']}")


def _storage(manifest: dict, version: str) -> dict:
    moved = json.loads(json.dumps(manifest))
    for entry in moved["spec"]["versions"]:
        entry["storage"] = entry["name"] == version
    return moved


def _create(cluster: Cluster, version: str, namespace: str, name: str, spec: dict) -> None:
    body = {
        "apiVersion": f"{GROUP}/{version}",
        "kind": "Tunnel",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }
    path = f"/apis/{GROUP}/{version}/namespaces/{namespace}/{PLURAL}"
    # The CRD may have been Established a moment ago: the first create can see a 404.
    for _ in range(50):
        answer = cluster.http.post(path, json=body)
        if answer.status_code != 404:
            break
        cluster.http.get(f"/apis/{GROUP}/{version}")  # until discovery serves it
    _ok(answer)


def _namespace(cluster: Cluster, name: str) -> None:
    _ok(cluster.http.post("/api/v1/namespaces", json={"metadata": {"name": name}}))


def _a_cluster_two_releases_old(cluster: Cluster) -> None:
    """Installed at release 1 when v1alpha1 was its storage version, upgraded to v1beta1
    storage later, never migrated."""
    release_1 = yaml.safe_load((EXAMPLE / "release-1.yaml").read_text())
    _apply_crd(cluster, _storage(release_1, "v1alpha1"))
    for namespace in ("team-a", "team-b"):
        _namespace(cluster, namespace)
    _create(cluster, "v1alpha1", "team-a", "office", {"mode": "direct", "token": TOKEN})
    _create(cluster, "v1alpha1", "team-a", "old-office", {"mode": "legacy", "token": TOKEN})
    _apply_crd(cluster, release_1)
    _create(cluster, "v1beta1", "team-b", "lab", {"mode": "relay", "replicas": 2})
    _create(cluster, "v1beta1", "team-b", "archive", {"mode": "legacy", "endpoint": "tcp://a"})


def _reader(plane: ControlPlane, cluster: Cluster, tmp_path: Path) -> Path:
    """A kubeconfig for a user who holds only what ``--print-rbac`` prints."""
    printed = subprocess.run(
        [sys.executable, "-m", "crdharness", "gate", str(EXAMPLE / "gate.yaml"), "--print-rbac"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    role = yaml.safe_load(printed)
    assert role["kind"] == "ClusterRole"
    assert {v for rule in role["rules"] for v in rule["verbs"]} == {"get", "list"}
    _ok(cluster.http.post("/apis/rbac.authorization.k8s.io/v1/clusterroles", json=role))
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": READER},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": role["metadata"]["name"],
        },
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": READER}],
    }
    _ok(cluster.http.post("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", json=binding))
    assert plane.ca is not None
    pair = plane.ca.issue_client(READER, READER)
    return kubeconfig.write(
        tmp_path / "reader.kubeconfig", "users-cluster", plane.server_url, plane.ca.bundle_b64, pair
    )


def _resource_versions(cluster: Cluster) -> dict[str, str]:
    listed = _ok(cluster.http.get(f"/apis/{GROUP}/v1beta1/{PLURAL}"))
    found = {
        f"{i['metadata']['namespace']}/{i['metadata']['name']}": i["metadata"]["resourceVersion"]
        for i in listed["items"]
    }
    crd = _ok(cluster.http.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{CRD}"))
    found[CRD] = crd["metadata"]["resourceVersion"]
    return found


def _gate(
    kubeconfig_path: Path, artifacts: Path, gate_file: Path = EXAMPLE / "gate.yaml", *extra: str
) -> tuple[int, dict, str]:
    done = run_gate(gate_file, artifacts, "--from-cluster", str(kubeconfig_path), *extra)
    report = report_of(done, artifacts / "report.json")
    return done.returncode, report, done.stdout + done.stderr


def _writes_by(audit_log: Path, user: str) -> tuple[int, list[str]]:
    """Requests ``user`` made to the source (all), and those that were not reads."""
    made, writes = 0, []
    for line in audit_log.read_text().splitlines():
        event = json.loads(line)
        if (
            event.get("user", {}).get("username") != user
            or event.get("stage") != "ResponseComplete"
        ):
            continue
        made += 1
        if event["verb"] not in ("get", "list", "watch"):
            writes.append(f"{event['verb']} {event['requestURI']}")
    return made, writes


def _everything_written(artifacts: Path, output: str) -> str:
    texts = [output]
    texts += [p.read_text(errors="replace") for p in artifacts.rglob("*") if p.is_file()]
    return "\n".join(texts)


def test_a_cluster_that_cannot_take_the_release_is_told_why_and_left_untouched(source, tmp_path):
    plane, cluster, audit_log = source
    _a_cluster_two_releases_old(cluster)
    reader = _reader(plane, cluster, tmp_path)
    before = _resource_versions(cluster)

    code, report, output = _gate(reader, tmp_path / "gate")

    assert code == 1, output[-3000:]
    answer = report["answer"]
    assert answer[0].startswith("This cluster (context users-cluster"), answer
    assert "cannot take release 2" in answer[0] and "422" in answer[0]
    assert "storedVersions tunnels.network.gate.example.com: v1alpha1, v1beta1" in answer[0]
    migration = next(c for c in report["checks"] if c["check"] == "migration")
    assert migration["status"] == "FAIL" and "422" in migration["evidence"], migration
    told = "\n".join(answer)
    assert f"- migrate {CRD} first: status.storedVersions still lists v1alpha1" in told
    # Refused for the value the candidate drops, once migrated:
    for refused in ("team-a/old-office", "team-b/archive"):
        line = next((line for line in answer if line.startswith(f"  - {refused}:")), told)
        assert 'Unsupported value: "legacy"' in line, line
    # Written at v1alpha1 on the source, its managedFields name it: server-side apply fails.
    office = next((line for line in answer if line.startswith("  - team-a/office:")), told)
    assert "request to convert CR to an invalid group/version" in office, office
    assert "team-b/lab" not in told  # written at v1beta1, in a mode the candidate keeps
    assert "This cluster (context users-cluster" in output.split("crdharness upgrade gate")[1]

    assert TOKEN not in _everything_written(tmp_path / "gate", output)
    assert _resource_versions(cluster) == before
    assert "keep their resourceVersions" in answer[-1]
    made, writes = _writes_by(audit_log, READER)
    assert made > 0, "the audit log holds none of the gate's reads: it proves nothing"
    assert writes == []


def test_a_migrated_cluster_with_valid_objects_can_take_the_release(source, tmp_path):
    plane, cluster, audit_log = source
    release_1 = yaml.safe_load((EXAMPLE / "release-1.yaml").read_text())
    _apply_crd(cluster, release_1)
    _namespace(cluster, "team-a")
    _create(cluster, "v1beta1", "team-a", "office", {"mode": "direct", "token": TOKEN})
    _create(cluster, "v1beta1", "team-a", "lab", {"mode": "relay", "replicas": 3})
    reader = _reader(plane, cluster, tmp_path)

    code, report, output = _gate(reader, tmp_path / "gate")

    assert code == 0, output[-3000:]
    assert "can take release 2" in report["answer"][0], report["answer"]
    upgrade = next(c for c in report["checks"] if c["check"] == "upgrade")
    assert upgrade["status"] == "pass" and "2 objects" in upgrade["evidence"], upgrade
    # The candidate's own checks judge the release with made-up objects, not this cluster.
    assert not {c["check"] for c in report["checks"]} & {"round-trip", "schemas-vs-strategy"}
    assert TOKEN not in _everything_written(tmp_path / "gate", output)
    assert _writes_by(audit_log, READER)[1] == []


PASSWORD = "pw-7c1e93ab55f0"  # Secret-like by its field's name, deep in spec
ANNOTATED = "at-0d2c6b9e41aa"  # Secret-like by its annotation's name
SHOWN = "tcp://shown-endpoint.example:7000"  # an ordinary value: shown when asked


def _with_auth(manifest: dict) -> dict:
    """The example's release with ``spec.auth.basic.password``: a credential nested deep."""
    for entry in manifest["spec"]["versions"]:
        spec = entry["schema"]["openAPIV3Schema"]["properties"]["spec"]
        spec["properties"]["auth"] = {
            "type": "object",
            "properties": {
                "basic": {
                    "type": "object",
                    "properties": {"user": {"type": "string"}, "password": {"type": "string"}},
                }
            },
        }
    return manifest


def test_shown_values_never_include_a_secret_like_one(source, tmp_path):
    plane, cluster, _ = source
    for name in ("release-1.yaml", "release-2.yaml"):
        text = yaml.safe_dump(_with_auth(yaml.safe_load((EXAMPLE / name).read_text())))
        (tmp_path / name).write_text(text)
    gate_file = tmp_path / "gate.yaml"
    gate_file.write_text("crds: [release-1.yaml, release-2.yaml]\ngenerate: 5\n")
    _apply_crd(cluster, yaml.safe_load((tmp_path / "release-1.yaml").read_text()))
    _namespace(cluster, "team-a")
    body = {
        "apiVersion": f"{GROUP}/v1beta1",
        "kind": "Tunnel",
        "metadata": {
            "name": "old-office",
            "namespace": "team-a",
            "annotations": {"example.com/api-token": ANNOTATED, "example.com/owner": "ops"},
        },
        "spec": {
            "mode": "legacy",  # the candidate drops it: this object is shown, refused
            "endpoint": SHOWN,
            "token": TOKEN,
            "auth": {"basic": {"user": "gate", "password": PASSWORD}},
        },
    }
    _ok(cluster.http.post(f"/apis/{GROUP}/v1beta1/namespaces/team-a/{PLURAL}", json=body))
    reader = _reader(plane, cluster, tmp_path)

    artifacts = tmp_path / "gate"
    code, report, output = _gate(reader, artifacts, gate_file, "--show-values")

    assert code == 1, output[-3000:]
    assert any("team-a/old-office" in line for line in report["answer"]), report["answer"]
    everything = _everything_written(artifacts, output)
    assert (artifacts / "junit.xml").is_file() and (artifacts / "report.md").is_file()
    shown = list((artifacts / "objects").glob("*.yaml"))
    assert shown, "the refused object is not under objects/"
    # Named by the object, and as the cluster holds it: without the gate's own annotations.
    assert (artifacts / "objects" / "Tunnel_team-a_old-office.upgrade.yaml").is_file(), shown
    for path in shown:
        assert "gate.crdharness.io" not in path.read_text(), path
    assert SHOWN in everything, "--show-values showed no value of the cluster's objects"
    for secret in (PASSWORD, ANNOTATED, TOKEN):
        assert secret not in everything, f"{secret} was shown"


def _with_status(manifest: dict, value: dict) -> dict:
    """The example's release with a status subresource holding ``addresses[].value``."""
    for entry in manifest["spec"]["versions"]:
        entry["subresources"] = {"status": {}}
        address = {"type": "object", "properties": {"value": {"type": "string", **value}}}
        entry["schema"]["openAPIV3Schema"]["properties"]["status"] = {
            "type": "object",
            "properties": {"addresses": {"type": "array", "items": address}},
        }
    return manifest


def test_a_status_only_refusal_names_the_status_field_to_fix(source, tmp_path):
    # The candidate narrows status.addresses[].value: the object's update, re-create and own
    # status update pass (ratcheting); its status written anew is refused.
    plane, cluster, _ = source
    for name, value in (("release-1.yaml", {}), ("release-2.yaml", {"pattern": "^[0-9.]+$"})):
        manifest = _with_status(yaml.safe_load((EXAMPLE / name).read_text()), value)
        (tmp_path / name).write_text(yaml.safe_dump(manifest))
    gate_file = tmp_path / "gate.yaml"
    gate_file.write_text("crds: [release-1.yaml, release-2.yaml]\ngenerate: 5\n")
    _apply_crd(cluster, yaml.safe_load((tmp_path / "release-1.yaml").read_text()))
    _namespace(cluster, "team-b")
    _create(cluster, "v1beta1", "team-b", "status-bad-ip", {"mode": "direct"})
    path = f"/apis/{GROUP}/v1beta1/namespaces/team-b/{PLURAL}/status-bad-ip"
    current = _ok(cluster.http.get(path))
    current["status"] = {"addresses": [{"value": "pending"}]}
    _ok(cluster.http.put(f"{path}/status", json=current))
    reader = _reader(plane, cluster, tmp_path)

    code, report, output = _gate(reader, tmp_path / "gate", gate_file)

    assert code == 1, output[-3000:]
    line = report["objects_to_fix"].get("team-b/status-bad-ip", "")
    assert line.startswith("status written to a new copy at v1beta1 refused: 422"), report
    assert line.endswith("fix status.addresses[0].value"), line
    assert "  paths: status.addresses[].value" in output, output[-3000:]
