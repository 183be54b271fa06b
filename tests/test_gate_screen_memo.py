"""The screen's answer kept for the same body under the same schema (``run.screen_memo``): what
the screen reads is the key, and nothing it reads is left out of it."""

import copy

from crdharness.gate.evidence.local_validation import FieldError
from crdharness.gate.run.screen_memo import ScreenMemo, names_seen
from crdharness.gate.run.screening import Screening

SCHEMA = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "description": "the desired state",
            "properties": {"port": {"type": "integer", "maximum": 10}},
        }
    },
}


def _crd(schema=SCHEMA, status=False, scope="Namespaced", name="ports.memo.gate.example.com"):
    entry = {"name": "v1", "served": True, "storage": True}
    entry["schema"] = {"openAPIV3Schema": copy.deepcopy(schema)}
    if status:
        entry["subresources"] = {"status": {}}
    spec = {"group": "memo.gate.example.com", "names": {"kind": "Port"}, "scope": scope}
    return {"metadata": {"name": name}, "spec": {**spec, "versions": [entry]}}, entry


class Counted:
    """A screen that says what it was asked, and how often."""

    def __init__(self, answer=None):
        self.calls = 0
        self.answer = answer

    def __call__(self, body):
        def screen():
            self.calls += 1
            return self.answer if self.answer is not None else (body, [])

        return screen


def test_the_same_body_under_the_same_schema_is_screened_once_and_each_gets_a_copy():
    memo, screen = ScreenMemo(), Counted()
    crd, entry = _crd()
    body = {"spec": {"port": 3}}
    first = memo.screened(crd, entry, body, "a", "gate", screen(body))
    again = memo.screened(crd, entry, {"spec": {"port": 3}}, "b", "gate", screen(body))
    assert screen.calls == 1
    assert first == again == (body, [])
    again[0]["spec"]["port"] = 9  # the caller's own copy
    assert memo.screened(crd, entry, body, "c", "gate", screen(body))[0] == body


def test_a_repaired_body_and_a_refusal_are_kept_as_answered():
    repaired = {"spec": {"port": 10}}
    crd, entry = _crd()
    memo, screen = ScreenMemo(), Counted((repaired, []))
    body = {"spec": {"port": 11}}
    assert memo.screened(crd, entry, body, "a", "gate", screen(body)) == (repaired, [])
    assert memo.screened(crd, entry, body, "b", "gate", screen(body)) == (repaired, [])
    assert screen.calls == 1
    error = FieldError("spec.port", "FieldValueInvalid", "too big", "schema")
    refusing = Counted((None, [error]))
    other = {"spec": {"port": 12}}
    for name in ("c", "d"):
        assert memo.screened(crd, entry, other, name, "gate", refusing(other)) == (None, [error])
    assert refusing.calls == 1


def test_a_schema_reworded_shares_its_answers_and_one_constrained_otherwise_does_not():
    memo, screen = ScreenMemo(), Counted()
    body = {"spec": {"port": 3}}
    crd, entry = _crd()
    memo.screened(crd, entry, body, "a", "gate", screen(body))
    reworded = copy.deepcopy(SCHEMA)
    reworded["properties"]["spec"]["description"] = "deprecated: use v2"
    memo.screened(*_crd(reworded), body, "a", "gate", screen(body))
    assert screen.calls == 1
    narrower = copy.deepcopy(SCHEMA)
    narrower["properties"]["spec"]["properties"]["port"]["maximum"] = 2
    memo.screened(*_crd(narrower), body, "a", "gate", screen(body))
    assert screen.calls == 2


def test_what_else_the_screen_reads_is_in_the_key():
    memo, screen = ScreenMemo(), Counted()
    body = {"spec": {"port": 3}}
    memo.screened(*_crd(), body, "a", "gate", screen(body))
    memo.screened(*_crd(status=True), body, "a", "gate", screen(body))  # its status judged
    memo.screened(*_crd(scope="Cluster"), body, "a", None, screen(body))
    memo.screened(*_crd(), body, "a", "other", screen(body))  # another namespace
    memo.screened(*_crd(name="other.memo.gate.example.com"), body, "a", "gate", screen(body))
    assert screen.calls == 5


def test_the_name_is_in_the_key_only_where_the_schema_can_see_it():
    reads = copy.deepcopy(SCHEMA)
    reads["x-kubernetes-validations"] = [{"rule": "self.metadata.name.startsWith('a')"}]
    memo, screen = ScreenMemo(), Counted()
    body = {"spec": {"port": 3}}
    crd, entry = _crd(reads)
    memo.screened(crd, entry, body, "a-1", "gate", screen(body))
    memo.screened(crd, entry, body, "b-1", "gate", screen(body))
    memo.screened(crd, entry, body, "a-1", "gate", screen(body))
    assert screen.calls == 2
    assert names_seen(reads)
    assert not names_seen(SCHEMA)
    named = copy.deepcopy(SCHEMA)
    named["properties"]["metadata"] = {"type": "object", "properties": {"name": {"maxLength": 5}}}
    assert names_seen(named)
    message = copy.deepcopy(SCHEMA)
    message["properties"]["spec"]["x-kubernetes-validations"] = [
        {"rule": "self.port > 0", "messageExpression": "'bad ' + string(self.port)"}
    ]
    assert not names_seen(message)  # a rule deep in spec reading no metadata


def test_forget_drops_a_crds_answers():
    memo, screen = ScreenMemo(), Counted()
    crd, entry = _crd()
    body = {"spec": {"port": 3}}
    memo.screened(crd, entry, body, "a", "gate", screen(body))
    memo.forget(crd["metadata"]["name"])
    memo.screened(crd, entry, body, "a", "gate", screen(body))
    assert screen.calls == 2


class CountingValidator:
    """Accepts every object; counts the objects it was asked about."""

    def __init__(self):
        self.asked = 0

    def validate(self, crd, version, sent, keep_status):
        self.asked += len(sent)
        return [[] for _ in sent]


def test_the_screening_asks_the_validator_once_and_still_counts_every_object_made():
    validator = CountingValidator()
    screening = Screening(validator)  # type: ignore[arg-type]
    crd, entry = _crd()
    for name in ("a", "b", "c"):
        sent, refused = screening.screen(crd, entry, {"spec": {"port": 3}}, name, "gate")
        assert sent == {"spec": {"port": 3}} and refused is None
    assert validator.asked == 1
    assert screening.as_json()["ports.memo.gate.example.com"]["v1"]["generated"] == 3
