"""J. Response rules (RS-*), K. metadata mutations (MM-*), L. failures (FL-*).

Each test drives a webhook of its own into one of the documented mistakes (its fault modes)
and checks what the API server does with it. They run on ``exact_cluster`` so that every
error comes from the request itself, not from a watch cache converting in the background.
"""

import json

import pytest
from crdconvert.faults import FAILURE_MESSAGE
from kubernetes.client import ApiException

from crdharness.scenarios.versioned import OPEN_SCHEMA


@pytest.fixture
def faulty(exact_cluster, exact_namespace, webhook_crd, isolated_webhook):
    """(crd, namespace, webhook): one object `obj` persisted at v1beta1; faults off."""
    crd = webhook_crd(isolated_webhook, on=exact_cluster)
    crd.create_object(
        "v1beta1",
        exact_namespace,
        "obj",
        hostPort="localhost:1234",
        metadata={"labels": {"keep": "me"}},
    )
    return crd, exact_namespace, isolated_webhook


def refusal(call) -> tuple[int, str]:
    with pytest.raises(ApiException) as failed:
        call()
    try:
        message = json.loads(failed.value.body)["message"]
    except (ValueError, KeyError, TypeError):
        message = failed.value.body
    return failed.value.status, message


def get_v1(crd, namespace, name="obj"):
    return lambda: crd.get_object("v1", namespace, name)


def conversion_failed(crd) -> str:
    return f"conversion webhook for {crd.group}/v1beta1, Kind=CronTab failed: "


@pytest.mark.behaviour("RS-02")
def test_wrong_uid_fails_v1_reviews(faulty):
    crd, namespace, webhook = faulty
    webhook.set_faults("wrong-uid")
    status, message = refusal(get_v1(crd, namespace))
    assert status == 500
    assert 'expected response.uid="' in message
    assert 'got "00000000-0000-0000-0000-00000000bad0"' in message


@pytest.mark.behaviour("RS-02")
def test_wrong_uid_passes_silently_with_v1beta1_reviews(
    exact_cluster, exact_namespace, webhook_crd, isolated_webhook
):
    crd = webhook_crd(isolated_webhook, on=exact_cluster, review_versions=("v1beta1",))
    crd.create_object("v1beta1", exact_namespace, "obj", hostPort="h:1")
    isolated_webhook.set_faults("wrong-uid")
    assert crd.get_object("v1", exact_namespace, "obj")["host"] == "h"


@pytest.mark.behaviour("RS-03")
def test_success_must_be_spelled_success(faulty):
    crd, namespace, webhook = faulty
    webhook.set_faults("lowercase-success")
    status, message = refusal(get_v1(crd, namespace))
    assert status == 500 and "response.result.status was 'success', not 'Success'" in message


@pytest.mark.behaviour("RS-04")
def test_every_object_must_come_back(faulty):
    crd, namespace, webhook = faulty
    webhook.set_faults("drop-object")
    status, message = refusal(get_v1(crd, namespace))
    assert status == 500
    assert (
        f"conversion webhook for {crd.group}/v1beta1, Kind=CronTab returned 0 objects, expected 1"
        in message
    )


@pytest.mark.behaviour("RS-06")
def test_objects_must_come_back_at_the_desired_version(faulty):
    crd, namespace, webhook = faulty
    webhook.set_faults("stale-apiversion")
    status, message = refusal(get_v1(crd, namespace))
    assert status == 500
    assert (
        f"invalid groupVersion (expected {crd.group}/v1, received {crd.group}/v1beta1)" in message
    )


@pytest.mark.behaviour("RS-07")
def test_kind_must_not_change(faulty):
    crd, namespace, webhook = faulty
    webhook.set_faults("mutate-kind")
    status, message = refusal(get_v1(crd, namespace))
    assert status == 500 and "invalid kind (expected CronTab, received CronTab2)" in message


@pytest.mark.behaviour("RS-08")
def test_answer_in_the_review_version_received(faulty):
    crd, namespace, webhook = faulty
    webhook.set_faults("other-review-version")
    status, message = refusal(get_v1(crd, namespace))
    assert status == 500 and conversion_failed(crd) in message
    # The catalogue's wording first; v1.37 says "converting (v1beta1.ConversionReview) to
    # (v1.ConversionReview): unknown conversion". Both name the wrong review version.
    assert (
        "got apiextensions.k8s.io/v1beta1, Kind=ConversionReview" in message
        or "converting (v1beta1.ConversionReview) to (v1.ConversionReview)" in message
    ), message


