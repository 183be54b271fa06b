"""The failure bundle's objects.yaml: every object of every CRD, all namespaces, read with one
list request per CRD at its storage version, and the files written CRD by CRD (issue 42: a
``kubectl get`` per CRD took 6.5 minutes on a provider's 966 CRDs). On the session's control
plane."""

from __future__ import annotations

import uuid

import pytest
import yaml

from crdharness.reports import bundle

pytestmark = pytest.mark.e2e


def _crd(group: str) -> dict:
    schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    versions = [
        {"name": "v1", "served": True, "storage": False, "schema": {"openAPIV3Schema": schema}},
        {"name": "v2", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}},
    ]
    names = {"plural": "lanterns", "singular": "lantern", "kind": "Lantern"}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"lanterns.{group}"},
        "spec": {"group": group, "scope": "Namespaced", "names": names, "versions": versions},
    }


def test_objects_yaml_holds_every_object_of_every_namespace_at_the_storage_version(
    cluster, tmp_path, monkeypatch
):
    group = f"b{uuid.uuid4().hex[:8]}.bundle.example.com"
    crd = _crd(group)
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(crd))
    cluster.kubectl("wait", "--for=condition=Established", f"crd/{crd['metadata']['name']}")
    namespaces = [f"bundle-{uuid.uuid4().hex[:6]}" for _ in range(2)]
    try:
        for ns in namespaces:
            cluster.kubectl("create", "namespace", ns)
        monkeypatch.setattr(bundle, "LIST_PAGE", 2)  # three objects: two pages
        for i, ns in enumerate([*namespaces, namespaces[0]]):
            obj = {"apiVersion": f"{group}/v1", "kind": "Lantern", "metadata": {"name": f"l{i}"}}
            cluster.kubectl("apply", "-n", ns, "-f", "-", input=yaml.safe_dump(obj))
        bundle._write_cluster_state(cluster, tmp_path)
        objects = yaml.safe_load((tmp_path / "objects.yaml").read_text())
        mine = objects[crd["metadata"]["name"]]
        assert {(o["metadata"]["namespace"], o["metadata"]["name"]) for o in mine} == {
            (namespaces[0], "l0"),
            (namespaces[1], "l1"),
            (namespaces[0], "l2"),
        }
        assert len(mine) == 3
        assert {o["apiVersion"] for o in mine} == {f"{group}/v2"}
        crds = yaml.safe_load((tmp_path / "crds.yaml").read_text())
        assert crd["metadata"]["name"] in {c["metadata"]["name"] for c in crds}
        # written CRD by CRD, each file one entry per CRD
        assert len(crds) == len(objects)
        stored = yaml.safe_load((tmp_path / "etcd-stored-versions.yaml").read_text())
        assert set(stored) == set(objects)
        if cluster.etcd is not None:
            keys = stored[crd["metadata"]["name"]]
            assert len(keys) == 3 and {k["apiVersion"] for k in keys.values()} == {f"{group}/v2"}
    finally:
        cluster.kubectl("delete", "crd", crd["metadata"]["name"], "--wait=false", check=False)
        for ns in namespaces:
            cluster.kubectl("delete", "namespace", ns, "--wait=false", check=False)
