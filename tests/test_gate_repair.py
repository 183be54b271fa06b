"""Generated objects repaired against the API server's own rules, run locally
(``gate.evidence.repair``), for our own rule-heavy Voyage (examples/gate/voyages): each rule
shape is met, and what cannot be met is said with the rule that refused it."""

import re
from pathlib import Path

import pytest
import yaml

from crdharness.gate.api import Answer
from crdharness.gate.evidence import coverage, coverage_objects, objects, repair
from crdharness.gate.evidence.local_validation import LocalValidator
from crdharness.gate.run.screening import Screening
from crdharness.scenarios import crds

VOYAGE = Path(__file__).resolve().parent.parent / "examples" / "gate" / "voyages"


@pytest.fixture(scope="module")
def validator():
    with LocalValidator() as running:
        yield running


@pytest.fixture(scope="module")
def crd():
    return yaml.safe_load((VOYAGE / "release-1.yaml").read_text())


def test_drawn_voyages_are_repaired_until_the_api_servers_rules_hold(validator, crd):
    entry = crd["spec"]["versions"][0]
    drawn = objects.drawn_from(objects.bodies(entry), 30, 0) + coverage_objects.bodies(entry)
    sent = [objects.manifest(crd, "v1", "v", "gate", b) for b in drawn]
    before = sum(not e for e in validator.validate(crd, "v1", sent))
    fixed = [repair.repaired(validator, crd, entry, body)[0] for body in drawn]
    accepted = [f for f in fixed if f is not None]
    assert before < 0.8 * len(drawn)  # the rules refuse many drawn objects as drawn
    assert len(accepted) >= 0.9 * len(drawn), f"{len(accepted)} of {len(drawn)}"
    again = [objects.manifest(crd, "v1", "v", "gate", b) for b in accepted]
    assert all(not e for e in validator.validate(crd, "v1", again))


def test_each_rule_shape_is_met(validator, crd):
    entry = crd["spec"]["versions"][0]
    broken = {
        "spec": {
            "route": {"berth": 3, "berthName": "east"},  # exactly one of
            "payment": {"cash": 5, "card": "visa"},  # at most one of
            "vessel": {"kind": "Barge", "cabins": 4},  # ternary and implication
            "stops": [{"name": "a", "minutes": 7}, {"name": "b"}],  # exists, all
            "tags": ["charter", "regular"],  # membership
            "callSign": "XY",  # string predicate
        }
    }
    fixed, errors = repair.repaired(validator, crd, entry, broken)
    assert errors == [] and fixed is not None
    spec = fixed["spec"]
    assert ("berth" in spec["route"]) != ("berthName" in spec["route"])
    assert spec["callSign"].startswith("FV-") if "callSign" in spec else True


def test_an_object_no_repair_finds_is_not_sent_and_its_rule_is_counted(validator):
    spec = {
        "type": "object",
        "x-kubernetes-validations": [{"rule": "self.n * 2 == 7", "message": "never"}],
        "required": ["n"],
        "properties": {"n": {"type": "integer"}},
    }
    schema = {"type": "object", "required": ["spec"], "properties": {"spec": spec}}
    crd = crds.manifest(
        "repair.gate.example.com", "Never", [crds.version("v1", schema)], plural="never"
    )
    entry = crd["spec"]["versions"][0]
    screening = Screening(validator)
    _, refused = screening.screen(crd, entry, {"spec": {"n": 1}}, "n", "gate")
    assert refused is not None and "never" in refused.message
    made = screening.as_json()["never.repair.gate.example.com"]["v1"]
    assert made["generated"] == 1 and made["refused"] == 1
    assert list(made["refused_by"]) == ["CEL rule at spec: self.n * 2 == 7"]
    # a sample is sent as given: the API server's own answer is what its author needs
    sample = {"spec": {"n": 1}, objects.NAME: "mine"}
    assert screening.screen(crd, entry, sample, "n", "gate") == (sample, None)


