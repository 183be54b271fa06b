"""The documentation's two-version CronTab with `None` conversion, end to end.

Create at v1beta1 (the storage version), read at v1, and prove from etcd that the object is
persisted at v1beta1: the API server converts on read and leaves storage alone.
"""

import pytest

from crdharness.scenarios import crds

GROUP, PLURAL = "example.com", "crontabs"


@pytest.fixture
def crontab_crd(cluster, manifests):
    path = manifests.path("crontab-none-conversion.yaml")
    cluster.kubectl("apply", "-f", str(path))
    crds.wait_established(cluster.apiextensions, f"{PLURAL}.{GROUP}")
    crds.wait_discovery(cluster.api_client, GROUP, {"v1beta1", "v1"})
    yield manifests("crontab-none-conversion.yaml")
    crds.delete_and_wait(cluster.api_client, f"{PLURAL}.{GROUP}")


@pytest.mark.behaviour("MV-09", "MV-10", "MV-14")
def test_created_at_v1beta1_read_at_v1_stored_at_v1beta1(cluster, crontab_crd, namespace):
    created = cluster.custom_objects.create_namespaced_custom_object(
        GROUP,
        "v1beta1",
        namespace,
        PLURAL,
        {
            "apiVersion": "example.com/v1beta1",
            "kind": "CronTab",
            "metadata": {"name": "my-crontab"},
            "host": "localhost",
            "port": "1234",
        },
    )
    assert created["apiVersion"] == "example.com/v1beta1"

    read = cluster.custom_objects.get_namespaced_custom_object(
        GROUP, "v1", namespace, PLURAL, "my-crontab"
    )
    assert read["apiVersion"] == "example.com/v1"
    assert (read["host"], read["port"]) == ("localhost", "1234")
    assert read["metadata"]["uid"] == created["metadata"]["uid"]

    stored = cluster.stored(GROUP, PLURAL, "my-crontab", namespace)
    assert stored is not None, "etcd has no key for the object"
    assert stored.api_version == "example.com/v1beta1"
    assert stored.json["host"] == "localhost"
    # The resourceVersion of a custom resource is the etcd revision of its last write.
    assert stored.mod_revision == int(created["metadata"]["resourceVersion"])

    # kubectl picks a version explicitly with <plural>.<version>.<group>.
    via_kubectl = cluster.kubectl(
        "get", "crontabs.v1.example.com", "my-crontab", "-n", namespace, "-o", "json"
    ).stdout
    assert '"apiVersion": "example.com/v1"' in via_kubectl
    # Reading did not rewrite storage.
    assert (
        cluster.stored(GROUP, PLURAL, "my-crontab", namespace).mod_revision == stored.mod_revision
    )
