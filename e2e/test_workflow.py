"""A. The version workflow end to end: coexisting clients during a migration (VW-07), the
removal of a version with a webhook (VW-12, SF-09), and webhook authentication (CC-22)."""

import json
import threading

import pytest
from kubernetes.client import ApiException

from crdharness import certs
from crdharness.polling import wait_for
from crdharness.scenarios.migrate import upgrade_storage
from crdharness.scenarios.versioned import (
    HOSTPORT_SCHEMA,
    OPEN_SCHEMA,
    crontab_manifest,
    version,
    webhook_conversion,
)
from crdharness.webhooks.reference import LocalWebhook
from e2e.reviews import reviews_of


@pytest.mark.behaviour("VW-07")
def test_clients_of_both_versions_work_throughout_a_migration(make_crd, group, namespace):
    crd = make_crd(crontab_manifest(group, [version("v1beta1", storage=True), version("v1")]))
    names = [f"o{i}" for i in range(10)]
    for name in names:
        crd.create_object("v1beta1", namespace, name, host=name, port="0")
    done, errors, counts = threading.Event(), [], {"writes": 0, "retried": 0}

    def traffic():
        turn = 0
        while not done.is_set():
            at = ("v1beta1", "v1")[turn % 2]
            name = names[turn % len(names)]
            try:
                crd.get_object(at, namespace, name)
                crd.list_objects(at, namespace)
                crd.patch_object(at, namespace, name, {"port": str(turn)})
                counts["writes"] += 1
            except ApiException as exc:
                if exc.status == 429:
                    # While a CRD change rebuilds its storage the API server answers 429 with
                    # Retry-After; client-go and kubectl retry it, and so does this client.
                    counts["retried"] += 1
                    done.wait(float((exc.headers or {}).get("Retry-After", 1)))
                    continue
                errors.append(f"{at} {name}: {exc.status} {exc.reason}")
            turn += 1

    client = threading.Thread(target=traffic)
    client.start()
    try:
        # Traffic before, during and after: the first writes may wait out the 429s of a CRD
        # whose storage is still initializing.
        wait_for(lambda: counts["writes"] > 0, 30, "the clients' first write, before migrating")
        upgrade_storage(crd, "v1", after_each_step=crd.assert_storage_invariant)
        migrated = counts["writes"]
        wait_for(lambda: counts["writes"] > migrated, 30, "a client write after the migration")
    finally:
        done.set()
        client.join(60)
    assert errors == []
    for name in names:
        beta, v1 = crd.get_object("v1beta1", namespace, name), crd.get_object("v1", namespace, name)
        assert beta["host"] == v1["host"] == name and beta["port"] == v1["port"]
    assert {s.api_version.split("/")[1] for s in crd.all_stored()} == {"v1"}


@pytest.mark.behaviour("VW-12", "MG-06")
def test_after_removal_the_webhook_never_hears_of_the_old_version(
    exact_cluster, exact_namespace, webhook_crd, conversion_webhook
):
    crd = webhook_crd(conversion_webhook, on=exact_cluster)
    for i in range(3):
        crd.create_object("v1beta1", exact_namespace, f"o{i}", hostPort=f"h{i}:{i}")
    upgrade_storage(crd, "v1", after_each_step=crd.assert_storage_invariant)
    crd.set_served("v1beta1", False)
    crd.update(
        lambda c: c["spec"].update(
            versions=[v for v in c["spec"]["versions"] if v["name"] != "v1beta1"]
        )
    )
    mark = len(conversion_webhook.records())
    crd.create_object("v1", exact_namespace, "new", host="n", port="9")
    crd.patch_object("v1", exact_namespace, "o0", {"port": "10"})
    listed = crd.list_objects("v1", exact_namespace)
    assert sorted(o["metadata"]["name"] for o in listed) == ["new", "o0", "o1", "o2"]
    assert crd.get_object("v1", exact_namespace, "o2")["host"] == "h2"
    watched = exact_cluster.http.get(
        crd.path("v1", exact_namespace), params={"watch": "1", "timeoutSeconds": "1"}
    ).text
    assert len(watched.splitlines()) == 4
    crd.delete_object("v1", exact_namespace, "o1")
    mentions = [
        r
        for r in reviews_of(conversion_webhook, crd.group, mark)
        if "v1beta1" in json.dumps(r["objects"]) or r["desiredAPIVersion"].endswith("/v1beta1")
    ]
    assert mentions == []


@pytest.mark.behaviour("SF-09")
def test_webhook_never_sees_a_version_that_is_neither_served_nor_stored(
    exact_cluster, exact_namespace, make_crd, group, conversion_webhook
):
    crd = make_crd(
        crontab_manifest(
            group,
            [
                version("v1beta1", storage=True, schema=OPEN_SCHEMA),
                version("v1", schema=OPEN_SCHEMA),
                version("v1alpha2", served=False, schema=OPEN_SCHEMA),
            ],
            webhook_conversion(conversion_webhook),
            plural="passthroughs",
            kind="Passthrough",
        ),
        on=exact_cluster,
    )
    mark = len(conversion_webhook.records())
    crd.create_object("v1", exact_namespace, "one", host="h")
    crd.get_object("v1", exact_namespace, "one")
    crd.list_objects("v1", exact_namespace)
    crd.patch_object("v1", exact_namespace, "one", {"host": "g"})
    crd.delete_object("v1", exact_namespace, "one")
    reviews = reviews_of(conversion_webhook, crd.group, mark)
    assert reviews, "the v1 requests made no conversion at all"
    assert not [r for r in reviews if "v1alpha2" in json.dumps(r)]


@pytest.mark.behaviour("CC-22")
def test_webhook_requiring_client_certificates_is_not_reached_without_them(
    exact_cluster, exact_namespace, make_crd, group, tmp_path
):
    ca = certs.CertificateAuthority(tmp_path)
    clients_dir = tmp_path / "clients"
    clients_dir.mkdir()
    client_ca = certs.CertificateAuthority(clients_dir)
    ours = client_ca.issue_client("probe", "probe")
    webhook = LocalWebhook(ca, tmp_path, client_ca=client_ca.cert_path).start(client_cert=ours)
    try:
        crd = make_crd(
            crontab_manifest(
                group,
                [version("v1beta1", storage=True, schema=HOSTPORT_SCHEMA), version("v1")],
                webhook_conversion(webhook.url, ca.bundle_b64),
            ),
            on=exact_cluster,
        )
        crd.create_object("v1beta1", exact_namespace, "obj", hostPort="h:1")
        with pytest.raises(ApiException) as failed:
            crd.get_object("v1", exact_namespace, "obj")
        message = json.loads(failed.value.body)["message"]
        assert failed.value.status == 500
        assert f"conversion webhook for {group}/v1beta1, Kind=CronTab failed" in message
        # With TLS 1.3 the server checks the client certificate after the handshake and hangs
        # up; the API server reports EOF, a broken pipe or a reset, depending on timing. What
        # matters: no review of the API server's reached the webhook.
        probes = [r for r in webhook.records() if "uid" in r]
        assert all(r["objects"] == [] for r in probes), "an API-server review got through"
    finally:
        webhook.stop()