def test_few_accepted_is_said_per_crd_and_version():
    screening = Screening()
    crd = {"metadata": {"name": "a.example.com"}}
    entry = {"name": "v1"}
    for i in range(4):
        screening.screen(crd, entry, {"spec": {"i": i}}, "x", None)
    screening.sent(crd, "v1", {"spec": {}}, None)
    from crdharness.gate.api import Answer

    refused = Answer(422, {"message": "spec.i: Invalid value"}, [], "")
    for _ in range(3):
        screening.sent(crd, "v1", {"spec": {}}, refused)
    assert screening.few_accepted() == [
        "a.example.com at v1: 1 of 4 generated objects accepted; refused most by "
        "API server: spec.i: Invalid value"
    ]
    assert screening.as_json()["a.example.com"]["v1"]["refused"] == 3


def _one_rule_crd(plural: str, spec: dict) -> tuple[dict, dict]:
    schema = {"type": "object", "required": ["spec"], "properties": {"spec": spec}}
    crd = crds.manifest(
        f"{plural}.gate.example.com", plural.title(), [crds.version("v1", schema)], plural=plural
    )
    return crd, crd["spec"]["versions"][0]


def _rule(rule: str, node: dict) -> dict:
    return {**node, "x-kubernetes-validations": [{"rule": rule, "message": "no"}]}


STRING = {"type": "string"}
INTEGER = {"type": "integer"}


def _numbers_rule(rule: str, *names: str) -> dict:
    """A rule over an object of required integers ``names``."""
    return _rule(
        rule,
        {"type": "object", "required": list(names), "properties": dict.fromkeys(names, INTEGER)},
    )


LOG_KINDS = ["Failure", "Fault", "Success", "Healthy"]


