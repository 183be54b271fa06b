"""Which finding proves which change (``gate.checks.upgrade_decisions``), without a cluster:
a CEL rule added is proven by its own refusal only, not by another finding under its node."""

from crdharness.gate.checks.upgrade_decisions import _lost_before, _named_by
from crdharness.gate.checks.upgrade_objects import Written
from crdharness.gate.evidence.changes import Change

CRD = "buckets.gate.example.com"


def _rule(message: str = "", expression: str = "") -> Change:
    rule = {"rule": "!has(self.sts) || self.provider == 'aws'"}
    rule |= {"message": message} if message else {}
    rule |= {"messageExpression": expression} if expression else {}
    return Change(CRD, 1, "v1", "spec", "rule added", "x", values=(rule,))


def _object(*findings: str) -> Written:
    obj = Written(CRD, "v1", "b1", "ns")
    obj.findings = list(findings)
    return obj


LOST = "b1 written again at v1, read at v1beta1: spec.accessFrom: lost (was {})"
OWN = (
    'b1: re-create at v1: 422 Bucket "b1" is invalid: spec: Invalid value: "object": sts needs aws'
)
DEFAULT = (
    'b1: re-create at v1: 422 spec: Invalid value: "object": failed rule: '
    "!has(self.sts) || self.provider == 'aws'"
)


def test_another_finding_under_the_rules_node_does_not_prove_it():
    assert _named_by(_rule("sts needs aws"), [_object(LOST)]) is None


def test_the_rules_message_or_its_text_proves_it():
    assert _named_by(_rule("sts needs aws"), [_object(LOST, OWN)]) == OWN
    assert _named_by(_rule(), [_object(LOST, DEFAULT)]) == DEFAULT


def test_a_computed_message_falls_back_to_the_path():
    assert _named_by(_rule(expression="'sts needs ' + self.provider"), [_object(LOST)]) == LOST


def test_changes_other_than_rules_are_proven_by_their_path():
    change = Change(CRD, 1, "v1", "spec.mode", "enum value removed", "x")
    refused = 'b1: re-create at v1: 422 spec.mode: Unsupported value: "legacy"'
    assert _named_by(change, [_object(LOST, refused)]) == refused


def test_an_object_whose_value_the_earlier_release_already_lost_clears_nothing():
    change = Change(CRD, 1, "v1", "spec.accessFrom", "type changed", "x")
    untouched, lost_below, lost_above, elsewhere = (_object() for _ in range(4))
    lost_below.lost_earlier = {"spec.accessFrom[].key"}
    lost_above.lost_earlier = {"spec"}
    elsewhere.lost_earlier = {"spec.accessFromAll", "status.phase"}
    assert not _lost_before(change, untouched)
    assert _lost_before(change, lost_below)  # the value held was cut before the upgrade
    assert _lost_before(change, lost_above)
    assert not _lost_before(change, elsewhere)
    # a change of the whole object is not tied to one path
    assert not _lost_before(Change(CRD, 1, "v1", "", "scope changed", "x"), lost_above)
