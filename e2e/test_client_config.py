"""M. webhookClientConfig (CC-*) and N. conversionReviewVersions (RV-*)."""

import json

import pytest
from kubernetes.client import ApiException

from crdharness import certs
from crdharness.scenarios.versioned import (
    HOSTPORT_SCHEMA,
    crontab_manifest,
    expect_invalid,
    version,
    webhook_conversion,
)
from crdharness.webhooks.reference import LocalWebhook
from e2e.reviews import reviews_of

URL = "https://127.0.0.1:9443/crdconvert"


def webhook_crd_manifest(group, conversion):
    return crontab_manifest(
        group,
        [version("v1beta1", storage=True, schema=HOSTPORT_SCHEMA), version("v1")],
        conversion,
    )


def with_client_config(group, client_config, review_versions=("v1", "v1beta1")):
    conversion = {"strategy": "Webhook", "webhook": {"clientConfig": client_config}}
    if review_versions is not None:
        conversion["webhook"]["conversionReviewVersions"] = list(review_versions)
    return webhook_crd_manifest(group, conversion)


@pytest.mark.behaviour("CC-01", "RV-01")
def test_webhook_strategy_needs_a_webhook(cluster, group):
    message = expect_invalid(cluster, webhook_crd_manifest(group, {"strategy": "Webhook"}))
    assert "spec.conversion.webhookClientConfig: Required value: " in message
    assert "required when strategy is set to Webhook" in message
    assert "conversionReviewVersions: Required value" in message


@pytest.mark.behaviour("RV-01")
def test_review_versions_are_required(cluster, group):
    message = expect_invalid(cluster, with_client_config(group, {"url": URL}, None))
    assert "conversionReviewVersions: Required value" in message


@pytest.mark.behaviour("CC-02")
@pytest.mark.parametrize(
    "client_config",
    [
        {"url": URL, "service": {"namespace": "default", "name": "svc"}},
        {},
    ],
    ids=["both", "neither"],
)
def test_exactly_one_of_url_and_service(cluster, group, client_config):
    assert "exactly one of url or service is required" in expect_invalid(
        cluster, with_client_config(group, client_config)
    )


@pytest.mark.behaviour("CC-03", "CC-04", "CC-05", "CC-06", "CC-07")
@pytest.mark.parametrize(
    ("url", "says"),
    [
        (
            "http://127.0.0.1:9443/crdconvert",
            "'https' is the only allowed URL scheme; desired format: https://host[/path]",
        ),
        (
            "https://user:password@127.0.0.1:9443/crdconvert",
            "user information is not permitted in the URL",
        ),
        ("https://127.0.0.1:9443/crdconvert#frag", "fragments are not permitted in the URL"),
        ("https://127.0.0.1:9443/crdconvert?x=1", "query parameters are not permitted in the URL"),
        ("https:///crdconvert", "host must be specified"),
    ],
    ids=["scheme", "userinfo", "fragment", "query", "no-host"],
)
def test_url_rules(cluster, group, url, says):
    assert says in expect_invalid(cluster, with_client_config(group, {"url": url}))


@pytest.mark.behaviour("CC-08")
def test_documented_url_without_ca_bundle_is_accepted(make_crd, group):
    crd = make_crd(
        with_client_config(group, {"url": "https://my-webhook.example.com:9443/my-webhook-path"})
    )
    assert crd.read()["spec"]["conversion"]["webhook"]["clientConfig"]["url"].endswith(
        "/my-webhook-path"
    )


@pytest.mark.behaviour("CC-13")
@pytest.mark.parametrize("missing", ["namespace", "name"])
def test_service_namespace_and_name_are_required(cluster, group, missing):
    service = {"namespace": "default", "name": "svc"}
    del service[missing]
    message = expect_invalid(cluster, with_client_config(group, {"service": service}))
    # v1.37 names the other field of the two (service.name when namespace is missing, and
    # the reverse): the arguments of its validation call are swapped. The CRD is refused
    # either way, which is what the documentation promises.
    assert "spec.conversion.webhookClientConfig.service." in message
    assert "Required value" in message


@pytest.mark.behaviour("CC-14")
def test_service_port_defaults_to_443_and_is_persisted(make_crd, group):
    crd = make_crd(
        with_client_config(
            group,
            {
                "service": {
                    "namespace": "default",
                    "name": "example-conversion-webhook-server",
                    "path": "/crdconvert",
                }
            },
        )
    )
    service = crd.read()["spec"]["conversion"]["webhook"]["clientConfig"]["service"]
    assert service["port"] == 443


@pytest.mark.behaviour("CC-15")
def test_service_path_is_not_defaulted_in_the_stored_crd(make_crd, group):
    crd = make_crd(with_client_config(group, {"service": {"namespace": "default", "name": "svc"}}))
    assert "path" not in crd.read()["spec"]["conversion"]["webhook"]["clientConfig"]["service"]


@pytest.mark.behaviour("CC-18")
def test_documented_placeholder_ca_bundle_is_refused(cluster, group):
    manifest = with_client_config(group, {"url": URL})
    client_config = manifest["spec"]["conversion"]["webhook"]["clientConfig"]
    client_config["caBundle"] = "Ci0tLS0tQk...<base64-encoded PEM bundle>...tLS0K"
    response = cluster.http.post(
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=manifest
    )
    assert response.status_code in (400, 422), response.text
    assert "illegal base64" in response.text or "caBundle" in response.text


