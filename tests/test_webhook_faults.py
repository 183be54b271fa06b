"""Every fault mode misbehaves exactly as named, and only when asked for."""

import copy
import io
import json

import pytest
from crdconvert import crontab, faults
from crdconvert.app import ConversionApp
from crdconvert.converters import Registry
from crdconvert.records import RecordSink

from tests import webhook_examples as ex
from tests.app_client import call


def answer_with(*specs, version="v1"):
    records = io.BytesIO()
    app = ConversionApp(
        crontab.register(Registry()),
        faults=faults.Faults.parse(list(specs)),
        records=RecordSink(records),
    )
    request = ex.in_review_version(ex.REQUEST_V1, version)
    request["request"]["objects"][0]["metadata"]["labels"] = {"keep": "me"}
    status, _, payload = call(app, body=request)
    record = json.loads(records.getvalue().splitlines()[-1])
    return status, payload, record


def objects(payload):
    return json.loads(payload)["response"]["convertedObjects"]


def test_no_fault_is_active_by_default():
    status, payload, record = answer_with()
    assert status == 200 and record["faults"] == []
    assert [o["metadata"]["name"] for o in objects(payload)] == ["local-crontab", "remote-crontab"]


def test_fail_with_message():
    _, payload, record = answer_with("fail-with-message")
    response = json.loads(payload)["response"]
    assert response["result"] == {"status": "Failed", "message": faults.FAILURE_MESSAGE}
    assert "convertedObjects" not in response and record["result"] == "Failed"


def test_fail_without_message():
    _, payload, _ = answer_with("fail-without-message")
    assert json.loads(payload)["response"]["result"] == {"status": "Failed"}


def test_wrong_uid():
    _, payload, _ = answer_with("wrong-uid")
    assert json.loads(payload)["response"]["uid"] not in ("", ex.UID)


def test_reorder():
    _, payload, _ = answer_with("reorder")
    assert [o["metadata"]["name"] for o in objects(payload)] == ["remote-crontab", "local-crontab"]


def test_drop_object():
    _, payload, _ = answer_with("drop-object")
    assert len(objects(payload)) == 1


@pytest.mark.parametrize(
    ("fault", "field", "check"),
    [
        ("mutate-name", "name", lambda value: value.endswith("-renamed")),
        ("mutate-uid", "uid", lambda value: value == "42"),
        ("mutate-namespace", "namespace", lambda value: value == "elsewhere"),
        ("mutate-labels", "labels", lambda value: value["converted-by"] == "crdconvert"),
        (
            "mutate-annotations",
            "annotations",
            lambda value: value["crdconvert/converted"] == "true",
        ),
    ],
)
def test_metadata_mutations(fault, field, check):
    _, payload, _ = answer_with(fault)
    assert all(check(o["metadata"][field]) for o in objects(payload))


def test_drop_labels():
    _, payload, _ = answer_with("drop-labels")
    assert all("labels" not in o["metadata"] for o in objects(payload))


def test_mutate_other_metadata():
    _, payload, _ = answer_with("mutate-other-metadata")
    for obj in objects(payload):
        assert obj["metadata"]["generation"] == 42 and obj["metadata"]["garbage"] == "foo"
        assert obj["metadata"]["finalizers"] == ["foo"]


@pytest.mark.parametrize(("sent", "answered"), [("v1", "v1beta1"), ("v1beta1", "v1")])
def test_other_review_version(sent, answered):
    _, payload, _ = answer_with("other-review-version", version=sent)
    assert json.loads(payload)["apiVersion"] == f"apiextensions.k8s.io/{answered}"


def test_stale_apiversion_answers_success_with_the_old_version():
    _, payload, _ = answer_with("stale-apiversion")
    response = json.loads(payload)["response"]
    assert response["result"]["status"] == "Success"
    assert {o["apiVersion"] for o in response["convertedObjects"]} == {"example.com/v1beta1"}


def test_extra_field():
    _, payload, _ = answer_with("extra-field")
    assert all(o["extra"] == 1 for o in objects(payload))


def test_http_500():
    status, payload, record = answer_with("http-500")
    assert status == 500 and record["status"] == 500 and b"fault" in payload


def test_delay_is_parsed_and_applied():
    assert faults.Faults.parse(["delay=0.05"]).delay == 0.05
    status, _, record = answer_with("delay=0.05")
    assert status == 200 and record["durationMs"] >= 50


def test_faults_combine():
    _, payload, record = answer_with("reorder", "mutate-labels")
    assert record["faults"] == ["reorder", "mutate-labels"]
    names = [o["metadata"]["name"] for o in objects(payload)]
    assert names == ["remote-crontab", "local-crontab"]


