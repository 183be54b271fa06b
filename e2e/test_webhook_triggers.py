"""H. When the API server calls the conversion webhook (WT-*), and I. what it sends (RQ-*).

Exact "was (not) called" assertions run against ``exact_cluster`` (kube-apiserver with
--watch-cache=false): per-version watch caches would add background conversions.
"""

import json
import re
import threading

import pytest

from e2e.reviews import reviews_of

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


@pytest.fixture
def exact(exact_cluster, exact_namespace, webhook_crd, conversion_webhook):
    """The documented webhook CRD on the cluster without watch cache."""
    crd = webhook_crd(conversion_webhook, on=exact_cluster)
    return crd, exact_namespace, conversion_webhook


@pytest.mark.behaviour("WT-02", "RQ-01", "RQ-02", "RQ-03", "RQ-05", "RQ-06")
def test_reading_at_another_version_sends_the_stored_object(exact):
    crd, namespace, webhook = exact
    labels = {"app": "cron", "tier": "batch"}
    created = crd.create_object(
        "v1beta1",
        namespace,
        "local-crontab",
        hostPort="localhost:1234",
        metadata={"labels": labels},
    )
    mark = len(webhook.records())
    read = crd.get_object("v1", namespace, "local-crontab")
    assert (read["host"], read["port"]) == ("localhost", "1234")
    assert read["metadata"]["labels"] == labels
    assert read["metadata"]["uid"] == created["metadata"]["uid"]
    (review,) = reviews_of(webhook, crd.group, mark)
    assert (review["method"], review["contentType"]) == ("POST", "application/json")
    assert review["reviewVersion"] == "apiextensions.k8s.io/v1"
    assert review["desiredAPIVersion"] == f"{crd.group}/v1"
    (sent,) = review["objects"]
    assert sent["apiVersion"] == f"{crd.group}/v1beta1"
    assert (sent["name"], sent["namespace"]) == ("local-crontab", namespace)
    assert sent["uid"] == created["metadata"]["uid"]
    # Read from etcd, the object is converted while it is decoded: before the API server sets
    # resourceVersion (which etcd keeps as the key's revision, not in the bytes).
    assert sent.get("resourceVersion") in (None, created["metadata"]["resourceVersion"])


@pytest.mark.behaviour("WT-03")
def test_watch_at_another_version_converts_each_event(exact):
    crd, namespace, webhook = exact
    cluster = crd.cluster
    events = []

    def watch():
        with cluster.http.get(
            crd.path("v1", namespace), stream=True, params={"watch": "1", "timeoutSeconds": "20"}
        ) as response:
            for line in response.iter_lines():
                events.append(json.loads(line))
                if events[-1]["object"]["metadata"]["name"] == "watched":
                    return

    watcher = threading.Thread(target=watch)
    watcher.start()
    # The watch is open once an object created now is delivered; create it through v1beta1.
    mark = len(webhook.records())
    crd.create_object("v1beta1", namespace, "watched", hostPort="h:7")
    watcher.join(30)
    (event,) = [e for e in events if e["object"]["metadata"]["name"] == "watched"]
    assert event["type"] == "ADDED"
    assert event["object"]["apiVersion"] == f"{crd.group}/v1"
    assert (event["object"]["host"], event["object"]["port"]) == ("h", "7")
    assert any(
        r["desiredAPIVersion"] == f"{crd.group}/v1"
        for r in reviews_of(webhook, crd.group, mark)
        if r["objects"][0]["name"] == "watched"
    )


@pytest.mark.behaviour("WT-04")
def test_put_at_another_version_is_converted_to_the_storage_version(exact):
    crd, namespace, webhook = exact
    crd.create_object("v1beta1", namespace, "local-crontab", hostPort="localhost:1234")
    current = crd.get_object("v1", namespace, "local-crontab")
    current["port"] = "4321"
    mark = len(webhook.records())
    written = crd.replace_object("v1", namespace, current)
    assert written["apiVersion"] == f"{crd.group}/v1" and written["port"] == "4321"
    to_storage = [
        r
        for r in reviews_of(webhook, crd.group, mark)
        if r["desiredAPIVersion"] == f"{crd.group}/v1beta1"
    ]
    assert to_storage and to_storage[0]["objects"][0]["apiVersion"] == f"{crd.group}/v1"
    stored = crd.stored("local-crontab", namespace)
    assert stored.api_version == f"{crd.group}/v1beta1"
    assert stored.json["hostPort"] == "localhost:4321"


@pytest.mark.behaviour("WT-05", "RS-09")
def test_create_at_another_version_is_converted_to_the_storage_version(exact):
    crd, namespace, webhook = exact
    mark = len(webhook.records())
    crd.create_object("v1", namespace, "remote-crontab", host="example.com", port="2345")
    assert any(
        r["desiredAPIVersion"] == f"{crd.group}/v1beta1"
        for r in reviews_of(webhook, crd.group, mark)
    )
    assert crd.stored("remote-crontab", namespace).json["hostPort"] == "example.com:2345"
    read = crd.get_object("v1", namespace, "remote-crontab")
    assert (read["host"], read["port"]) == ("example.com", "2345")


