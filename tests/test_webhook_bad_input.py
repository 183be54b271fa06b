"""Bad input never crashes or hangs the webhook: it gets a clear status and message."""

import io
import json

import pytest
from crdconvert import crontab
from crdconvert.app import ConversionApp
from crdconvert.converters import Registry
from crdconvert.records import RecordSink
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import webhook_examples as ex
from tests.app_client import call


@pytest.fixture
def app():
    return ConversionApp(
        crontab.register(Registry()), max_body=4096, records=RecordSink(io.BytesIO())
    )


def test_wrong_method_is_405_with_allow(app):
    status, headers, body = call(app, method="GET", body=b"")
    assert status == 405 and headers["allow"] == "POST" and b"POST" in body


@pytest.mark.parametrize("content_type", ["text/plain", "application/yaml", None])
def test_wrong_content_type_is_415(app, content_type):
    status, _, body = call(app, body=ex.REQUEST_V1, headers={"content-type": content_type})
    assert status == 415 and b"application/json" in body


def test_content_type_parameters_are_accepted(app):
    status, _, _ = call(
        app, body=ex.REQUEST_V1, headers={"content-type": "application/json; charset=utf-8"}
    )
    assert status == 200


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b"{not json", b"not valid JSON"),
        (b"", b"not valid JSON"),
        (b"[]", b"not a JSON object"),
        (json.dumps({**ex.REQUEST_V1, "kind": "AdmissionReview"}).encode(), b"AdmissionReview"),
        (json.dumps({**ex.REQUEST_V1, "apiVersion": "v1"}).encode(), b"apiVersion"),
        (
            json.dumps({k: v for k, v in ex.REQUEST_V1.items() if k != "request"}).encode(),
            b"no request",
        ),
        (
            json.dumps(
                {**ex.REQUEST_V1, "request": {**ex.REQUEST_V1["request"], "uid": ""}}
            ).encode(),
            b"request.uid",
        ),
        (
            json.dumps(
                {
                    **ex.REQUEST_V1,
                    "request": {**ex.REQUEST_V1["request"], "desiredAPIVersion": "v1"},
                }
            ).encode(),
            b"desiredAPIVersion",
        ),
        (
            json.dumps(
                {**ex.REQUEST_V1, "request": {**ex.REQUEST_V1["request"], "objects": {"a": 1}}}
            ).encode(),
            b"request.objects",
        ),
    ],
    ids=[
        "syntax",
        "empty",
        "array",
        "wrong-kind",
        "wrong-apiversion",
        "no-request",
        "no-uid",
        "bare-desired-version",
        "objects-not-list",
    ],
)
def test_malformed_review_is_400_with_a_message(app, body, says):
    status, headers, payload = call(app, body=body)
    assert status == 400 and says in payload, payload
    assert headers["content-type"] == "text/plain"


def test_oversized_body_is_413_by_declared_length(app):
    status, _, body = call(app, body=b"x" * 5000, headers={"content-length": "5000"})
    assert status == 413 and b"4096" in body


def test_unconvertible_objects_fail_the_review_not_the_server(app):
    request = json.loads(json.dumps(ex.REQUEST_V1))
    request["request"]["objects"] = [42, {"kind": "CronTab"}]
    status, _, payload = call(app, body=request)
    answer = json.loads(payload)["response"]
    assert status == 200 and answer["result"]["status"] == "Failed"
    assert "not a JSON object" in answer["result"]["message"]


def test_unknown_path_is_404_and_health_answers(app):
    assert call(app, path="/other")[0] == 404
    assert call(app, method="GET", path="/healthz")[:1] == (200,)
    assert call(app, method="GET", path="/readyz")[2] == b"ok"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=8,
)
objects = st.fixed_dictionaries(
    {},
    optional={
        "apiVersion": st.sampled_from(["example.com/v1beta1", "example.com/v1", "x/y", "", "nope"])
        | json_values,
        "kind": st.sampled_from(["CronTab", "Other", ""]) | json_values,
        "metadata": st.fixed_dictionaries(
            {}, optional={"name": st.text(max_size=10), "labels": json_values}
        )
        | json_values,
        "hostPort": st.text(max_size=12) | json_values,
        "host": json_values,
        "port": json_values,
    },
)
reviews = st.fixed_dictionaries(
    {},
    optional={
        "apiVersion": st.sampled_from(["apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1"])
        | json_values,
        "kind": st.just("ConversionReview") | json_values,
        "request": st.fixed_dictionaries(
            {},
            optional={
                "uid": st.uuids().map(str) | json_values,
                "desiredAPIVersion": st.sampled_from(
                    ["example.com/v1", "example.com/v1beta1", "example.com/v9"]
                )
                | json_values,
                "objects": st.lists(objects, max_size=5) | json_values,
            },
        )
        | json_values,
    },
)


@settings(
    max_examples=3000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(reviews)
def test_fuzzed_reviews_get_a_proper_answer(app, document):
    status, _, payload = call(app, body=json.dumps(document).encode())
    assert status in (200, 400, 413), payload
    if status == 200:
        answer = json.loads(payload)
        assert answer["apiVersion"] == document["apiVersion"]
        assert answer["kind"] == "ConversionReview"
        assert answer["response"]["uid"] == document["request"]["uid"]
        result = answer["response"]["result"]
        if result["status"] == "Success":
            converted = answer["response"]["convertedObjects"]
            assert len(converted) == len(document["request"].get("objects") or [])
            assert all(
                o["apiVersion"] == document["request"]["desiredAPIVersion"] for o in converted
            )
        else:
            assert result["status"] == "Failed" and result["message"]


@settings(
    max_examples=1000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.binary(max_size=300))
def test_fuzzed_bytes_never_crash(app, body):
    status, _, _ = call(app, body=body)
    assert status in (200, 400, 413)