@pytest.mark.parametrize("spec", ["nonsense", "delay=soon"])
def test_unknown_or_malformed_fault_is_refused(spec):
    with pytest.raises(faults.UnknownFault, match=spec.split("=")[0]):
        faults.Faults.parse([spec])


def test_fault_control_endpoint_only_when_enabled():
    app = ConversionApp(crontab.register(Registry()), records=RecordSink(io.BytesIO()))
    assert call(app, method="PUT", path="/control/faults", body=["reorder"])[0] == 404
    app = ConversionApp(
        crontab.register(Registry()), fault_control=True, records=RecordSink(io.BytesIO())
    )
    status, _, body = call(app, method="PUT", path="/control/faults", body=["reorder"])
    assert status == 200 and json.loads(body) == ["reorder"]
    assert call(app, method="PUT", path="/control/faults", body=["bogus"])[0] == 400
    assert json.loads(call(app, method="GET", path="/control/faults")[2]) == ["reorder"]


def test_lowercase_success():
    _, payload, _ = answer_with("lowercase-success")
    assert json.loads(payload)["response"]["result"] == {"status": "success"}


def test_no_response():
    _, payload, _ = answer_with("no-response")
    assert "response" not in json.loads(payload)


def test_failed_with_objects_is_the_documented_v1beta1_example():
    _, payload, _ = answer_with("failed-with-objects", version="v1beta1")
    response = json.loads(payload)["response"]
    assert response["result"] == {"status": "Failed"} and len(response["convertedObjects"]) == 2


def test_mutate_kind_and_invalid_label():
    _, payload, _ = answer_with("mutate-kind", "invalid-label")
    for obj in objects(payload):
        assert obj["kind"] == "CronTab2" and obj["metadata"]["labels"]["to"] == "example.com/v1"


def test_http_404():
    status, _, _ = answer_with("http-404")
    assert status == 404


def test_drop_field_removes_a_path_from_every_converted_object():
    _, payload, record = answer_with("drop-field=port", "drop-field=metadata.labels.keep")
    converted = objects(payload)
    assert all("port" not in o and o["host"] for o in converted)
    assert record["faults"] == ["drop-field=port", "drop-field=metadata.labels.keep"]


def test_drop_field_with_a_version_drops_only_in_answers_converting_to_it():
    # The review converts to example.com/v1: a drop meant for v1beta1 only leaves it.
    _, payload, record = answer_with("drop-field=v1:port", "drop-field=v1beta1:host")
    converted = objects(payload)
    assert all("port" not in o and o["host"] for o in converted)
    assert record["faults"] == ["drop-field=v1:port", "drop-field=v1beta1:host"]


def test_fill_field_answers_an_absent_field_with_a_value():
    specs = ("fill-field=metadata.finalizers=null", "fill-field=port=0", "fill-field=spec.tags=[]")
    _, payload, record = answer_with(*specs)
    converted = objects(payload)
    assert all(o["metadata"]["finalizers"] is None for o in converted), converted
    assert all(o["port"] not in (0, None) for o in converted)  # present: left as it is
    assert all("spec" not in o for o in converted)  # no parent: nothing made up
    assert record["faults"] == list(specs)


def test_fill_field_with_a_version_fills_only_in_answers_converting_to_it():
    # The review converts to example.com/v1.
    _, payload, record = answer_with("fill-field=v1:metadata.finalizers=[]", "fill-field=v2:x=1")
    converted = objects(payload)
    assert all(o["metadata"]["finalizers"] == [] and "x" not in o for o in converted), converted
    assert record["faults"] == ["fill-field=v1:metadata.finalizers=[]", "fill-field=v2:x=1"]


def test_fill_field_needs_a_json_value():
    with pytest.raises(faults.UnknownFault, match="JSON value"):
        faults.Faults.parse(["fill-field=spec.size=nothing"])


def test_go_duration_fails_the_review_on_a_value_go_cannot_parse():
    # The review's objects are sent with hostPort "localhost:1234": no Go duration.
    _, payload, record = answer_with("go-duration=hostPort")
    response = json.loads(payload)["response"]
    said = 'time: invalid duration "localhost:1234"'
    assert response["result"] == {"status": "Failed", "message": said}
    assert "convertedObjects" not in response and record["faults"] == ["go-duration=hostPort"]
    _, payload, _ = answer_with("go-duration=spec.every")  # absent: converted as usual
    assert json.loads(payload)["response"]["result"] == {"status": "Success"}


def test_drop_field_needs_a_path():
    with pytest.raises(faults.UnknownFault):
        faults.Faults.parse(["drop-field="])


