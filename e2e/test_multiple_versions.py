"""B. Multiple versions and the `None` conversion (MV-*)."""

import json
import threading

import pytest
from kubernetes.client.rest import ApiException

from crdharness.polling import wait_for
from crdharness.scenarios.versioned import (
    HOSTPORT_SCHEMA,
    OPEN_SCHEMA,
    crontab_manifest,
    expect_invalid,
    version,
)


def two_versions(group, **conversion):
    return crontab_manifest(
        group, [version("v1beta1", storage=True), version("v1")], conversion or None
    )


@pytest.mark.behaviour("MV-01", "MV-05")
def test_each_served_version_is_served_with_its_own_schema(cluster, make_crd, group):
    crd = make_crd(
        crontab_manifest(
            group,
            [version("v1beta1", storage=True, schema=HOSTPORT_SCHEMA), version("v1")],
        )
    )
    for v in ("v1beta1", "v1"):
        resources = cluster.http.get(f"/apis/{group}/{v}").json()["resources"]
        (crontabs,) = [r for r in resources if r["name"] == "crontabs"]
        assert crontabs["singularName"] == "crontab"
        assert crontabs["kind"] == "CronTab"
        assert crontabs["namespaced"] is True
        assert crontabs["shortNames"] == ["ct"]
        assert set(crontabs["verbs"]) >= {
            "get",
            "list",
            "watch",
            "create",
            "update",
            "patch",
            "delete",
            "deletecollection",
        }
    schemas = {v["name"]: v["schema"]["openAPIV3Schema"] for v in crd.read()["spec"]["versions"]}
    assert set(schemas["v1beta1"]["properties"]) == {"hostPort"}
    assert set(schemas["v1"]["properties"]) == {"host", "port"}


@pytest.mark.behaviour("MV-02")
def test_v1_crd_version_without_schema_is_refused(cluster, group):
    manifest = two_versions(group)
    del manifest["spec"]["versions"][1]["schema"]
    assert "spec.versions[1].schema.openAPIV3Schema: Required value" in expect_invalid(
        cluster, manifest
    )


@pytest.mark.behaviour("MV-03")
@pytest.mark.parametrize("storage", [(True, True), (False, False)], ids=["two", "none"])
def test_exactly_one_storage_version(cluster, group, storage):
    manifest = two_versions(group)
    for entry, flag in zip(manifest["spec"]["versions"], storage, strict=True):
        entry["storage"] = flag
    assert "must have exactly one version marked as storage version" in expect_invalid(
        cluster, manifest
    )


@pytest.mark.behaviour("MV-04")
def test_name_must_be_plural_dot_group(cluster, group):
    manifest = two_versions(group)
    manifest["metadata"]["name"] = f"crontab.{group}"
    assert 'must be spec.names.plural+"."+spec.group' in expect_invalid(cluster, manifest)


@pytest.mark.behaviour("MV-06", "PP-07")
def test_plural_singular_short_and_kind_names_all_work(cluster, make_crd, group, namespace):
    manifest = two_versions(group)
    # Short names are cluster-wide, and tests running alongside make CronTabs ("ct") too: a
    # short name of this test's own, so kubectl cannot pick another group's.
    short = "ct" + group.split(".")[0].rsplit("-", 1)[-1]
    manifest["spec"]["names"]["shortNames"] = [short]
    crd = make_crd(manifest)
    crd.create_object("v1", namespace, "one", host="h", port="1")
    for name in ("crontabs", "crontab", short, "CronTab", "CRONTABS"):
        out = cluster.kubectl(
            "get", name if name == short else f"{name}.{group}", "-n", namespace, "-o", "json"
        ).stdout
        items = json.loads(out)["items"]
        assert [i["metadata"]["name"] for i in items] == ["one"], name
        assert items[0]["kind"] == "CronTab"


@pytest.mark.behaviour("MV-07", "PP-02")
@pytest.mark.parametrize("scope", ["Namespaced", "Cluster"])
def test_scope_decides_the_url_shape(cluster, make_crd, group, namespace, scope):
    crd = make_crd(crontab_manifest(group, [version("v1", storage=True)], scope=scope))
    body = crd.body("v1", "scoped", host="h")
    if scope == "Namespaced":
        made = cluster.http.post(crd.path("v1", namespace), json=body)
        assert made.status_code == 201, made.text
        assert made.json()["metadata"]["namespace"] == namespace
        assert crd.stored("scoped", namespace) is not None
        path = f"/apis/{group}/v1/namespaces/{namespace}/crontabs/scoped"
    else:
        made = cluster.http.post(f"/apis/{group}/v1/crontabs", json=body)
        assert made.status_code == 201, made.text
        assert "namespace" not in made.json()["metadata"]
        assert crd.stored("scoped") is not None
        path = f"/apis/{group}/v1/crontabs/scoped"
    assert cluster.http.get(path).status_code == 200
    resources = cluster.http.get(f"/apis/{group}/v1").json()["resources"]
    assert next(r for r in resources if r["name"] == "crontabs")["namespaced"] is (
        scope == "Namespaced"
    )