@pytest.mark.parametrize(
    ("spec", "broken", "holds"),
    [
        # a property named as a CEL reserved word is ``__namespace__`` in the rule
        (
            _rule(
                "has(self.name) && has(self.__namespace__)",
                {"type": "object", "properties": {"name": STRING, "namespace": STRING}},
            ),
            {},
            lambda s: "namespace" in s and "name" in s,
        ),
        # and one with a dash is ``x__dash__y``
        (
            _rule(
                "has(self.dock__dash__name)",
                {"type": "object", "properties": {"dock-name": STRING}},
            ),
            {},
            lambda s: "dock-name" in s,
        ),
        # a string in one case
        (
            _rule(
                "self.plural == self.plural.lowerAscii()",
                {"type": "object", "required": ["plural"], "properties": {"plural": STRING}},
            ),
            {"plural": "Ferries"},
            lambda s: s["plural"] == s["plural"].lower(),
        ),
        # a string that must hold data
        (
            {
                "type": "object",
                "required": ["berth"],
                "properties": {"berth": _rule("self != ''", STRING)},
            },
            {"berth": ""},
            lambda s: s["berth"] != "",
        ),
        # a pattern whose backslashes are escaped in the CEL literal: ``\\*`` is ``\*``
        (
            {
                "type": "object",
                "required": ["host"],
                "properties": {"host": _rule(r"self.matches('^\\*\\.[a-z]{2,8}$')", STRING)},
            },
            {"host": "x"},
            lambda s: s["host"].startswith("*.") and s["host"][2:].isalpha(),
        ),
        # exactly one of three, where the field it adds has rules of its own
        (
            {
                "type": "object",
                "x-kubernetes-validations": [
                    {"rule": r, "message": "no"}
                    for r in [
                        "(has(self.ref) && !has(self.refs)) || (!has(self.ref) && has(self.refs))"
                        " || (has(self.selectors) && self.selectors.size() > 0)",
                        "has(self.ref) ? self.ref.group == 'docks.example.com' : true",
                        "has(self.ref) ? self.ref.kind in ['Dock', 'Pier'] : true",
                        "has(self.refs) ? self.refs.all(r, r.kind in ['Dock', 'Pier']) : true",
                        "has(self.selectors) ? self.selectors.all(r, r.kind == 'Dock') : true",
                    ]
                ],
                "properties": {
                    "ref": {
                        "type": "object",
                        "required": ["group", "kind"],
                        "properties": {"group": STRING, "kind": STRING},
                    },
                    "refs": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["kind"],
                            "properties": {"kind": STRING},
                        },
                    },
                    "selectors": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["kind"],
                            "properties": {"kind": STRING},
                        },
                    },
                    "berth": INTEGER,
                },
            },
            {"berth": 1},
            lambda s: sum(k in s for k in ("ref", "refs", "selectors")) == 1,
        ),
        # exactly one of four, counted in a list of has()
        (
            _rule(
                "[has(self.a),has(self.b),has(self.c),has(self.d)].filter(x,x==true).size() == 1",
                {"type": "object", "properties": {k: STRING for k in "abcd"}},
            ),
            {k: "x" for k in "abcd"},
            lambda s: len(s) == 1,
        ),
        # a field below another the rule asks for where a list holds a value
        (
            _rule(
                "!('Create' in self.policies) || has(self.provider.secretRef)",
                {
                    "type": "object",
                    "properties": {
                        "policies": {"type": "array", "items": STRING},
                        "provider": {
                            "type": "object",
                            "properties": {
                                "secretRef": {
                                    "type": "object",
                                    "required": ["name"],
                                    "properties": {"name": STRING},
                                },
                                "region": STRING,
                            },
                        },
                    },
                },
            ),
            {"policies": ["Create", "Update"], "provider": {"region": "eu"}},
            lambda s: "Create" in s["policies"] and "secretRef" in s["provider"],
        ),
        # two numbers compared with each other
        (
            _numbers_rule("self.numerator <= self.denominator", "numerator", "denominator"),
            {"numerator": 9, "denominator": 2},
            lambda s: s["numerator"] <= s["denominator"],
        ),
        # two numbers compared strictly: equal is not enough
        (
            _numbers_rule("self.end > self.start", "start", "end"),
            {"start": 7, "end": 7},
            lambda s: s["end"] > s["start"],
        ),
        # a duration beyond the rule's literal (the pattern's own draw was "0h")
        (
            {
                "type": "object",
                "properties": {
                    "period": _rule(
                        "duration(self) > duration('0s')",
                        {"type": "string", "pattern": "^([0-9]{1,5}(h|m|s|ms)){1,4}$"},
                    ),
                },
            },
            {"period": "0h"},
            lambda s: re.fullmatch(r"0*[1-9][0-9]*(h|m|s|ms)", s.get("period", "")),
        ),
        # a list holding one kind of value as soon as it holds the other
        (
            {
                "type": "object",
                "properties": {
                    "log": _rule(
                        "self.exists(e, e == 'Failure' || e == 'Fault')"
                        " == self.exists(e, e == 'Success' || e == 'Healthy')",
                        {"type": "array", "items": {"type": "string", "enum": LOG_KINDS}},
                    )
                },
            },
            {"log": ["Failure"]},
            lambda s: "Failure" in s["log"] and {"Success", "Healthy"} & set(s["log"]),
        ),
        # a field the rule asks for, absent, given one of the rule's values
        (
            _rule(
                "!has(self.body)"
                " || (has(self.method) && self.method.upperAscii() in ['POST','PUT'])",
                {"type": "object", "properties": {"body": STRING, "method": STRING}},
            ),
            {"body": "cargo"},
            lambda s: s.get("body") == "cargo" and s["method"] in ("POST", "PUT"),
        ),
        # a scalar below an object the body does not have: the object made with it
        (
            _rule(
                "!has(self.spare) || (has(self.balancer) && self.balancer.kind in ['Random'])",
                {
                    "type": "object",
                    "properties": {
                        "spare": INTEGER,
                        "balancer": {
                            "type": "object",
                            "required": ["kind"],
                            "properties": {
                                "kind": {"type": "string", "enum": ["Hash", "Least", "Random"]}
                            },
                        },
                    },
                },
            ),
            {"spare": 5},
            lambda s: s.get("spare") == 5 and s["balancer"]["kind"] == "Random",
        ),
        # two fields each asked one of the rule's values at once: one changed alone does not
        # meet the rule
        (
            _rule(
                "self.kind in ['ConfigMap', 'Secret'] && self.group in ['', 'v1']",
                {
                    "type": "object",
                    "required": ["kind", "group"],
                    "properties": {"kind": STRING, "group": STRING, "name": STRING},
                },
            ),
            {"kind": "Dock", "group": "docks", "name": "east"},
            lambda s: s == {"kind": "ConfigMap", "group": "v1", "name": "east"},
        ),
    ],
    ids=[
        *("reserved-word", "dashed-name", "lower-case", "not-empty", "escaped-pattern"),
        *("one-of-three", "one-of-four", "nested-has", "compared", "compared-strictly"),
        *("duration-beyond", "each-literal-added", "absent-given-literal", "chained-absent"),
        "compared-together",
    ],
)
def test_a_rule_shape_of_real_crds_is_met(validator, spec, broken, holds):
    crd, entry = _one_rule_crd("docks", spec)
    fixed, errors = repair.repaired(validator, crd, entry, {"spec": broken})
    assert errors == [] and fixed is not None
    assert holds(fixed["spec"]), fixed


