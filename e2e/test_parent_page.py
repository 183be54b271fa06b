"""Q. The parent page ("Extend the Kubernetes API with CustomResourceDefinitions"), where it
touches versions: REST paths, names, pruning, defaulting, validation, status and scale,
finalizers, printer columns, and CRD deletion (PP-*). Fixture FX-11, in the test's group."""

import copy
import json

import pytest

from crdharness.polling import wait_for
from crdharness.scenarios.versioned import crontab_manifest, expect_invalid, version

CRON_PATTERN = r"^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$"
SPEC_SCHEMA = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "cronSpec": {"type": "string", "pattern": CRON_PATTERN, "default": "5 0 * * *"},
                "image": {"type": "string"},
                "replicas": {"type": "integer", "minimum": 1, "maximum": 10, "default": 1},
            },
        },
        "status": {
            "type": "object",
            "properties": {"replicas": {"type": "integer"}, "labelSelector": {"type": "string"}},
        },
    },
}
COLUMNS = [
    {
        "name": "Spec",
        "type": "string",
        "jsonPath": ".spec.cronSpec",
        "description": "The cron spec defining the interval a CronJob is run",
    },
    {
        "name": "Replicas",
        "type": "integer",
        "jsonPath": ".spec.replicas",
        "description": "The number of jobs launched by the CronJob",
    },
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]


def stable_crd(group, schema=None, categories=None):
    entry = version(
        "v1",
        storage=True,
        schema=schema or SPEC_SCHEMA,
        subresources={
            "status": {},
            "scale": {
                "specReplicasPath": ".spec.replicas",
                "statusReplicasPath": ".status.replicas",
                "labelSelectorPath": ".status.labelSelector",
            },
        },
    )
    entry["additionalPrinterColumns"] = COLUMNS
    manifest = crontab_manifest(group, [entry])
    if categories:
        manifest["spec"]["names"]["categories"] = categories
    return manifest


@pytest.fixture
def stable(make_crd, group):
    return make_crd(stable_crd(group))


def my_crontab(crd, **spec):
    return crd.body(
        "v1",
        "my-new-cron-object",
        spec={"cronSpec": "* * * * */5", "image": "my-awesome-cron-image", **spec},
    )


@pytest.mark.behaviour("PP-01", "PP-04", "PP-05")
def test_crd_creates_a_rest_path_and_is_cluster_scoped(cluster, stable, group, namespace):
    listing = cluster.http.get(stable.path("v1", namespace))
    assert listing.status_code == 200 and listing.json()["items"] == []
    crd = cluster.http.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{stable.name}")
    conditions = {c["type"]: c["status"] for c in crd.json()["status"]["conditions"]}
    assert conditions["Established"] == "True" and conditions["NamesAccepted"] == "True"
    resources = cluster.http.get("/apis/apiextensions.k8s.io/v1").json()["resources"]
    crds = next(r for r in resources if r["name"] == "customresourcedefinitions")
    assert crds["namespaced"] is False


@pytest.mark.behaviour("PP-06", "PP-33", "PP-23")
def test_validation_then_defaulting_of_a_valid_object(cluster, stable, namespace):
    invalid = my_crontab(stable, cronSpec="* * * *", replicas=15)
    refused = cluster.http.post(stable.path("v1", namespace), json=invalid)
    assert refused.status_code == 422
    assert f"spec.cronSpec in body should match '{CRON_PATTERN}'" in refused.json()["message"]
    assert "spec.replicas in body should be less than or equal to 10" in refused.json()["message"]
    made = cluster.http.post(stable.path("v1", namespace), json=my_crontab(stable, replicas=5))
    assert made.status_code == 201
    only_image = stable.body("v1", "defaulted", spec={"image": "i"})
    defaulted = cluster.http.post(stable.path("v1", namespace), json=only_image).json()
    assert defaulted["spec"] == {"cronSpec": "5 0 * * *", "image": "i", "replicas": 1}
    table = cluster.kubectl("get", f"crontab.{stable.group}", "-n", namespace).stdout
    assert table.split()[:4] == ["NAME", "SPEC", "REPLICAS", "AGE"]


@pytest.mark.behaviour("PP-13")
def test_pruning_removes_unknown_fields_with_validate_false(cluster, stable, namespace, tmp_path):
    obj = my_crontab(stable)
    obj["spec"]["someRandomField"] = 42
    obj["metadata"]["namespace"] = namespace
    path = tmp_path / "my-crontab.json"
    path.write_text(json.dumps(obj))
    created = cluster.kubectl("create", "--validate=false", "-f", str(path), "-o", "json").stdout
    assert "someRandomField" not in json.loads(created)["spec"]
    assert "someRandomField" not in stable.stored("my-new-cron-object", namespace).json["spec"]
    strict = cluster.kubectl("create", "-f", str(path), check=False)
    assert strict.returncode != 0 and 'unknown field "spec.someRandomField"' in strict.stderr