@pytest.mark.behaviour("RS-10")
def test_undeclared_fields_from_the_webhook_are_pruned(faulty):
    crd, namespace, webhook = faulty
    webhook.set_faults("extra-field")
    read = crd.get_object("v1", namespace, "obj")
    assert "extra" not in read and read["host"] == "localhost"


@pytest.mark.behaviour("RS-11")
@pytest.mark.parametrize(
    ("fault", "says"),
    [
        # The catalogue expects "the server rejected our request"; v1.37 words a 404 so:
        ("http-404", ("the server rejected our request", "could not find the requested resource")),
        ("http-500", ("",)),
        ("no-response", ("no response provided",)),
    ],
)
def test_non_200_or_empty_answers_fail(faulty, fault, says):
    crd, namespace, webhook = faulty
    webhook.set_faults(fault)
    status, message = refusal(get_v1(crd, namespace))
    assert status == 500 and conversion_failed(crd) in message
    assert any(text in message for text in says), message


@pytest.mark.behaviour("RS-12")
def test_documented_v1beta1_success_example_is_a_failure(
    exact_cluster, exact_namespace, webhook_crd, isolated_webhook
):
    crd = webhook_crd(isolated_webhook, on=exact_cluster, review_versions=("v1beta1",))
    crd.create_object("v1beta1", exact_namespace, "obj", hostPort="h:1")
    isolated_webhook.set_faults("failed-with-objects")
    status, message = refusal(get_v1(crd, exact_namespace))
    assert status == 500 and "response.result.status was 'Failed', not 'Success'" in message


@pytest.mark.behaviour("MM-01", "MM-02")
def test_label_and_annotation_changes_are_kept(faulty):
    crd, namespace, webhook = faulty
    webhook.set_faults("mutate-labels", "mutate-annotations")
    metadata = crd.get_object("v1", namespace, "obj")["metadata"]
    assert metadata["labels"] == {"keep": "me", "converted-by": "crdconvert"}
    assert metadata["annotations"]["crdconvert/converted"] == "true"


@pytest.mark.behaviour("MM-03")
def test_label_changes_made_on_the_way_to_storage_are_persisted(faulty):
    crd, namespace, webhook = faulty
    webhook.set_faults("mutate-labels")
    crd.create_object("v1", namespace, "via-v1", host="h", port="1")
    stored = crd.stored("via-v1", namespace).json
    assert stored["metadata"]["labels"]["converted-by"] == "crdconvert"


@pytest.mark.behaviour("MM-04", "MM-06")
@pytest.mark.parametrize(
    ("fault", "says"),
    [
        ("mutate-name", "must have the same name"),
        ("mutate-namespace", "must have the same namespace"),
    ],
)
def test_name_and_namespace_changes_fail_the_request(faulty, fault, says):
    crd, namespace, webhook = faulty
    webhook.set_faults(fault)
    status, message = refusal(get_v1(crd, namespace))
    assert status == 500 and says in message


@pytest.mark.behaviour("MM-05", "FL-08")
def test_uid_change_fails_a_create_and_nothing_is_written(faulty):
    crd, namespace, webhook = faulty
    webhook.set_faults("mutate-uid")
    status, message = refusal(lambda: crd.create_object("v1", namespace, "new", host="h", port="1"))
    assert status == 500 and "must have the same UID" in message
    assert crd.stored("new", namespace) is None
    assert [o["metadata"]["name"] for o in crd.list_objects("v1beta1", namespace)] == ["obj"]


@pytest.mark.behaviour("MM-07")
def test_other_metadata_changes_are_ignored(faulty):
    crd, namespace, webhook = faulty
    before = crd.get_object("v1beta1", namespace, "obj")["metadata"]
    webhook.set_faults("mutate-other-metadata")
    read = crd.get_object("v1", namespace, "obj")["metadata"]
    listed = crd.list_objects("v1", namespace)[0]["metadata"]
    for metadata in (read, listed):
        assert metadata["generation"] == before["generation"] != 42
        assert metadata["resourceVersion"] == before["resourceVersion"]
        assert metadata["creationTimestamp"] == before["creationTimestamp"]
        assert "finalizers" not in metadata and "garbage" not in metadata
        assert "ownerReferences" not in metadata
    crd.create_object("v1", namespace, "created", host="h", port="1")
    stored = crd.stored("created", namespace).json["metadata"]
    assert "finalizers" not in stored and "garbage" not in stored
    assert "ownerReferences" not in stored


@pytest.mark.behaviour("MM-08")
def test_labels_from_the_webhook_must_be_valid(faulty):
    crd, namespace, webhook = faulty
    webhook.set_faults("invalid-label")
    status, message = refusal(get_v1(crd, namespace))
    assert status == 500 and "metadata.labels" in message


