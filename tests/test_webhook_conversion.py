"""The webhook's conversions: the documented examples, the converter framework, records."""

import io
import json

import pytest
from crdconvert import crontab
from crdconvert.app import ConversionApp
from crdconvert.converters import ConversionError, Registry
from crdconvert.records import RecordSink

from tests import webhook_examples as ex
from tests.app_client import review


@pytest.fixture
def records():
    return io.BytesIO()


@pytest.fixture
def app(records):
    return ConversionApp(crontab.register(Registry()), records=RecordSink(records))


def written(records: io.BytesIO) -> list[dict]:
    return [json.loads(line) for line in records.getvalue().splitlines()]


@pytest.mark.behaviour("RS-01", "RS-05", "RS-09", "RQ-08", "WT-08")
@pytest.mark.parametrize("version", ["v1", "v1beta1"])
def test_documented_review_gives_documented_response(app, version):
    request = ex.in_review_version(ex.REQUEST_V1, version)
    expected = ex.in_review_version(ex.RESPONSE_V1, version)
    assert review(app, request) == expected


@pytest.mark.behaviour("RQ-07")
def test_objects_in_several_versions_each_use_their_own(app):
    request = ex.in_review_version(ex.REQUEST_V1, "v1")
    request["request"]["desiredAPIVersion"] = "example.com/v1beta1"
    first = request["request"]["objects"][0]
    first.update(apiVersion="example.com/v1", host="h", port="1")
    del first["hostPort"]
    answer = review(app, request)["response"]
    assert [o["apiVersion"] for o in answer["convertedObjects"]] == ["example.com/v1beta1"] * 2
    assert [o.get("hostPort") for o in answer["convertedObjects"]] == ["h:1", "example.com:2345"]


def test_unsplittable_hostport_fails_with_the_documented_message_and_the_object(app):
    request = ex.in_review_version(ex.REQUEST_V1, "v1")
    request["request"]["objects"][1]["hostPort"] = "nocolon"
    answer = review(app, request)
    assert answer["response"]["uid"] == ex.UID
    assert answer["response"]["result"]["status"] == "Failed"
    message = answer["response"]["result"]["message"]
    assert message.startswith(crontab.PARSE_FAILURE)
    assert "remote-crontab" in message and "example.com/v1beta1 -> example.com/v1" in message
    assert "convertedObjects" not in answer["response"]


def test_unknown_desired_version_fails_with_a_message(app):
    request = ex.in_review_version(ex.REQUEST_V1, "v1")
    request["request"]["desiredAPIVersion"] = "example.com/v7"
    result = review(app, request)["response"]["result"]
    assert result["status"] == "Failed"
    assert "no conversion from example.com/v1beta1 to example.com/v7" in result["message"]


def test_unknown_kind_fails_with_a_message(app):
    request = ex.in_review_version(ex.REQUEST_V1, "v1")
    request["request"]["objects"][0]["kind"] = "Other"
    result = review(app, request)["response"]["result"]
    assert "no converter is registered for kind Other" in result["message"]


def test_empty_object_list_succeeds_with_no_objects(app):
    request = ex.in_review_version(ex.REQUEST_V1, "v1")
    request["request"]["objects"] = []
    answer = review(app, request)["response"]
    assert answer["result"] == {"status": "Success"} and answer["convertedObjects"] == []


@pytest.mark.behaviour("RQ-09")
def test_a_review_that_also_carries_an_empty_response_is_answered(app):
    request = ex.in_review_version(ex.REQUEST_V1, "v1")
    request["response"] = {}
    assert review(app, request) == ex.RESPONSE_V1


def test_metadata_stays_except_labels_and_annotations():
    registry = Registry()

    @registry.converter("g.io", "K", "v1", "v2")
    def meddle(obj):
        obj["metadata"].update(name="other", uid="42", namespace="x", generation=9)
        obj["metadata"]["labels"] = {"converted": "yes"}
        obj["kind"] = "Changed"
        return obj

    source = {
        "apiVersion": "g.io/v1",
        "kind": "K",
        "metadata": {"name": "n", "uid": "u", "namespace": "ns", "labels": {"a": "b"}},
    }
    out = registry.convert(source, "g.io/v2")
    assert out["metadata"] == {
        "name": "n",
        "uid": "u",
        "namespace": "ns",
        "labels": {"converted": "yes"},
    }
    assert (out["apiVersion"], out["kind"]) == ("g.io/v2", "K")
    assert source["metadata"]["labels"] == {"a": "b"}, "the input must not be modified"


def test_versions_without_a_direct_converter_are_reached_through_a_chain():
    registry = Registry()
    registry.add("g.io", "K", "v1", "v2", lambda o: {**o, "steps": [*o.get("steps", []), 2]})
    registry.add("g.io", "K", "v2", "v3", lambda o: {**o, "steps": [*o["steps"], 3]})
    out = registry.convert({"apiVersion": "g.io/v1", "kind": "K", "metadata": {}}, "g.io/v3")
    assert out["steps"] == [2, 3] and out["apiVersion"] == "g.io/v3"
    with pytest.raises(ConversionError, match=r"no conversion from g\.io/v3 to g\.io/v1"):
        registry.convert({"apiVersion": "g.io/v3", "kind": "K"}, "g.io/v1")


@pytest.mark.parametrize(
    ("host_port", "host", "port"),
    [("localhost:1234", "localhost", "1234"), ("[::1]:80", "[::1]", "80")],
)
def test_crontab_round_trip(host_port, host, port):
    registry = crontab.register(Registry())
    beta = {
        "apiVersion": "example.com/v1beta1",
        "kind": "CronTab",
        "metadata": {},
        "hostPort": host_port,
    }
    v1 = registry.convert(beta, "example.com/v1")
    assert (v1["host"], v1["port"]) == (host, port) and "hostPort" not in v1
    assert registry.convert(v1, "example.com/v1beta1") == beta


def test_each_review_is_recorded(app, records):
    review(app, ex.in_review_version(ex.REQUEST_V1, "v1beta1"))
    (record,) = written(records)
    assert record["uid"] == ex.UID
    assert record["reviewVersion"] == "apiextensions.k8s.io/v1beta1"
    assert record["desiredAPIVersion"] == "example.com/v1"
    assert record["objects"] == [
        {
            "name": "local-crontab",
            "apiVersion": "example.com/v1beta1",
            "namespace": "default",
            "uid": "3415a7fc-162b-4300-b5da-fd6083580d66",
            "resourceVersion": "143",
        },
        {
            "name": "remote-crontab",
            "apiVersion": "example.com/v1beta1",
            "uid": "359a83ec-b575-460d-b553-d859cedde8a0",
            "resourceVersion": "12893",
        },
    ]
    assert (record["method"], record["contentType"]) == ("POST", "application/json")
    assert record["result"] == "Success" and record["durationMs"] >= 0


def test_identity_kinds_change_only_the_api_version():
    registry = Registry()
    registry.add_identity("*", "Passthrough")
    source = {
        "apiVersion": "g.io/v1beta1",
        "kind": "Passthrough",
        "metadata": {"name": "n"},
        "host": "h",
        "port": "1",
    }
    out = registry.convert(source, "g.io/v1")
    assert out == {**source, "apiVersion": "g.io/v1"}


def test_each_record_is_one_json_line_with_the_time_first():
    stream = io.BytesIO()
    sink = RecordSink(stream)
    sink.write({"uid": "a", "status": 200})
    sink.write({})
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [list(line) for line in lines] == [["time", "uid", "status"], ["time"]]
