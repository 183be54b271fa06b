"""The documented webhook example, end to end through the API server.

The CRD stores v1beta1 (`hostPort`); reads at v1 go through the reference webhook, reached
by URL on 127.0.0.1 and trusted through `caBundle`.
"""

import uuid

import pytest
from kubernetes.client import ApiException

from crdharness import crds


@pytest.fixture
def webhook_crd(cluster, manifests, conversion_webhook):
    group = f"wh-{uuid.uuid4().hex[:8]}.example.com"
    manifest = crds.point_webhook(
        crds.with_group(manifests("crontab-webhook-conversion.yaml"), group),
        conversion_webhook.client_config(),
    )
    crds.create_and_wait(cluster.api_client, manifest)
    yield group
    crds.delete_and_wait(cluster.api_client, manifest["metadata"]["name"])


@pytest.mark.behaviour("WT-01", "RS-09", "RQ-01", "RQ-03", "RQ-05")
def test_read_at_v1_is_converted_by_the_webhook(
    cluster, webhook_crd, namespace, conversion_webhook
):
    group = webhook_crd
    cluster.custom_objects.create_namespaced_custom_object(
        group,
        "v1beta1",
        namespace,
        "crontabs",
        {
            "apiVersion": f"{group}/v1beta1",
            "kind": "CronTab",
            "metadata": {"name": "local-crontab"},
            "hostPort": "localhost:1234",
        },
    )
    read = cluster.custom_objects.get_namespaced_custom_object(
        group, "v1", namespace, "crontabs", "local-crontab"
    )
    assert read["apiVersion"] == f"{group}/v1"
    assert (read["host"], read["port"]) == ("localhost", "1234")
    assert "hostPort" not in read

    stored = cluster.stored(group, "crontabs", "local-crontab", namespace)
    assert stored.api_version == f"{group}/v1beta1"
    assert stored.json["hostPort"] == "localhost:1234"

    calls = conversion_webhook.reviews_for("local-crontab", f"{group}/v1")
    assert calls, "the webhook recorded no review converting local-crontab to v1"
    assert all(c["reviewVersion"] == "apiextensions.k8s.io/v1" for c in calls)
    assert all(c["result"] == "Success" for c in calls)


@pytest.mark.behaviour("FL-01", "FL-02")
def test_unparseable_hostport_fails_the_read_with_the_webhook_message(
    cluster, webhook_crd, namespace
):
    group = webhook_crd
    cluster.custom_objects.create_namespaced_custom_object(
        group,
        "v1beta1",
        namespace,
        "crontabs",
        {
            "apiVersion": f"{group}/v1beta1",
            "kind": "CronTab",
            "metadata": {"name": "bad-crontab"},
            "hostPort": "nocolon",
        },
    )
    with pytest.raises(ApiException) as failure:
        cluster.custom_objects.get_namespaced_custom_object(
            group, "v1", namespace, "crontabs", "bad-crontab"
        )
    assert failure.value.status == 500
    assert (
        f"conversion webhook for {group}/v1beta1, Kind=CronTab failed: "
        "hostPort could not be parsed into a separate host and port"
    ) in failure.value.body
    assert cluster.stored(group, "crontabs", "bad-crontab", namespace) is not None
