"""Behaviour that needs kube-controller-manager: a namespace's deletion purging its custom
resources, and the built-in storage version migration."""

import uuid
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from kubernetes.client import ApiException, V1Namespace, V1ObjectMeta

from crdharness.binaries import versions
from crdharness.cluster import CONTROL_PLANES, Cluster
from crdharness.polling import wait_for
from crdharness.scenarios import storage_migration
from crdharness.scenarios.versioned import crontab_manifest, version

# kube-controller-manager: on a fresh machine it is built beside the first tests.
pytestmark = pytest.mark.built_in_background

SERVED = ("v1beta1", "v1")


def namespace_gone(cluster, name) -> bool:
    try:
        cluster.core.read_namespace(name)
    except ApiException as exc:
        return exc.status == 404
    return False


@pytest.mark.behaviour("PP-03")
def test_deleting_a_namespace_deletes_its_custom_objects_at_every_version(
    controller_site, make_crd, group
):
    controllers, namespace = controller_site.cluster, controller_site.namespace
    crd = make_crd(
        crontab_manifest(group, [version("v1beta1", storage=True), version("v1")]), on=controllers
    )
    crd.create_object("v1beta1", namespace, "via-v1beta1", host="a", port="1")
    crd.set_storage("v1")
    crd.create_object("v1", namespace, "via-v1", host="b", port="2")
    assert {crd.stored_version_of(n, namespace) for n in ("via-v1beta1", "via-v1")} == set(SERVED)
    controller_site.start_controllers()

    controllers.core.delete_namespace(namespace)
    wait_for(
        lambda: namespace_gone(controllers, namespace),
        60,
        f"namespace {namespace} to be finalized by the namespace controller",
        last_seen=lambda: str(controllers.core.read_namespace(namespace).status),
    )
    for v in SERVED:
        listed = controllers.custom_objects.list_cluster_custom_object(group, v, crd.plural)
        assert listed["items"] == [], f"LIST at {v} still returns objects"
    assert crd.all_stored() == [], "etcd still holds the namespace's custom objects"


@dataclass
class ControllerSite:
    cluster: Cluster
    namespace: str
    start_controllers: Callable[[], None]  # called once the test's CRD exists


@pytest.fixture
def controller_site(cluster, request) -> ControllerSite:
    """Where a test that needs kube-controller-manager runs. Where the harness runs control
    planes, a control plane of the test's own, whose controllers the test starts once its CRD
    exists:

    - the garbage collector, which the built-in migrator waits for, learns of a new resource
      from discovery at start-up and then only every 30 s (not configurable): on the shared
      cluster MG-07 waited 13-44 s for that tick;
    - on the shared cluster the namespace controller would also take up every namespace the
      other tests delete (each at least 5 s after its deletion, hard-coded), loading that API
      server for the rest of the run; PP-03 took 20 s in a parallel run, 7.6 s alone.

    Elsewhere (kind, an existing cluster) the cluster's own controllers already run."""
    if cluster.can(CONTROL_PLANES):
        own = request.getfixturevalue("own_control_plane")()
        namespace = f"test-{uuid.uuid4().hex[:6]}"
        own.core.create_namespace(V1Namespace(metadata=V1ObjectMeta(name=namespace)))
        return ControllerSite(own, namespace, own.start_controllers)
    controllers = request.getfixturevalue("controllers")
    return ControllerSite(controllers, request.getfixturevalue("namespace"), lambda: None)


@pytest.mark.behaviour("MG-07")
def test_builtin_storage_version_migration_rewrites_every_object(
    controller_site, make_crd, group, request
):
    release = versions.resolve(request.config.getoption("--k8s-version"))
    cluster, namespace = controller_site.cluster, controller_site.namespace
    crd = make_crd(
        crontab_manifest(group, [version("v1beta1", storage=True), version("v1")]), on=cluster
    )
    names = [f"old-{i}" for i in range(20)]
    for name in names:
        crd.create_object("v1beta1", namespace, name, host=name, port="1")
    crd.set_storage("v1")
    assert crd.stored_versions() == ["v1beta1", "v1"]
    revisions = {s.key: s.mod_revision for s in crd.all_stored()}
    controller_site.start_controllers()

    done = storage_migration.migrate(
        cluster, release, group, crd.plural, "v1", nudge=lambda: crd.touch("v1", namespace)
    )

    stored = crd.all_stored()
    assert len(stored) == len(names)
    for item in stored:
        assert item.api_version == f"{group}/v1", f"{item.key} is still at {item.api_version}"
        assert item.mod_revision > revisions[item.key]
        assert item.json["host"] in names
    if storage_migration.updates_stored_versions(release):
        # Kubernetes >= 1.36: the migrator trims storedVersions itself.
        assert crd.stored_versions() == ["v1"], done["status"]
    else:
        # Before 1.36 the documented last step stays manual (as in MG-05).
        assert crd.stored_versions() == ["v1beta1", "v1"]
        crd.patch_stored_versions(["v1"])
        assert crd.stored_versions() == ["v1"]
    crd.set_served("v1beta1", False)
    assert len(crd.list_objects("v1", namespace)) == len(names)
