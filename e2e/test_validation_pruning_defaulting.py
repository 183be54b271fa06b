"""P. Validation, pruning and defaulting across versions (PD-*)."""

import pytest
from kubernetes.client.rest import ApiException

from crdharness.polling import wait_for
from crdharness.scenarios.versioned import (
    HOSTPORT_SCHEMA,
    crontab_manifest,
    expect_invalid,
    version,
)

PORT_PATTERN_SCHEMA = {
    "type": "object",
    "properties": {"host": {"type": "string"}, "port": {"type": "string", "pattern": "^[0-9]+$"}},
}


def create_raw(crd, version_name, namespace, body, **params):
    return crd.cluster.http.post(crd.path(version_name, namespace), json=body, params=params)


@pytest.mark.behaviour("PD-01", "FL-09")
def test_each_version_validates_with_its_own_schema(make_crd, group, namespace, conversion_webhook):
    from crdharness.scenarios.versioned import webhook_conversion

    crd = make_crd(
        crontab_manifest(
            group,
            [
                version("v1beta1", storage=True, schema=HOSTPORT_SCHEMA),
                version("v1", schema=PORT_PATTERN_SCHEMA),
            ],
            webhook_conversion(conversion_webhook),
        )
    )
    refused = create_raw(crd, "v1", namespace, crd.body("v1", "bad", host="h", port="abc"))
    assert refused.status_code == 422 and "should match '^[0-9]+$'" in refused.text
    accepted = create_raw(crd, "v1beta1", namespace, crd.body("v1beta1", "ok", hostPort="h:abc"))
    assert accepted.status_code == 201, accepted.text


@pytest.mark.behaviour("PD-02", "PP-13")
@pytest.mark.parametrize("at", ["v1beta1", "v1"])
def test_unknown_fields_are_pruned_or_refused_in_every_version(make_crd, group, namespace, at):
    crd = make_crd(crontab_manifest(group, [version("v1beta1", storage=True), version("v1")]))
    body = crd.body(at, "pruned", host="h", someRandomField=42)
    kept = create_raw(crd, at, namespace, body, fieldValidation="Ignore")
    assert kept.status_code == 201 and "someRandomField" not in kept.json()
    assert "someRandomField" not in crd.stored("pruned", namespace).json
    strict = create_raw(
        crd, at, namespace, {**body, "metadata": {"name": "strict"}}, fieldValidation="Strict"
    )
    assert strict.status_code in (400, 422)
    assert 'unknown field "someRandomField"' in strict.json()["message"]


@pytest.mark.behaviour("PD-04")
def test_defaults_come_from_the_request_version(make_crd, group, namespace):
    defaulted = {
        "type": "object",
        "properties": {"host": {"type": "string"}, "port": {"type": "string", "default": "80"}},
    }
    crd = make_crd(
        crontab_manifest(group, [version("v1beta1", storage=True), version("v1", schema=defaulted)])
    )
    crd.create_object("v1", namespace, "via-v1", host="h")
    crd.create_object("v1beta1", namespace, "via-beta", host="h")
    assert crd.stored("via-v1", namespace).json["port"] == "80"
    assert "port" not in crd.stored("via-beta", namespace).json


@pytest.mark.behaviour("PD-05")
def test_read_time_defaults_are_not_persisted_until_an_update(make_crd, group, namespace):
    crd = make_crd(crontab_manifest(group, [version("v1beta1", storage=True), version("v1")]))
    crd.create_object("v1beta1", namespace, "old", host="h")

    def default_port(c):
        entry = next(v for v in c["spec"]["versions"] if v["name"] == "v1beta1")
        entry["schema"]["openAPIV3Schema"]["properties"]["port"]["default"] = "443"

    crd.update(default_port)
    # The CRD's handler is rebuilt with the new schema a moment after the update settled.
    wait_for(
        lambda: crd.get_object("v1beta1", namespace, "old").get("port") == "443",
        30,
        "reads to apply the new default",
        retry=(ApiException,),  # 429 while the handler is rebuilt
        last_seen=lambda: str(crd.get_object("v1beta1", namespace, "old")),
    )
    assert crd.get_object("v1", namespace, "old")["port"] == "443"
    assert "port" not in crd.stored("old", namespace).json
    crd.replace_object("v1beta1", namespace, crd.get_object("v1beta1", namespace, "old"))
    assert crd.stored("old", namespace).json["port"] == "443"


@pytest.mark.behaviour("PD-07")
def test_preserve_unknown_fields_true_is_refused_on_v1(cluster, group):
    manifest = crontab_manifest(group, [version("v1", storage=True)])
    manifest["spec"]["preserveUnknownFields"] = True
    message = expect_invalid(cluster, manifest)
    assert "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in " in message
    assert "spec.versions[*].schema instead" in message
