"""The local validator (``gate.evidence.local_validation``): the API server's own validation
code, run without an API server. What it says is held against a real API server in
``test_local_validation_agrees``; here only its own behaviour."""

import copy
from pathlib import Path

import psutil
import pytest

from crdharness.errors import HarnessError
from crdharness.gate.evidence import local_validation
from crdharness.gate.evidence.local_validation import LocalValidator

GROUP = "local.gate.example.com"
SPEC = {
    "type": "object",
    "x-kubernetes-validations": [
        {"rule": "has(self.port) != has(self.portName)", "message": "one of port, portName"},
        {"rule": "self.mode == oldSelf.mode", "message": "mode is immutable"},
        {"rule": "self.mode == 'Fast' ? has(self.speed) : true", "messageExpression": "'x'"},
    ],
    "properties": {
        "port": {"type": "integer"},
        "portName": {"type": "string"},
        "mode": {"type": "string", "allOf": [{"enum": ["Fast", "Slow"]}, {"enum": ["Fast"]}]},
        "speed": {"type": "integer"},
        "choice": {
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
            "oneOf": [{"required": ["a"]}, {"required": ["b"]}],
        },
    },
    "required": ["mode"],
}
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"things.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": "things", "singular": "thing", "kind": "Thing"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": SPEC}}},
            }
        ],
    },
}


def thing(spec: dict) -> dict:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Thing",
        "metadata": {"name": "a", "namespace": "default"},
        "spec": spec,
    }


@pytest.fixture(scope="module")
def validator():
    with LocalValidator() as running:
        yield running


def test_an_object_every_rule_holds_for_is_accepted_and_transition_rules_are_skipped(validator):
    # ``self.mode == oldSelf.mode`` is a transition rule: a create has no old object
    [errors] = validator.validate(CRD, "v1", [thing({"port": 1, "mode": "Fast", "speed": 2})])
    assert errors == []


def test_each_refusal_names_the_rule_or_keyword(validator):
    both, ternary, one_of, enum = validator.validate(
        CRD,
        "v1",
        [
            thing({"port": 1, "portName": "x", "mode": "Fast", "speed": 1}),
            thing({"port": 1, "mode": "Fast"}),
            thing({"port": 1, "mode": "Fast", "speed": 1, "choice": {"a": "x", "b": "y"}}),
            thing({"port": 1, "mode": "Slow"}),
        ],
    )
    assert [(e.source, e.rule, e.message) for e in both] == [
        ("cel", "has(self.port) != has(self.portName)", "one of port, portName")
    ]
    # a messageExpression's rule is named by its text
    assert [e.rule for e in ternary] == ["self.mode == 'Fast' ? has(self.speed) : true"]
    assert [e.source for e in one_of] == ["schema"] and "oneOf" in one_of[0].message
    assert enum and enum[0].field == "spec.mode" and enum[0].source == "schema"


def test_a_scale_subresources_replicas_are_judged_as_the_api_server_does(validator):
    # the custom resource validator's ValidateScaleSpec: replicas a non-negative int32,
    # whatever the schema allows
    crd = copy.deepcopy(CRD)
    version = crd["spec"]["versions"][0]
    version["subresources"] = {
        "status": {},
        "scale": {"specReplicasPath": ".spec.port", "statusReplicasPath": ".status.port"},
    }
    negative, too_many, fine = validator.validate(
        crd,
        "v1",
        [
            thing({"port": -3, "mode": "Fast", "speed": 1}),
            thing({"port": 2**31, "mode": "Fast", "speed": 1}),
            thing({"port": 0, "mode": "Fast", "speed": 1}),
        ],
    )
    assert [e.field for e in negative] == [".spec.port"]
    assert "should be a non-negative integer" in negative[0].message
    assert [e.field for e in too_many] == [".spec.port"] and fine == []


def test_an_unknown_version_is_one_clear_error(validator):
    with pytest.raises(HarnessError, match="no version"):
        validator.validate(CRD, "v9", [thing({})])


def test_the_process_is_stopped_when_the_block_ends():
    with LocalValidator() as running:
        running.validate(CRD, "v1", [thing({"port": 1, "mode": "Fast", "speed": 1})])
        pid = running._process.pid
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_the_validator_collects_garbage_less_often_unless_the_caller_says(monkeypatch):
    def gogc_of(running: LocalValidator) -> str:
        assert running._process is not None
        environ = Path(f"/proc/{running._process.pid}/environ").read_bytes().split(b"\0")
        return next(v for v in environ if v.startswith(b"GOGC=")).decode()

    monkeypatch.delenv("GOGC", raising=False)
    with LocalValidator() as running:
        assert gogc_of(running) == f"GOGC={local_validation.GOGC}" != "GOGC=100"
    monkeypatch.setenv("GOGC", "150")
    with LocalValidator() as running:
        assert gogc_of(running) == "GOGC=150"