def test_identity_kinds_convert_by_apiversion_only():
    from crdconvert.__main__ import parse_args

    args = parse_args(["--tls-cert", "c", "--tls-key", "k", "--identity", "Backup"])
    assert args.identity == ["Backup"]
    registry = crontab.register(Registry())
    registry.add_identity("*", "Backup")
    backup = {"apiVersion": "g.example.com/v1alpha1", "kind": "Backup", "metadata": {"name": "b"}}
    backup["status"] = {"conditions": [{"type": "Ready"}]}
    converted = registry.convert(backup, "g.example.com/v1")
    assert converted == {**backup, "apiVersion": "g.example.com/v1"}


def test_omit_zero_drops_go_zero_values_of_fields_not_list_items():
    obj = {
        "metadata": {"name": "a", "generation": 0},
        "spec": {"on": False, "n": 0, "r": 0.0, "s": "", "keep": True, "list": [0, False]},
        "status": {"inner": {"x": 0, "y": 1}},
    }
    answer = {"response": {"convertedObjects": [obj]}}
    faults.Faults.parse(["omit-zero", "null-creation-timestamp"]).apply(answer, {})
    assert obj["spec"] == {"keep": True, "list": [0, False]}
    assert obj["status"] == {"inner": {"y": 1}}
    assert obj["metadata"] == {"name": "a", "generation": 0, "creationTimestamp": None}


def test_panic_on_drops_the_review_unanswered_for_an_object_holding_the_path():
    app = ConversionApp(
        crontab.register(Registry()),
        faults=faults.Faults.parse(["panic-on=hostPort"]),
        records=RecordSink(io.BytesIO()),
    )
    answer = app.answer("POST", "/crdconvert", {b"content-type": b"application/json"}, b"")
    assert answer.status == 400  # no review at all: refused as ever
    body = json.dumps(ex.REQUEST_V1).encode()
    answer = app.answer("POST", "/crdconvert", {b"content-type": b"application/json"}, body)
    assert answer.crash.startswith("http: panic serving: runtime error") and answer.body == b""
    assert "panic-on=hostPort" in answer.crash and "goroutine" in answer.crash
    _, payload, _ = answer_with("panic-on=spec.none")  # no object holds it: converted
    assert json.loads(payload)["response"]["result"] == {"status": "Success"}


def test_move_field_answers_a_deprecated_fields_value_in_its_successors_place():
    moved = faults.Faults.parse(["move-field=v2:spec.pattern+spec.match"])
    assert moved.describe() == ["move-field=v2:spec.pattern+spec.match"]
    to_v2 = {"desiredAPIVersion": "g.example.com/v2"}
    obj = {"spec": {"pattern": "a*"}}
    moved.apply({"response": {"convertedObjects": [obj]}}, to_v2)
    assert obj == {"spec": {"match": "a*"}}
    both = {"spec": {"pattern": "a*", "match": "b"}}  # the successor set: left as it is
    moved.apply({"response": {"convertedObjects": [both]}}, to_v2)
    assert both == {"spec": {"pattern": "a*", "match": "b"}}
    back = {"spec": {"pattern": "a*"}}  # converting to another version: untouched
    moved.apply({"response": {"convertedObjects": [back]}}, {"desiredAPIVersion": "g/v1"})
    assert back == {"spec": {"pattern": "a*"}}


def test_drop_empty_key_drops_a_list_item_whose_key_is_empty_whole():
    keyless = faults.Faults.parse(["drop-empty-key=spec.sources[].key"])
    obj = {"spec": {"sources": [{"key": "", "mode": "a"}, {"key": "k", "mode": "b"}]}}
    keyless.apply({"response": {"convertedObjects": [obj]}}, {})
    assert obj == {"spec": {"sources": [{"key": "k", "mode": "b"}]}}


def test_split_items_answers_an_item_holding_a_comma_as_two():
    split = faults.Faults.parse(["split-items=spec.tags"])
    obj = {"spec": {"tags": ["a,b", "c"], "other": ["x,y"]}}
    split.apply({"response": {"convertedObjects": [obj]}}, {})
    assert obj == {"spec": {"tags": ["a", "b", "c"], "other": ["x,y"]}}
    assert split.describe() == ["split-items=spec.tags"]


def stashed(spec: str, obj: dict, to: str) -> dict:
    fault = faults.Faults.parse([spec])
    fault.apply({"response": {"convertedObjects": [obj]}}, {"desiredAPIVersion": f"g/{to}"})
    return obj


def test_stash_field_keeps_a_field_in_an_annotation_down_and_reads_it_back_up():
    spec = "stash-field=v1:spec.cordoned=example.com/cordoned"
    down = stashed(spec, {"metadata": {}, "spec": {"cordoned": False, "x": 1}}, "v1")
    assert down == {
        "metadata": {"annotations": {"example.com/cordoned": "false"}},
        "spec": {"x": 1},
    }
    assert stashed(spec, down, "v2") == {"metadata": {}, "spec": {"x": 1, "cordoned": False}}
    # A user's own value that is no JSON is not the webhook's: kept both ways.
    own = {"metadata": {"annotations": {"example.com/cordoned": "yes"}}}
    assert stashed(spec, copy.deepcopy(own), "v2") == own
    assert faults.Faults.parse([spec]).describe() == [spec]


