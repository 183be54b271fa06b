"""Paths a CEL rule forbids outright (``gate.evidence.forbidden``) are no paths to hold: no
valid object holds them, so none is built for them and coverage does not count them; rules
that only make a choice (at most one of, an implication) forbid nothing (issue 41)."""

import pytest

from crdharness.gate.evidence import coverage, forbidden

STRING = {"type": "string"}


def _ruled(node: dict, *rules: str) -> dict:
    return {**node, "x-kubernetes-validations": [{"rule": r, "message": "no"} for r in rules]}


DOCK = {
    "type": "object",
    "properties": {
        "name": STRING,
        "mode": STRING,
        "crane": {
            "type": "object",
            "properties": {"retry": {"type": "object", "properties": {"timeout": STRING}}},
        },
        "tags": {"type": "array", "items": STRING},
        "berths": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "cost": {
                        "type": "object",
                        "properties": {"fee": {"type": "object", "properties": {"n": STRING}}},
                    },
                    "size": STRING,
                },
            },
        },
    },
}


@pytest.mark.parametrize(
    ("rules", "refused"),
    [
        (["!has(self.name)"], {("name",)}),
        (["!has(self.crane.retry.timeout)"], {("crane", "retry", "timeout")}),
        # guarded by the path itself or an object above it, nested
        (
            [
                "has(self.crane) ? (has(self.crane.retry) ? !has(self.crane.retry.timeout)"
                " : true) : true"
            ],
            {("crane", "retry", "timeout")},
        ),
        (["!has(self.crane) || !has(self.crane.retry)"], {("crane", "retry")}),
        # a list's items emptied
        (["!has(self.tags) || size(self.tags) == 0"], {("tags", "[]")}),
        (["!has(self.tags) || self.tags.size() == 0"], {("tags", "[]")}),
        # a field pinned by one rule, another asks a different value with a field
        (["self.mode == 'Full'", "has(self.name) ? self.mode == 'Prefix' : true"], {("name",)}),
        # choices, not prohibitions
        (["!has(self.name) || !has(self.mode)"], set()),
        (["has(self.name) ? !has(self.mode) : true"], set()),
        (["!(has(self.name) && has(self.mode))"], set()),
        (["has(self.name) ? self.mode == 'Prefix' : true"], set()),
        (["self.mode == 'Full'", "has(self.name) ? self.mode == 'Full' : true"], set()),
        (["has(self.tags) ? size(self.tags) == 0 : false"], set()),
    ],
)
def test_what_a_rule_forbids_outright(rules, refused):
    assert forbidden.below(_ruled(DOCK, *rules)) == refused


def test_every_item_of_a_list_a_rule_forbids_a_field_of():
    berths = _ruled(
        DOCK["properties"]["berths"],
        "self.all(b, !has(b.cost) || !has(b.cost.fee))",
    )
    assert forbidden.below(berths) == {("[]", "cost", "fee")}


def test_forbidden_paths_are_not_declared():
    spec = _ruled(DOCK, "self.all(b, !has(b.size))", "!has(self.tags) || size(self.tags) == 0")
    spec["properties"]["berths"] = _ruled(
        DOCK["properties"]["berths"], "self.all(b, !has(b.cost) || !has(b.cost.fee))"
    )
    schema = {"type": "object", "properties": {"spec": spec}}
    declared = set(coverage.declared(schema))
    assert "spec.tags[]" not in declared
    assert "spec.berths[].cost.fee.n" not in declared
    assert {"spec.name", "spec.mode", "spec.crane.retry.timeout"} <= declared
    # ``self.all`` on spec (an object) is not a list's rule: berths[].size stays declared
    assert "spec.berths[].size" in declared
