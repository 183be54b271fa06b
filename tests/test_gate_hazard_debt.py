"""A convertibility failure the same-write check cannot decide, known by the release before's
hazards (``evidence.hazard_errors``), without a cluster: the server's messages as kube-apiserver
words them, the forms as ``round_trips`` and ``upgrade_rewrites`` record them."""

from __future__ import annotations

from crdharness.gate.checks import debt
from crdharness.gate.evidence.hazard_errors import Hazards, field_errors
from crdharness.gate.results import CheckResult, Form, Found, RefusedWrite

PAIR = "kilns.gate.example.com v1->v2"
CRD = "kilns.gate.example.com"
# kueue v0.16.6's own words for a v1beta1 topologyAssignment converted without `slices`
RULE = (
    'Invalid value: "object": no such key: slices evaluating rule: valuesPerLevel must have '
    "the same length as the number of levels in this TopologyAssignment"
)
WORDS = RULE.replace('"object"', "…")  # matched without the value refused


def refused(name: str, *errors: str) -> str:
    """A 422's message as kube-apiserver words it: one field error bare, several in brackets
    with the note that more rules were not run."""
    if len(errors) == 1:
        return f'Kiln.gate.example.com "{name}" is invalid: {errors[0]}'
    note = (
        "<nil>: Invalid value: null: some validation rules were not checked because the "
        "object was invalid; correct the existing errors to complete validation"
    )
    return f'Kiln.gate.example.com "{name}" is invalid: [{", ".join([*errors, note])}]'


def test_field_errors_are_read_as_the_schema_spells_each_field_with_the_servers_words():
    one = refused("r1-v2-9", f"status.assignments[0].topology: {RULE}")
    assert field_errors(one) == {("status.assignments[].topology", WORDS)}
    several = refused(
        "rt-v1-v2-20",
        "spec.sets[0].containers: Required value",
        "spec.shelf: Invalid value: \"a, b: c\": should match '^[a-z]+$'",
    )
    assert field_errors(several) == {
        ("spec.sets[].containers", "Required value"),
        ("spec.shelf", "Invalid value: …: should match '^[a-z]+$'"),
    }
    assert field_errors('admission webhook "x" denied the request: no') == frozenset()


def hazards(*messages: str, ratcheted: bool = True, version: str = "v2") -> Hazards:
    """Release 1's (index 0) hazards at ``version``: its own objects' writes refused so."""
    known = Hazards()
    for message in messages:
        known.add(0, CRD, version, RefusedWrite(ratcheted, message))
    return known


def failure(message: str, ratcheted: bool = True) -> CheckResult:
    """The candidate's convertibility row: one object read at v2 and written back (an
    update) or created again (not ratcheted), refused with ``message``; release 1's own round
    trips never wrote it."""
    result = CheckResult("convertibility", PAIR)
    result.counts = {"created": 30}
    evidence = f"an object read at v2 cannot be written back at v2: {message}"
    found = Found(
        Form(),
        evidence,
        [f"PUT at v2: 422 {message}"],
        [("o", {})],
        "drawn",
        RefusedWrite(ratcheted, message),
    )
    result.fail(evidence, *found.details, found=[found])
    return result


def settle(result: CheckResult, known: Hazards) -> list:
    forms = {f"convertibility:{PAIR}": [Form(frozenset({"spec.other"}))]}  # unrelated
    writes = {f"convertibility:{PAIR}": ({"drawn": None}, {"sample": None})}
    return debt.settle([result], forms, 1, writes=writes, hazards=known)


def test_a_write_refused_as_release_1_refused_its_own_objects_is_its_debt():
    known = hazards(refused("r1-v2-9", f"status.assignments[0].topology: {RULE}"))
    result = failure(refused("rt-v1-v2-96", f"status.assignments[0].topology: {RULE}"))
    debts = settle(result, known)
    assert [(d.check, sorted(d.form.paths), d.same_object) for d in debts] == [
        ("convertibility", ["status.assignments[].topology"], False)
    ]
    assert debts[0].evidence.startswith(
        "release 1's own objects were refused at v2 for status.assignments[].topology in the "
        "same words (its hazards, see the report)"
    ), debts[0].evidence
    assert result.passed is True, result.evidence
    assert "release 1's debt, not a finding" in result.evidence


def test_a_new_rule_on_the_same_field_says_other_words_and_stays_a_finding():
    known = hazards(refused("r1-v2-9", f"status.assignments[0].topology: {RULE}"))
    other = 'Invalid value: "object": a topology needs a level'
    result = failure(refused("rt-v1-v2-96", f"status.assignments[0].topology: {other}"))
    assert not settle(result, known)
    assert result.passed is False
    assert any("the per-object check was not made" in d for d in result.details)


def test_every_field_error_must_be_release_1s_and_at_the_same_version():
    known = hazards(refused("r1-v2-9", "spec.sets[0].containers: Required value"))
    both = refused(
        "rt-v1-v2-20", "spec.sets[0].containers: Required value", "spec.ref: Required value"
    )
    assert not settle(failure(both), known)  # spec.ref is not among them
    elsewhere = hazards(refused("r1-v1-9", "spec.ref: Required value"), version="v1")
    assert not settle(failure(refused("rt-v1-v2-3", "spec.ref: Required value")), elsewhere)


def test_a_refused_re_create_is_no_evidence_about_an_update_the_other_way_round_it_is():
    message = refused("r1-v2-9", "spec.shelf: Required value")
    recreated = hazards(message, ratcheted=False)
    assert not settle(failure(message, ratcheted=True), recreated)  # ratcheting may let it by
    updated = hazards(message, ratcheted=True)
    assert settle(failure(message, ratcheted=False), updated)


def test_an_object_release_1_let_through_stays_a_finding_whatever_its_hazards_say():
    message = refused("rt-v1-v2-96", f"status.assignments[0].topology: {RULE}")
    known = hazards(message)
    result = failure(message)
    forms = {f"convertibility:{PAIR}": [Form(frozenset({"spec.other"}))]}
    writes = {f"convertibility:{PAIR}": ({"drawn": None}, {"drawn": None})}  # went through
    assert not debt.settle([result], forms, 1, writes=writes, hazards=known)
    assert result.passed is False
    assert result.evidence.startswith("the same write went through under release 1")


def test_the_same_rule_refusing_another_value_says_the_same_words():
    known = hazards(refused("r1-v1-3", 'spec.glazing: Invalid value: "\\x0f©": starts with g'))
    result = failure(refused("rt-v1-v2-25", 'spec.glazing: Invalid value: "matte": starts with g'))
    assert [sorted(d.form.paths) for d in settle(result, known)] == [["spec.glazing"]]