def test_stash_flag_writes_only_true_and_consumes_any_value_on_the_way_up():
    spec = "stash-flag=v1:spec.cordoned=example.com/cordoned"
    assert stashed(spec, {"metadata": {}, "spec": {"cordoned": False}}, "v1") == {
        "metadata": {},
        "spec": {},
    }
    user = {"metadata": {"annotations": {"example.com/cordoned": "false"}}}
    assert stashed(spec, user, "v2") == {"metadata": {}, "spec": {"cordoned": False}}


def test_stash_joined_keeps_a_list_joined_with_commas_and_splits_it_back():
    spec = "stash-joined=v1:spec.forbidden.denied=example.com/denied"
    sent = {"metadata": {}, "spec": {"forbidden": {"denied": ["a", "b,c"]}}}
    down = stashed(spec, sent, "v1")
    assert down == {
        "metadata": {"annotations": {"example.com/denied": "a,b,c"}},
        "spec": {"forbidden": {}},
    }
    # The item holding a comma comes back as two.
    up = stashed(spec, down, "v2")
    assert up == {"metadata": {}, "spec": {"forbidden": {"denied": ["a", "b", "c"]}}}
    assert faults.Faults.parse([spec]).describe() == [spec]


def test_stash_copy_keeps_the_value_whole_beside_what_the_version_holds_and_puts_it_back():
    """api-gateway's shape: the whole field kept in an annotation at v2, v2 holding what it
    can of it (a duration as whole seconds); on the way back the copy wins: a round trip is
    exact, a client of v2 sees 5400."""
    specs = ["stash-copy=v2:spec.cors=example.com/v1-cors", "whole-seconds=v2:spec.cors.maxAge"]
    fault = faults.Faults.parse(specs)
    obj = {"metadata": {}, "spec": {"cors": {"maxAge": "1h30m0.5s"}}}
    fault.apply({"response": {"convertedObjects": [obj]}}, {"desiredAPIVersion": "g/v2"})
    assert obj == {
        "metadata": {"annotations": {"example.com/v1-cors": '{"maxAge": "1h30m0.5s"}'}},
        "spec": {"cors": {"maxAge": 5400}},
    }
    fault.apply({"response": {"convertedObjects": [obj]}}, {"desiredAPIVersion": "g/v1"})
    assert obj == {"metadata": {}, "spec": {"cors": {"maxAge": "1h30m0.5s"}}}
    assert fault.describe() == specs


def test_restore_field_keeps_the_field_there_and_still_reads_back_what_stash_field_kept():
    spec = "restore-field=v1:spec.cordoned=example.com/cordoned"
    sent = {"metadata": {}, "spec": {"cordoned": True, "x": 1}}
    assert stashed(spec, copy.deepcopy(sent), "v1") == sent  # no longer stashed
    # An object the stash-field release stored: the value read back, the annotation left.
    old = {"metadata": {"annotations": {"example.com/cordoned": "true"}}, "spec": {"x": 1}}
    assert stashed(spec, old, "v2") == {
        "metadata": {"annotations": {"example.com/cordoned": "true"}},
        "spec": {"x": 1, "cordoned": True},
    }
    assert faults.Faults.parse([spec]).describe() == [spec]


def test_whole_seconds_drops_a_fraction_of_a_second_on_the_way_there_only():
    spec = "whole-seconds=v2:spec.cors.maxAge"
    there = stashed(spec, {"spec": {"cors": {"maxAge": "1h30m0.5s"}}}, "v2")
    assert there == {"spec": {"cors": {"maxAge": 5400}}}
    assert stashed(spec, there, "v1") == {"spec": {"cors": {"maxAge": "1h30m0s"}}}
    assert stashed(spec, {"spec": {"cors": {"maxAge": 90}}}, "v1")["spec"]["cors"] == {
        "maxAge": "1m30s"
    }
    assert stashed(spec, {"spec": {"cors": {"maxAge": 7}}}, "v1")["spec"]["cors"] == {
        "maxAge": "7s"
    }
    not_go = {"spec": {"cors": {"maxAge": "soon"}}}  # no Go duration: left as it is
    assert stashed(spec, copy.deepcopy(not_go), "v2") == not_go
    assert faults.Faults.parse([spec]).describe() == [spec]


def test_grow_annotation_doubles_one_annotation_on_every_conversion():
    _, payload, record = answer_with("grow-annotation")
    assert record["faults"] == ["grow-annotation"]
    assert [len(o["metadata"]["annotations"][faults.GROWN]) for o in objects(payload)] == [8192] * 2
