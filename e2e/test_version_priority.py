"""C. Version priority and sorting (VP-*)."""

import re

import pytest

from crdharness.scenarios.versioned import OPEN_SCHEMA, crontab_manifest, version

DOCUMENTED_ORDER = [
    "v10",
    "v2",
    "v1",
    "v11beta2",
    "v10beta3",
    "v3beta1",
    "v12alpha1",
    "v11alpha2",
    "foo1",
    "foo10",
]
SCRAMBLED = [
    "foo10",
    "v11alpha2",
    "v1",
    "foo1",
    "v3beta1",
    "v2",
    "v12alpha1",
    "v10beta3",
    "v10",
    "v11beta2",
]
AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


def open_versions(names, storage):
    return [version(n, storage=n == storage, schema=OPEN_SCHEMA) for n in names]


def legacy_order(cluster, group):
    info = cluster.http.get(f"/apis/{group}").json()
    return [v["version"] for v in info["versions"]], info["preferredVersion"]["version"]


def aggregated_order(cluster, group):
    listing = cluster.http.get("/apis", headers={"Accept": AGGREGATED}).json()
    (entry,) = [g for g in listing["items"] if g["metadata"]["name"] == group]
    return [v["version"] for v in entry["versions"]]


@pytest.mark.behaviour("VP-01")
@pytest.mark.parametrize("declared", [["v1beta1", "v1"], ["v1", "v1beta1"]])
def test_priority_does_not_depend_on_declaration_order(cluster, make_crd, group, declared):
    make_crd(crontab_manifest(group, [version(n, storage=n == "v1beta1") for n in declared]))
    assert legacy_order(cluster, group) == (["v1", "v1beta1"], "v1")


@pytest.mark.behaviour("VP-02", "VP-03")
def test_kubectl_defaults_to_the_highest_priority_unless_the_object_says(
    cluster, make_crd, group, namespace, tmp_path
):
    crd = make_crd(crontab_manifest(group, [version("v1beta1", storage=True), version("v1")]))
    crd.create_object("v1beta1", namespace, "one", host="h", port="1")
    got = cluster.kubectl(
        "get", f"crontabs.{group}", "-n", namespace, "-v=6", "-o", "jsonpath={.items[*].apiVersion}"
    )
    assert got.stdout == f"{group}/v1"
    assert f"/apis/{group}/v1/namespaces/{namespace}/crontabs" in got.stderr
    manifest = tmp_path / "obj.yaml"
    manifest.write_text(
        f"apiVersion: {group}/v1beta1\nkind: CronTab\nmetadata:\n  name: two\n"
        f"  namespace: {namespace}\nhost: h\n"
    )
    applied = cluster.kubectl("apply", "-f", str(manifest), "-v=6")
    assert f"/apis/{group}/v1beta1/namespaces/{namespace}/crontabs" in applied.stderr


@pytest.mark.behaviour("VP-04")
def test_documented_sort_order_in_both_discoveries_and_kubectl(cluster, make_crd, group, namespace):
    make_crd(
        crontab_manifest(group, open_versions(SCRAMBLED, "v1"), plural="sorttests", kind="SortTest")
    )
    assert legacy_order(cluster, group) == (DOCUMENTED_ORDER, "v10")
    assert aggregated_order(cluster, group) == DOCUMENTED_ORDER
    got = cluster.kubectl("get", f"sorttests.{group}", "-n", namespace, "-v=6")
    assert re.search(rf"/apis/{re.escape(group)}/v10/namespaces/{namespace}/sorttests", got.stderr)


@pytest.mark.behaviour("VP-05", "VP-06", "VP-07", "VP-08", "VP-09")
@pytest.mark.parametrize(
    ("versions", "expected"),
    [
        (["foo1", "v1alpha1"], ["v1alpha1", "foo1"]),
        (["v2", "v10", "v1"], ["v10", "v2", "v1"]),
        (["v11beta2", "v1", "v12alpha1", "v3beta1"], ["v1", "v11beta2", "v3beta1", "v12alpha1"]),
        (
            ["v2beta1", "v2beta2", "v10beta3", "v11beta2"],
            ["v11beta2", "v10beta3", "v2beta2", "v2beta1"],
        ),
        (["foo10", "foo1", "foo2"], ["foo1", "foo10", "foo2"]),
    ],
    ids=["pattern-first", "numeric", "ga-beta-alpha", "suffix-number", "alphabetical"],
)
def test_sorting_rules(cluster, make_crd, group, versions, expected):
    make_crd(crontab_manifest(group, open_versions(versions, versions[0])))
    assert legacy_order(cluster, group)[0] == expected


@pytest.mark.behaviour("VP-10")
def test_unserved_versions_leave_discovery_and_priority(cluster, make_crd, group):
    crd = make_crd(
        crontab_manifest(group, open_versions(SCRAMBLED, "v1"), plural="sorttests", kind="SortTest")
    )
    crd.set_served("v10", False)
    assert legacy_order(cluster, group) == ([v for v in DOCUMENTED_ORDER if v != "v10"], "v2")
