"""Which stored object keeps a resource from serving, as the API server's 429 names it
(``phases.serving``): its name and namespace, whatever the key's prefix."""

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
