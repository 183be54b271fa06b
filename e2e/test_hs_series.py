"""The documentation's "hypothetical series of events", step by step, with a transcript.

Runs once with `None` conversion and once with a conversion webhook (an identity converter,
kind Passthrough), and proves every storage claim from etcd.
"""

import pytest

from crdharness.scenarios.transcript import Transcript
from crdharness.scenarios.versioned import crontab_manifest, version, webhook_conversion
from e2e.series import STEPS, snapshot, without_api_version


@pytest.mark.behaviour(
    "HS-1",
    "HS-2",
    "HS-3",
    "HS-4",
    "HS-5",
    "HS-6",
    "HS-7",
    "SV-01",
    "SV-03",
    "SV-04",
    "SV-05",
    "SV-07",
    "SV-08",
    "VW-01",
    "VW-02",
    "VW-03",
    "VW-04",
    "MV-09",
    "MV-10",
)
@pytest.mark.parametrize("strategy", ["None", "Webhook"])
def test_hypothetical_series_of_events(cluster, make_crd, group, namespace, strategy, request):
    webhook = request.getfixturevalue("conversion_webhook") if strategy == "Webhook" else None
    kind, plural = ("Passthrough", "passthroughs") if webhook else ("CronTab", "crontabs")
    conversion = webhook_conversion(webhook) if webhook else {"strategy": "None"}
    with Transcript(
        f"hypothetical-series-{strategy.lower()}",
        f"Hypothetical series of events ({strategy} conversion)",
    ) as transcript:
        transcript.step("Setup", "a CRD with only v1beta1, served and stored")
        crd = make_crd(
            crontab_manifest(
                group, [version("v1beta1", storage=True)], conversion, plural=plural, kind=kind
            )
        )
        transcript.action(f"created CRD {crd.name} (conversion {strategy})")

        transcript.step("Step 1", STEPS[1])
        crd.create_object("v1beta1", namespace, "first", host="a", port="1")
        transcript.action("POST first via v1beta1 (host a, port 1)")
        snapshot(transcript, crd, namespace, ["first"], webhook)
        assert crd.stored_version_of("first", namespace) == "v1beta1"
        assert crd.stored_versions() == ["v1beta1"]
        first_revision = crd.stored("first", namespace).mod_revision

        transcript.step("Step 2", STEPS[2])
        crd.add_version(version("v1"), storage=True)
        transcript.action("added v1 (same schema) as the storage version; v1beta1 still served")
        snapshot(transcript, crd, namespace, ["first"], webhook)
        assert crd.stored_versions() == ["v1beta1", "v1"]
        assert crd.stored("first", namespace).mod_revision == first_revision
        assert crd.stored_version_of("first", namespace) == "v1beta1"

        transcript.step("Step 3", STEPS[3])
        at_beta = crd.get_object("v1beta1", namespace, "first")
        at_v1 = crd.get_object("v1", namespace, "first")
        transcript.action("GET first via v1beta1, then via v1")
        transcript.observe("apiVersions read", [at_beta["apiVersion"], at_v1["apiVersion"]])
        snapshot(transcript, crd, namespace, ["first"], webhook)
        assert at_beta["apiVersion"] == f"{group}/v1beta1"
        assert at_v1["apiVersion"] == f"{group}/v1"
        assert without_api_version(at_beta) == without_api_version(at_v1)
        assert crd.stored("first", namespace).mod_revision == first_revision
        if webhook:
            calls = webhook.reviews_for("first", f"{group}/v1")
            assert calls, "the v1 read of first made no v1beta1->v1 review"

        transcript.step("Step 4", STEPS[4])
        crd.create_object("v1beta1", namespace, "second", host="b", port="2")
        transcript.action("POST second via v1beta1")
        snapshot(transcript, crd, namespace, ["first", "second"], webhook)
        assert crd.stored_version_of("second", namespace) == "v1"
        assert crd.stored_version_of("first", namespace) == "v1beta1"

        transcript.step("Step 5", STEPS[5])
        updated = crd.patch_object("v1", namespace, "first", {"port": "11"})
        transcript.action("PATCH first via v1 (port 11)")
        snapshot(transcript, crd, namespace, ["first", "second"], webhook)
        assert crd.stored_version_of("first", namespace) == "v1"
        assert crd.stored("first", namespace).mod_revision > first_revision
        assert int(updated["metadata"]["resourceVersion"]) > int(
            at_v1["metadata"]["resourceVersion"]
        )
        # storedVersions is never trimmed by itself, even with no v1beta1 object left.
        assert crd.stored_versions() == ["v1beta1", "v1"]