@pytest.mark.behaviour("MV-08")
def test_conversion_defaults_to_none(make_crd, group):
    crd = make_crd(two_versions(group))
    assert crd.read()["spec"]["conversion"] == {"strategy": "None"}


@pytest.mark.behaviour("MV-09", "MV-10")
def test_none_reads_change_only_api_version_and_never_storage(make_crd, group, namespace, cluster):
    crd = make_crd(two_versions(group))
    crd.create_object(
        "v1beta1",
        namespace,
        "local-crontab",
        host="localhost",
        port="1234",
        metadata={"labels": {"a": "b"}},
    )
    before = crd.stored("local-crontab", namespace)
    beta = crd.get_object("v1beta1", namespace, "local-crontab")
    for _ in range(5):
        v1 = crd.get_object("v1", namespace, "local-crontab")
        listed = crd.list_objects("v1", namespace)
    watched = cluster.http.get(
        crd.path("v1", namespace), params={"watch": "1", "timeoutSeconds": "1"}
    ).text.splitlines()
    assert json.loads(watched[0])["object"]["apiVersion"] == f"{group}/v1"
    assert {**beta, "apiVersion": v1["apiVersion"]} == v1
    assert listed[0]["apiVersion"] == f"{group}/v1"
    after = crd.stored("local-crontab", namespace)
    assert (after.raw, after.mod_revision) == (before.raw, before.mod_revision)
    assert after.api_version == f"{group}/v1beta1"


@pytest.mark.behaviour("MV-11", "PD-03")
def test_none_with_different_schemas_hides_data_in_the_view_only(make_crd, group, namespace):
    crd = make_crd(
        crontab_manifest(
            group,
            [version("v1beta1", storage=True, schema=HOSTPORT_SCHEMA), version("v1")],
            {"strategy": "None"},
        )
    )
    crd.create_object("v1beta1", namespace, "hp", hostPort="localhost:1234")
    view = crd.get_object("v1", namespace, "hp")
    assert not {"hostPort", "host", "port"} & set(view)
    assert crd.stored("hp", namespace).json["hostPort"] == "localhost:1234"


@pytest.mark.behaviour("MV-12")
def test_none_read_keeps_unknown_fields_when_the_target_preserves_them(make_crd, group, namespace):
    crd = make_crd(
        crontab_manifest(
            group,
            [
                version("v1beta1", storage=True, schema=HOSTPORT_SCHEMA),
                version("v1", schema=OPEN_SCHEMA),
            ],
        )
    )
    crd.create_object("v1beta1", namespace, "hp", hostPort="localhost:1234")
    assert crd.get_object("v1", namespace, "hp")["hostPort"] == "localhost:1234"


@pytest.mark.behaviour("MV-13", "SV-02")
def test_writes_at_any_version_are_stored_at_the_storage_version(make_crd, group, namespace):
    crd = make_crd(two_versions(group))
    crd.create_object("v1", namespace, "via-v1", host="example.com", port="2345")
    crd.create_object("v1beta1", namespace, "via-beta", host="h", port="1")
    for name in ("via-v1", "via-beta"):
        stored = crd.stored(name, namespace)
        assert stored.api_version == f"{group}/v1beta1"
    assert crd.stored("via-v1", namespace).json["port"] == "2345"


@pytest.mark.behaviour("MV-15")
@pytest.mark.parametrize(
    ("names", "says"),
    [
        (["V1"], "a DNS-1035 label"),
        (["v1.0"], "a DNS-1035 label"),
        (["v1", "v1"], "must contain unique version names"),
    ],
)
def test_version_names_are_dns_labels_and_unique(cluster, group, names, says):
    versions = [version(n, storage=i == 0) for i, n in enumerate(names)]
    assert says in expect_invalid(cluster, crontab_manifest(group, versions))


@pytest.mark.behaviour("VW-06")
def test_old_and_new_version_clients_coexist(make_crd, group, namespace):
    crd = make_crd(two_versions(group))
    crd.create_object("v1beta1", namespace, "shared", host="h", port="0")
    errors = []

    def client(v, turn):
        try:
            for i in range(10):

                def write(i=i):
                    current = crd.get_object(v, namespace, "shared")
                    current["port"] = f"{turn}-{i}"
                    try:
                        return crd.replace_object(v, namespace, current)
                    except Exception as exc:
                        if getattr(exc, "status", None) == 409:
                            return None
                        raise

                wait_for(write, 30, f"a {v} write without conflict", retry=(ApiException,))
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=client, args=(v, v)) for v in ("v1beta1", "v1")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert errors == []
    beta, v1 = (
        crd.get_object("v1beta1", namespace, "shared"),
        crd.get_object("v1", namespace, "shared"),
    )
    assert beta["metadata"] == v1["metadata"]
    assert beta["port"] == v1["port"]
