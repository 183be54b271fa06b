"""The cluster itself: the facts every other e2e test relies on."""

from crdharness.cluster import CONTROL_PLANES, ETCD


def test_server_reports_the_requested_kubernetes_version(cluster):
    version = cluster.http.get("/version").json()["gitVersion"]
    assert version != "v0.0.0"
    if cluster.kubernetes is not None:  # a release the harness started
        assert version == f"v{cluster.kubernetes}"


def test_kubectl_reports_real_client_and_server_versions(cluster):
    out = cluster.kubectl("version", "-o", "json").stdout
    assert '"gitVersion": "v0.0.0"' not in out
    assert '"serverVersion"' in out


def test_admin_identity_is_in_system_masters(cluster):
    review = cluster.kubectl("auth", "can-i", "*", "*", "--all-namespaces").stdout.strip()
    assert review == "yes"


def test_local_backend_exposes_logs_and_etcd(cluster):
    if not cluster.can(CONTROL_PLANES):
        if not cluster.can(ETCD):
            assert cluster.etcd is None
            assert cluster.etcd_unavailable
        return
    assert set(cluster.logs) == {"etcd", "kube-apiserver"}
    assert all(path.stat().st_size > 0 for path in cluster.logs.values())
    crd = cluster.etcd.get("/registry/apiextensions.k8s.io/customresourcedefinitions/nope")
    assert crd is None
    namespaces = cluster.etcd.list("/registry/namespaces/")
    assert "/registry/namespaces/default" in {kv.key for kv in namespaces}
