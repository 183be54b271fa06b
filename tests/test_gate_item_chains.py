"""A rule over a list's items reaching below an item's own fields, met by repair
(``gate.evidence.item_chains``), on our own small schema, judged by the local validator."""

from crdharness.gate.evidence import coverage, item_chains, objects, repair
from tests.test_gate_repair import STRING, _one_rule_crd, _rule, validator  # noqa: F401

RULE = "self.boxes.all(b, !has(b.label.colour) || size(b.label.colour) == 0)"
LABEL = {"type": "object", "properties": {"name": STRING, "colour": STRING}}
BOX = {"type": "object", "required": ["label"], "properties": {"label": LABEL, "size": STRING}}
SHELF = _rule(RULE, {"type": "object", "properties": {"boxes": {"type": "array", "items": BOX}}})
SPEC = {"type": "object", "properties": {"shelves": {"type": "array", "items": SHELF}}}


def test_the_fields_a_rule_reaches_below_an_items_own_are_read_from_its_text():
    assert item_chains.chains(RULE) == [["label", "colour"]]
    assert item_chains.chains("self.all(x, has(x.dependsOn))") == []  # one level: not a chain


def test_a_field_below_every_items_own_is_left_out_and_the_rest_kept(validator):  # noqa: F811
    # Dropping each box's label does not meet the rule: has() below an absent field fails.
    crd, entry = _one_rule_crd("shelves", SPEC)
    box = {"label": {"name": "jam", "colour": "red"}, "size": "big"}
    broken = {"spec": {"shelves": [{"boxes": [box, box]}, {"boxes": [box]}]}}
    fixed, errors = repair.repaired(validator, crd, entry, broken)
    assert errors == [] and fixed is not None
    kept = {"label": {"name": "jam"}, "size": "big"}
    assert fixed["spec"]["shelves"] == [{"boxes": [kept, kept]}, {"boxes": [kept]}]
    schema = objects.body_schema(entry)
    assert coverage.held(schema, fixed) == {
        "spec.shelves[].boxes[].label.name",
        "spec.shelves[].boxes[].size",
    }