@pytest.mark.behaviour("PP-15", "PP-16", "PP-17")
def test_preserve_unknown_fields_subtrees(cluster, make_crd, group, namespace):
    schema = {
        "type": "object",
        "properties": {
            "json": {
                "x-kubernetes-preserve-unknown-fields": True,
                "type": "object",
                "properties": {
                    "spec": {
                        "type": "object",
                        "properties": {"foo": {"type": "string"}, "bar": {"type": "string"}},
                    }
                },
            }
        },
    }
    crd = make_crd(crontab_manifest(group, [version("v1", storage=True, schema=schema)]))
    sent = {"spec": {"foo": "abc", "bar": "def", "something": "x"}, "status": {"something": "x"}}
    crd.create_object("v1", namespace, "kept", json=sent)
    assert crd.stored("kept", namespace).json["json"] == {
        "spec": {"foo": "abc", "bar": "def"},
        "status": {"something": "x"},
    }
    refused = cluster.http.post(crd.path("v1", namespace), json=crd.body("v1", "s", json="str"))
    assert refused.status_code == 422


@pytest.mark.behaviour("PP-18")
def test_int_or_string(cluster, make_crd, group, namespace):
    schema = {"type": "object", "properties": {"foo": {"x-kubernetes-int-or-string": True}}}
    crd = make_crd(crontab_manifest(group, [version("v1", storage=True, schema=schema)]))
    statuses = [
        cluster.http.post(
            crd.path("v1", namespace), json=crd.body("v1", f"o{i}", foo=value)
        ).status_code
        for i, value in enumerate((1, "1", True))
    ]
    assert statuses == [201, 201, 422]


@pytest.mark.behaviour("PP-10")
def test_structural_schema_is_required(cluster, group):
    schema = copy.deepcopy(SPEC_SCHEMA)
    del schema["properties"]["spec"]["type"]
    message = expect_invalid(
        cluster, crontab_manifest(group, [version("v1", storage=True, schema=schema)])
    )
    assert "type: Required value" in message


@pytest.mark.behaviour("PP-24")
def test_cel_rules(cluster, make_crd, group, namespace):
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "required": ["minReplicas", "replicas", "maxReplicas"],
                "x-kubernetes-validations": [
                    {
                        "rule": "self.minReplicas <= self.replicas",
                        "message": "replicas should be greater than or equal to minReplicas.",
                    },
                    {
                        "rule": "self.replicas <= self.maxReplicas",
                        "message": "replicas should be smaller than or equal to maxReplicas.",
                    },
                ],
                "properties": {
                    k: {"type": "integer"} for k in ("minReplicas", "replicas", "maxReplicas")
                },
            }
        },
    }
    crd = make_crd(crontab_manifest(group, [version("v1", storage=True, schema=schema)]))
    bad = crd.body(
        "v1", "my-new-cron-object", spec={"minReplicas": 0, "replicas": 20, "maxReplicas": 10}
    )
    refused = cluster.http.post(crd.path("v1", namespace), json=bad)
    assert refused.status_code == 422
    assert "replicas should be smaller than or equal to maxReplicas." in refused.json()["message"]


@pytest.mark.behaviour("PP-35")
def test_nullable_and_defaulting(make_crd, group, namespace):
    schema = {
        "type": "object",
        "properties": {
            "foo": {"type": "string", "nullable": False, "default": "default"},
            "bar": {"type": "string", "nullable": True},
            "baz": {"type": "string"},
        },
    }
    crd = make_crd(crontab_manifest(group, [version("v1", storage=True, schema=schema)]))
    made = crd.create_object("v1", namespace, "nulls", foo=None, bar=None, baz=None)
    assert {k: made.get(k, "absent") for k in ("foo", "bar", "baz")} == {
        "foo": "default",
        "bar": None,
        "baz": "absent",
    }


@pytest.mark.behaviour("PP-37")
def test_printer_columns_in_table_output(cluster, stable, namespace):
    cluster.http.post(stable.path("v1", namespace), json=my_crontab(stable, replicas=3))
    table = cluster.http.get(
        stable.path("v1", namespace, "my-new-cron-object"),
        headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"},
    ).json()
    columns = {c["name"]: c for c in table["columnDefinitions"]}
    assert list(columns)[:4] == ["Name", "Spec", "Replicas", "Age"]
    assert columns["Spec"]["description"] == COLUMNS[0]["description"]
    assert columns["Replicas"]["type"] == "integer" and columns["Age"]["type"] == "date"
    assert table["rows"][0]["cells"][1:3] == ["* * * * */5", 3]