def test_the_declared_paths_accepted_objects_hold_are_counted():
    spec = {"type": "object", "properties": {"berth": INTEGER, "dock": STRING, "quay": STRING}}
    crd, _ = _one_rule_crd("quays", spec)
    screening = Screening()
    screening.sent(crd, "v1", {"spec": {"berth": 3, "dock": ""}}, None)  # "" holds no data
    screening.sent(crd, "v1", {"spec": {"quay": "q"}}, Answer(422, {}, [], "refused"))
    made = screening.as_json()["quays.quays.gate.example.com"]["v1"]
    assert (made["paths_held"], made["paths_declared"]) == (1, 3)


def test_what_no_search_meets_is_left_out_and_the_rest_kept(validator):
    never = {
        "type": "object",
        "properties": {"n": INTEGER},
        "x-kubernetes-validations": [{"rule": "self.n * 2 == 7", "message": "never"}],
    }
    spec = {
        "type": "object",
        "properties": {**{f"hold{i}": dict(never) for i in range(24)}, "berth": INTEGER},
    }
    crd, entry = _one_rule_crd("holds", spec)
    broken = {**{f"hold{i}": {"n": i} for i in range(24)}, "berth": 4}  # more than ROUNDS
    fixed, errors = repair.repaired(validator, crd, entry, {"spec": broken})
    assert errors == [] and fixed == {"spec": {"berth": 4}}


def test_a_field_a_rule_forbids_outright_is_not_a_path_to_hold():
    # ``!has(self.claims)``: a version keeps the field declared and refuses it
    spec = _rule(
        "!has(self.claims)",
        {
            "type": "object",
            "properties": {
                "claims": {"type": "object", "properties": {"kind": STRING}},
                "berth": INTEGER,
            },
        },
    )
    _, entry = _one_rule_crd("moorings", spec)
    assert coverage.declared(objects.body_schema(entry)) == ["spec.berth"]
    assert all("claims" not in body.get("spec", {}) for body in coverage_objects.bodies(entry))


def test_a_coverage_string_meets_every_pattern_an_allof_gives():
    # a quantity pattern and a positive-number pattern together (envoy gateway's
    # minContentLength): "0" meets the first only, and the object was refused
    node = {
        "x-kubernetes-int-or-string": True,
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "allOf": [{"pattern": "^[0-9]+[KMG]?$"}, {"pattern": "^[1-9]+[0-9]*[KMG]?$"}],
    }
    values, _ = coverage.values_of(node)
    texts = [v for v in values if isinstance(v, str)]
    assert texts and all(re.fullmatch("[1-9]+[0-9]*[KMG]?", t) for t in texts)


def test_pruning_never_leaves_a_map_below_its_min_properties(validator):
    # An entry no proposal fixes (a rule the search cannot meet) takes its map with it when
    # dropping it alone would leave the map below ``minProperties`` (capsule's limits).
    unmeetable = _rule(
        "size(self.kind) == 37",
        {"type": "object", "required": ["kind"], "properties": {"kind": STRING}},
    )
    spec = {
        "type": "object",
        "properties": {
            "name": STRING,
            "limits": {"type": "object", "minProperties": 1, "additionalProperties": unmeetable},
        },
    }
    crd, entry = _one_rule_crd("pantries", spec)
    broken = {"spec": {"name": "east", "limits": {"jam": {"kind": "Odd"}}}}
    fixed, errors = repair.repaired(validator, crd, entry, broken)
    assert errors == [] and fixed is not None
    assert fixed["spec"].get("name") == "east"
    assert fixed["spec"].get("limits", {"absent": True})  # absent, never an empty map
