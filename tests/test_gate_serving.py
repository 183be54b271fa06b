"""Which stored object keeps a resource from serving, as the API server's 429 names it
(``phases.serving``): its name and namespace, whatever the key's prefix."""

from types import SimpleNamespace

import pytest

from crdharness.gate.phases import serving
from crdharness.gate.phases.serving import STORED_KEY

CLUSTER_SCOPED = (
    "storage is (re)initializing: failed to list <unspecified>: failed to read one or more "
    "tenants.capsule.example.com from the storage: StorageError: corrupt object, Code: 7, "
    "Key: /registry/capsule.example.com/tenants/r1-v1beta1-7, ResourceVersion: 0, "
    "AdditionalErrorMsg: object not decodable revision=882: conversion webhook … returned "
    "invalid metadata: metadata.annotation: Too long"
)


def test_a_cluster_scoped_object_is_named_by_its_key():
    found = STORED_KEY.search(CLUSTER_SCOPED)
    assert found is not None
    assert (found["group"], found["plural"], found["namespace"], found["name"]) == (
        "capsule.example.com",
        "tenants",
        None,
        "r1-v1beta1-7",
    )


def test_a_namespaced_object_is_named_with_its_namespace_also_without_the_prefix():
    said = (
        "StorageError: corrupt object, Code: 7, "
        "Key: /gate.example.com/crontabs/gate-history/r1-v1-6, ResourceVersion: 0"
    )
    found = STORED_KEY.search(said)
    assert found is not None
    assert (found["namespace"], found["name"]) == ("gate-history", "r1-v1-6")


def test_a_429_naming_no_object_names_none():
    assert STORED_KEY.search("storage is (re)initializing") is None


@pytest.mark.e2e
def test_the_wait_ends_naming_the_stored_object_no_conversion_can_read(
    cluster, namespace, webhook_crd, isolated_webhook
):
    # Stored at v1beta1, then the webhook fails every conversion, and a change to the CRD's
    # spec makes the API server build its cache of v1 again: it can never, while the object
    # is stored. The wait (no deadline of its own) ends once the 429 names the object and a
    # GET of it fails too; with the webhook converting again, the resource serves.
    crd = webhook_crd(isolated_webhook)
    crd.create_object("v1beta1", namespace, "blocker", hostPort="localhost:1234")
    isolated_webhook.set_faults("fail-with-message")
    column = {"name": "Host", "type": "string", "jsonPath": ".host"}
    crd.update(lambda m: m["spec"]["versions"][1].update(additionalPrinterColumns=[column]), False)
    gate = SimpleNamespace(cluster=cluster)  # what the wait uses of a gate's context
    blocked = serving.wait_settled(gate, crd.read())  # type: ignore[arg-type]
    assert blocked is not None
    assert (blocked.version, blocked.namespace, blocked.name) == ("v1", namespace, "blocker")
    assert blocked.read.startswith("500 ") and "conversion webhook" in blocked.read
    assert "storage is (re)initializing" in blocked.said
    isolated_webhook.set_faults()
    assert serving.wait_settled(gate, crd.read()) is None  # type: ignore[arg-type]