@pytest.mark.behaviour("PP-40")
def test_status_subresource(cluster, stable, namespace):
    created = cluster.http.post(
        stable.path("v1", namespace), json=my_crontab(stable, replicas=3)
    ).json()
    item = stable.path("v1", namespace, "my-new-cron-object")
    ignored = cluster.http.put(item, json={**created, "status": {"replicas": 9}}).json()
    assert "status" not in ignored
    with_status = cluster.http.put(
        item + "/status",
        json={**ignored, "spec": {**ignored["spec"], "replicas": 7}, "status": {"replicas": 2}},
    ).json()
    assert with_status["status"] == {"replicas": 2} and with_status["spec"]["replicas"] == 3
    assert with_status["metadata"]["generation"] == ignored["metadata"]["generation"]
    bumped = cluster.http.patch(
        item,
        data='{"spec": {"replicas": 4}}',
        headers={"Content-Type": "application/merge-patch+json"},
    ).json()
    assert bumped["metadata"]["generation"] == ignored["metadata"]["generation"] + 1


@pytest.mark.behaviour("PP-41")
def test_scale_subresource(cluster, stable, namespace):
    cluster.http.post(stable.path("v1", namespace), json=my_crontab(stable, replicas=3))
    scale = cluster.http.get(stable.path("v1", namespace, "my-new-cron-object") + "/scale").json()
    assert scale["kind"] == "Scale" and scale["apiVersion"] == "autoscaling/v1"
    assert scale["spec"]["replicas"] == 3 and scale["status"]["replicas"] == 0
    out = cluster.kubectl(
        "scale", "--replicas=5", f"crontabs.{stable.group}/my-new-cron-object", "-n", namespace
    ).stdout
    assert "scaled" in out
    replicas = cluster.kubectl(
        "get",
        f"crontabs.{stable.group}",
        "my-new-cron-object",
        "-n",
        namespace,
        "-o",
        "jsonpath={.spec.replicas}",
    ).stdout
    assert replicas == "5"


@pytest.mark.behaviour("PP-43")
def test_categories_put_the_resource_in_get_all(cluster, make_crd, group, namespace, tmp_path):
    crd = make_crd(stable_crd(group, categories=["all"]))
    cluster.http.post(crd.path("v1", namespace), json=my_crontab(crd))

    attempts = iter(range(1000))

    def listed():
        # `get all` reads discovery for every group, and kubectl caches discovery on disk.
        # CRDs of tests running in parallel come and go: use fresh discovery each attempt.
        cache = tmp_path / f"kubectl-cache-{next(attempts)}"
        result = cluster.kubectl("get", "all", "-n", namespace, f"--cache-dir={cache}", check=False)
        return result.returncode == 0 and result.stdout

    out = wait_for(listed, 30, "kubectl get all to succeed")
    assert f"crontab.{group}/my-new-cron-object" in out


@pytest.mark.behaviour("PP-21")
def test_finalizers_hold_deletion(cluster, stable, namespace):
    obj = my_crontab(stable)
    obj["metadata"]["finalizers"] = ["stable.example.com/finalizer"]
    cluster.http.post(stable.path("v1", namespace), json=obj)
    item = stable.path("v1", namespace, "my-new-cron-object")
    first = cluster.http.delete(item)
    assert first.status_code in (200, 202)
    held = cluster.http.get(item).json()
    assert held["metadata"]["deletionTimestamp"]
    merge = {"Content-Type": "application/merge-patch+json"}
    more = cluster.http.patch(
        item,
        headers=merge,
        data=json.dumps(
            {"metadata": {"finalizers": ["stable.example.com/finalizer", "another/one"]}}
        ),
    )
    assert more.status_code == 422 and "no new finalizers can be added" in more.text
    released = cluster.http.patch(item, headers=merge, data='{"metadata": {"finalizers": null}}')
    assert released.status_code == 200
    wait_for(lambda: cluster.http.get(item).status_code == 404, 30, "the object to be gone")


@pytest.mark.behaviour("PP-08", "PP-09")
def test_deleting_the_crd_deletes_every_object(cluster, make_crd, group, namespace):
    manifest = stable_crd(group)
    crd = make_crd(manifest)
    for name in ("a", "b"):
        cluster.http.post(crd.path("v1", namespace), json=crd.body("v1", name, spec={"image": "i"}))
    assert len(crd.all_stored()) == 2
    crd.delete()
    assert crd.all_stored() == []
    gone = cluster.kubectl("get", f"crontabs.{group}", "-n", namespace, check=False)
    assert gone.returncode != 0 and "doesn't have a resource type" in gone.stderr
    again = make_crd(copy.deepcopy(manifest))
    assert again.list_objects("v1", namespace) == []