@pytest.mark.behaviour("CC-19")
@pytest.mark.parametrize(
    ("service", "says"),
    [
        ({"port": 0}, "port is not valid"),
        ({"port": 70000}, "port is not valid"),
        ({"path": "crdconvert"}, "must start with a '/'"),
        ({"path": "/a//b"}, "segment[1] may not be empty"),
    ],
)
def test_service_port_and_path_validation(cluster, group, service, says):
    client_config = {"service": {"namespace": "default", "name": "svc", **service}}
    assert says in expect_invalid(cluster, with_client_config(group, client_config))


@pytest.mark.behaviour("CC-20")
def test_webhook_settings_need_the_webhook_strategy(cluster, group):
    manifest = webhook_crd_manifest(
        group,
        {
            "strategy": "None",
            "webhook": {"clientConfig": {"url": URL}, "conversionReviewVersions": ["v1"]},
        },
    )
    assert "should not be set when strategy is not set to Webhook" in expect_invalid(
        cluster, manifest
    )


@pytest.mark.behaviour("CC-21")
def test_strategy_is_none_or_webhook(cluster, group):
    assert 'Unsupported value: "Foo"' in expect_invalid(
        cluster, webhook_crd_manifest(group, {"strategy": "Foo"})
    )


@pytest.mark.behaviour("RV-03", "RV-07")
@pytest.mark.parametrize(
    ("preference", "sent"),
    [
        (("v2", "v1beta1", "v1"), "apiextensions.k8s.io/v1beta1"),
        (("v1",), "apiextensions.k8s.io/v1"),
    ],
)
def test_unknown_review_versions_are_skipped(
    exact_cluster, exact_namespace, webhook_crd, conversion_webhook, preference, sent
):
    crd = webhook_crd(conversion_webhook, on=exact_cluster, review_versions=preference)
    crd.create_object("v1beta1", exact_namespace, "one", hostPort="h:1")
    mark = len(conversion_webhook.records())
    assert crd.get_object("v1", exact_namespace, "one")["port"] == "1"
    reviews = reviews_of(conversion_webhook, crd.group, mark)
    assert reviews and all(r["reviewVersion"] == sent for r in reviews)


@pytest.mark.behaviour("RV-04")
@pytest.mark.parametrize("preference", [["v2"], ["v3", "v4"]])
def test_no_known_review_version_is_refused(cluster, group, preference):
    assert "must include at least one of v1, v1beta1" in expect_invalid(
        cluster, with_client_config(group, {"url": URL}, preference)
    )


@pytest.mark.behaviour("RV-06")
@pytest.mark.parametrize(
    ("preference", "says"),
    [
        (["v1", "v1"], "duplicate version"),
        (["V1"], "a DNS-1035 label"),
    ],
)
def test_review_version_list_validation(cluster, group, preference, says):
    assert says in expect_invalid(cluster, with_client_config(group, {"url": URL}, preference))


# -- TLS: trust and host names ---------------------------------------------------------------


@pytest.fixture
def tls_crd(exact_cluster, exact_namespace, make_crd, group, tmp_path):
    """Start a webhook with the given serving names, point a CRD at it with a given CA."""
    started = []

    def make(hosts=certs.LOOPBACK_NAMES, ca_bundle="own"):
        ca = certs.CertificateAuthority(tmp_path)
        serving = ca.issue_server("webhook", *hosts)
        webhook = LocalWebhook(ca, tmp_path, serving=serving)
        started.append(webhook)  # stopped after the test, also when it never got ready
        if "127.0.0.1" in hosts:
            webhook.start()
        else:  # no review from here would accept its certificate: ready once it listens
            webhook.launch().wait_listening()
        conversion = webhook_conversion(webhook.url, ca.bundle_b64)
        if ca_bundle is None:
            del conversion["webhook"]["clientConfig"]["caBundle"]
        crd = make_crd(webhook_crd_manifest(group, conversion), on=exact_cluster)
        crd.create_object("v1beta1", exact_namespace, "obj", hostPort="h:1")
        return crd

    yield make
    for webhook in started:
        webhook.stop()


def read_error(crd, namespace) -> str:
    with pytest.raises(ApiException) as failed:
        crd.get_object("v1", namespace, "obj")
    assert failed.value.status == 500
    return json.loads(failed.value.body)["message"]


@pytest.mark.behaviour("CC-10")
def test_without_ca_bundle_system_roots_do_not_trust_a_test_ca(tls_crd, exact_namespace):
    crd = tls_crd(ca_bundle=None)
    assert "x509: certificate signed by unknown authority" in read_error(crd, exact_namespace)


@pytest.mark.behaviour("CC-11")
def test_ca_bundle_verification_includes_the_host_name(tls_crd, exact_namespace):
    crd = tls_crd(hosts=("elsewhere.example.com",))
    message = read_error(crd, exact_namespace)
    # A DNS-only certificate cannot match an IP host: Go words it as below.
    assert (
        "x509: certificate is valid for elsewhere.example.com, not 127.0.0.1" in message
        or "x509: cannot validate certificate for 127.0.0.1 because it doesn't contain any IP SANs"
        in message
    ), message


@pytest.mark.behaviour("CC-12")
def test_in_cluster_service_dns_names_do_not_resolve_for_the_api_server(
    exact_cluster, exact_namespace, make_crd, group, conversion_webhook
):
    conversion = webhook_conversion(
        "https://example-conversion-webhook-server.default.svc/crdconvert",
        conversion_webhook.ca.bundle_b64,
    )
    crd = make_crd(webhook_crd_manifest(group, conversion), on=exact_cluster)
    crd.create_object("v1beta1", exact_namespace, "obj", hostPort="h:1")
    message = read_error(crd, exact_namespace)
    assert "no such host" in message or "server misbehaving" in message or "lookup" in message
