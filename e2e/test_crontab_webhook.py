"""The documented webhook example, end to end through the API server.

The CRD is manifests/crontab-webhook-conversion.yaml (moved to the test's group): v1beta1
stores `hostPort`, reads at v1 go through the reference webhook, which the CRD reaches as the
backend provides (a URL on 127.0.0.1 locally, its Service on kind) with its CA as caBundle.
"""

import pytest
from kubernetes.client import ApiException

from crdharness.scenarios import crds


@pytest.fixture
def documented(make_crd, group, manifests, conversion_webhook):
    return make_crd(
        crds.point_webhook(
            crds.with_group(manifests("crontab-webhook-conversion.yaml"), group),
            conversion_webhook.client_config(),
        )
    )


@pytest.mark.behaviour("WT-01", "RS-09", "RQ-01", "RQ-03", "RQ-05")
def test_read_at_v1_is_converted_by_the_webhook(documented, namespace, conversion_webhook):
    group = documented.group
    documented.create_object("v1beta1", namespace, "local-crontab", hostPort="localhost:1234")
    read = documented.get_object("v1", namespace, "local-crontab")
    assert read["apiVersion"] == f"{group}/v1"
    assert (read["host"], read["port"]) == ("localhost", "1234")
    assert "hostPort" not in read

    stored = documented.stored("local-crontab", namespace)
    assert stored.api_version == f"{group}/v1beta1"
    assert stored.json["hostPort"] == "localhost:1234"

    calls = conversion_webhook.reviews_for("local-crontab", f"{group}/v1")
    assert calls, "the webhook recorded no review converting local-crontab to v1"
    assert all(c["reviewVersion"] == "apiextensions.k8s.io/v1" for c in calls)
    assert all(c["result"] == "Success" for c in calls)


@pytest.mark.behaviour("FL-01", "FL-02")
def test_unparseable_hostport_fails_the_read_with_the_webhook_message(documented, namespace):
    documented.create_object("v1beta1", namespace, "bad-crontab", hostPort="nocolon")
    with pytest.raises(ApiException) as failure:
        documented.get_object("v1", namespace, "bad-crontab")
    assert failure.value.status == 500
    assert (
        f"conversion webhook for {documented.group}/v1beta1, Kind=CronTab failed: "
        "hostPort could not be parsed into a separate host and port"
    ) in failure.value.body
    assert documented.stored("bad-crontab", namespace) is not None