@pytest.mark.behaviour("WT-06")
def test_no_conversion_needed_means_no_call(exact):
    crd, namespace, webhook = exact
    mark = len(webhook.records())
    crd.create_object("v1beta1", namespace, "same", hostPort="h:1")
    crd.get_object("v1beta1", namespace, "same")
    crd.list_objects("v1beta1", namespace)
    assert reviews_of(webhook, crd.group, mark) == []


@pytest.mark.behaviour("WT-07")
def test_conversion_follows_the_persisted_version_not_the_storage_version(exact):
    crd, namespace, webhook = exact
    crd.create_object("v1beta1", namespace, "first", hostPort="a:1")
    crd.set_storage("v1")
    mark = len(webhook.records())
    crd.get_object("v1", namespace, "first")
    calls = reviews_of(webhook, crd.group, mark)
    assert [(r["objects"][0]["apiVersion"], r["desiredAPIVersion"]) for r in calls] == [
        (f"{crd.group}/v1beta1", f"{crd.group}/v1")
    ]
    mark = len(webhook.records())
    crd.get_object("v1beta1", namespace, "first")
    assert reviews_of(webhook, crd.group, mark) == []


@pytest.mark.behaviour("WT-08", "WT-09", "RQ-04")
def test_list_converts_every_object_and_never_sends_one_already_converted(exact):
    crd, namespace, webhook = exact
    names = [f"item-{i}" for i in range(25)]
    for i, name in enumerate(names):
        crd.create_object("v1beta1", namespace, name, hostPort=f"h{i}:{i}")
    mark = len(webhook.records())
    listed = crd.list_objects("v1", namespace)
    assert sorted(o["metadata"]["name"] for o in listed) == sorted(names)
    assert all(o["apiVersion"] == f"{crd.group}/v1" and "host" in o for o in listed)
    calls = reviews_of(webhook, crd.group, mark)
    assert calls and all(len(r["objects"]) >= 1 for r in calls)
    assert {o["name"] for r in calls for o in r["objects"]} == set(names)
    for review in calls:
        assert all(o["apiVersion"] != review["desiredAPIVersion"] for o in review["objects"])
    uids = [r["uid"] for r in calls]
    assert len(uids) >= 20 and len(set(uids)) == len(uids)
    assert all(UUID.match(uid) for uid in uids)


@pytest.mark.behaviour("WT-10")
def test_status_subresource_converts_too(
    exact_cluster, exact_namespace, webhook_crd, conversion_webhook
):
    crd = webhook_crd(conversion_webhook, on=exact_cluster, status=True)
    crd.create_object("v1beta1", exact_namespace, "with-status", hostPort="h:1")
    path = crd.path("v1", exact_namespace, "with-status") + "/status"
    mark = len(conversion_webhook.records())
    got = exact_cluster.http.get(path)
    assert got.status_code == 200 and got.json()["apiVersion"] == f"{crd.group}/v1"
    put = exact_cluster.http.put(path, json=got.json())
    assert put.status_code == 200 and put.json()["apiVersion"] == f"{crd.group}/v1"
    assert reviews_of(conversion_webhook, crd.group, mark)


@pytest.mark.behaviour("RQ-08", "RV-02")
@pytest.mark.parametrize(
    ("preference", "sent"),
    [
        (("v1", "v1beta1"), "apiextensions.k8s.io/v1"),
        (("v1beta1", "v1"), "apiextensions.k8s.io/v1beta1"),
    ],
)
def test_first_supported_review_version_is_sent(
    exact_cluster, exact_namespace, webhook_crd, conversion_webhook, preference, sent
):
    crd = webhook_crd(conversion_webhook, on=exact_cluster, review_versions=preference)
    crd.create_object("v1beta1", exact_namespace, "one", hostPort="h:1")
    mark = len(conversion_webhook.records())
    assert crd.get_object("v1", exact_namespace, "one")["host"] == "h"
    (review,) = reviews_of(conversion_webhook, crd.group, mark)
    assert review["reviewVersion"] == sent
    assert review["desiredAPIVersion"] == f"{crd.group}/v1" and review["objects"]


@pytest.mark.behaviour("WT-01", "VW-04", "CC-09")
def test_crd_keeps_the_webhook_configuration(exact_cluster, webhook_crd, conversion_webhook):
    crd = webhook_crd(conversion_webhook, on=exact_cluster)
    conversion = crd.read()["spec"]["conversion"]
    assert conversion["strategy"] == "Webhook"
    assert conversion["webhook"]["clientConfig"]["url"].startswith("https://127.0.0.1:")