@pytest.mark.behaviour("MM-09")
def test_removing_labels_is_a_permitted_change(faulty):
    crd, namespace, webhook = faulty
    webhook.set_faults("drop-labels")
    assert "labels" not in crd.get_object("v1", namespace, "obj")["metadata"]
    crd.create_object(
        "v1", namespace, "unlabelled", host="h", port="1", metadata={"labels": {"a": "b"}}
    )
    assert "labels" not in crd.stored("unlabelled", namespace).json["metadata"]


@pytest.mark.behaviour("FL-03")
def test_failure_without_message_gets_a_generic_one(faulty):
    crd, namespace, webhook = faulty
    webhook.set_faults("fail-without-message")
    status, message = refusal(get_v1(crd, namespace))
    assert status == 500 and "response.result.status was 'Failed', not 'Success'" in message


@pytest.mark.behaviour("FL-04")
def test_failing_conversion_blocks_every_verb_at_the_new_version(faulty):
    crd, namespace, webhook = faulty
    crd.set_storage("v1")
    webhook.set_faults("fail-with-message")
    http = crd.cluster.http
    item = crd.path("v1", namespace, "obj")
    merge = {"Content-Type": "application/merge-patch+json"}
    calls = [
        ("GET", item, {}),
        ("GET", crd.path("v1", namespace), {}),
        ("PUT", item, {"json": crd.body("v1", "obj", host="x", port="1")}),
        ("PATCH", item, {"data": '{"port": "2"}', "headers": merge}),
        ("DELETE", item, {}),
        ("DELETE", crd.path("v1", namespace), {}),
    ]
    for method, path, kwargs in calls:
        response = http.request(method, path, **kwargs)
        assert response.status_code >= 400, (method, path, response.text)
        assert FAILURE_MESSAGE in response.text, (method, path, response.text)
    assert crd.stored("obj", namespace) is not None
    # At its persisted version nothing needs converting: GET and DELETE still work there.
    assert crd.get_object("v1beta1", namespace, "obj")["hostPort"] == "localhost:1234"
    patch = http.patch(
        crd.path("v1beta1", namespace, "obj"), data='{"hostPort": "a:1"}', headers=merge
    )
    assert patch.status_code >= 400 and FAILURE_MESSAGE in patch.text
    assert http.delete(crd.path("v1beta1", namespace, "obj")).status_code == 200
    assert crd.stored("obj", namespace) is None


@pytest.mark.behaviour("FL-05", "FL-06")
def test_failing_conversion_blocks_non_storage_versions_even_for_storage_objects(faulty):
    crd, namespace, webhook = faulty
    webhook.set_faults("fail-with-message")
    for call in (
        get_v1(crd, namespace),
        lambda: crd.list_objects("v1", namespace),
        lambda: crd.create_object("v1", namespace, "new", host="h", port="1"),
        lambda: crd.patch_object("v1", namespace, "obj", {"port": "9"}),
    ):
        status, message = refusal(call)
        assert status == 500 and FAILURE_MESSAGE in message
    assert crd.get_object("v1beta1", namespace, "obj")["hostPort"] == "localhost:1234"


@pytest.mark.behaviour("FL-07")
def test_unreachable_webhook_is_a_conversion_failure(faulty):
    crd, namespace, webhook = faulty
    webhook.go_away()
    status, message = refusal(get_v1(crd, namespace))
    assert status == 500 and conversion_failed(crd) in message
    assert "connection refused" in message or "dial tcp" in message


@pytest.mark.behaviour("VW-05")
def test_webhook_must_be_up_before_the_crd_points_at_it(
    exact_cluster, exact_namespace, make_crd, group, isolated_webhook
):
    from crdharness.scenarios.versioned import (
        HOSTPORT_SCHEMA,
        crontab_manifest,
        version,
        webhook_conversion,
    )

    crd = make_crd(
        crontab_manifest(
            group,
            [
                version("v1beta1", storage=True, schema=HOSTPORT_SCHEMA),
                version("v1", schema=OPEN_SCHEMA),
            ],
        ),
        on=exact_cluster,
    )
    crd.create_object("v1beta1", exact_namespace, "obj", hostPort="h:1")
    isolated_webhook.go_away()
    crd.update(
        lambda c: c["spec"].update(
            conversion=webhook_conversion(isolated_webhook.url, isolated_webhook.ca.bundle_b64)
        )
    )
    status, message = refusal(get_v1(crd, exact_namespace))
    assert status == 500 and conversion_failed(crd) in message
    assert crd.get_object("v1beta1", exact_namespace, "obj")["hostPort"] == "h:1"
