"""A coverage object packs every branch of a choice; a CRD's rules (exactly one of, at most
one of) let repair keep one. The paths of the other branches get objects of their own
(``branch_objects``), judged by the API server's own rules run locally, for our own
rule-heavy Voyage (examples/gate/voyages) — a single-version CRD, which has no round trips
to try them again (issue 41)."""

from pathlib import Path

import pytest
import yaml

from crdharness.gate.evidence import branch_objects, coverage, coverage_objects, objects, repair
from crdharness.gate.evidence.local_validation import LocalValidator

VOYAGE = Path(__file__).resolve().parent.parent / "examples" / "gate" / "voyages"
EXCLUSIVE = {"spec.route.berth", "spec.route.berthName", "spec.payment.cash", "spec.payment.card"}


@pytest.fixture(scope="module")
def validator():
    with LocalValidator() as running:
        yield running


def test_every_branch_of_a_choice_is_held_by_an_accepted_object(validator):
    crd = yaml.safe_load((VOYAGE / "release-1.yaml").read_text())
    entry = crd["spec"]["versions"][0]
    schema = objects.body_schema(entry)
    built = coverage_objects.bodies(entry)
    sent: list[dict] = []
    writes: list[int] = []

    def write(bodies: list[dict]) -> None:
        writes.append(len(bodies))
        for body in bodies:
            fixed, errors = repair.repaired(validator, crd, entry, body)
            if fixed is not None and not errors:
                sent.append(objects.intent(fixed))

    write(built)
    wanted = set().union(*(coverage.held(schema, objects.intent(b)) for b in built))
    assert wanted >= EXCLUSIVE  # the coverage objects were built to hold every branch
    first = set().union(*(coverage.held(schema, b) for b in sent))
    assert not first >= EXCLUSIVE, first  # repair kept one branch of each choice
    branch_objects.fill(schema, built, lambda: sent, write)
    held = set().union(*(coverage.held(schema, b) for b in sent))
    assert held >= EXCLUSIVE, sorted(EXCLUSIVE - held)
    assert branch_objects.unheld(schema, built, sent) == set()
    assert sum(writes[1:]) <= branch_objects.budget(schema)  # bounded


def test_nothing_more_is_written_when_the_coverage_objects_went_through_whole():
    schema = {
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}},
    }
    built = [{"spec": {"a": "gate-value"}}]
    writes: list[list[dict]] = []
    branch_objects.fill(schema, built, lambda: built, writes.append)
    assert writes == []


def test_a_path_no_object_can_keep_costs_a_bounded_few_objects():
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {k: {"type": "string"} for k in ("a", "b", "c")},
            }
        },
    }
    built = coverage_objects.packed(schema)
    writes: list[list[dict]] = []
    branch_objects.fill(schema, built, lambda: [], writes.append)  # every object refused
    # one round packed by subtree (spec.a, spec.b, spec.c) keeps nothing: straight to one
    # path per object, then it stops
    assert [len(w) for w in writes] == [3, 3]
    assert sum(map(len, writes)) <= branch_objects.budget(schema)
