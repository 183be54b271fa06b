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


def accepted_writes(validator, crd: dict, entry: dict, kept):
    """What ``fill`` is handed to write with: each write's bodies repaired as the history
    does, ``kept(fixed)`` of each the local validator accepted gathered in ``sent``, and
    each write's size in ``writes``."""
    sent: list[dict] = []
    writes: list[int] = []

    def write(bodies: list[dict]) -> None:
        writes.append(len(bodies))
        for body in bodies:
            fixed, errors = repair.repaired(validator, crd, entry, body)
            if fixed is not None and not errors:
                sent.append(kept(fixed))

    return sent, writes, write


def test_every_branch_of_a_choice_is_held_by_an_accepted_object(validator):
    crd = yaml.safe_load((VOYAGE / "release-1.yaml").read_text())
    entry = crd["spec"]["versions"][0]
    schema = objects.body_schema(entry)
    built = coverage_objects.bodies(entry)
    sent, writes, write = accepted_writes(validator, crd, entry, objects.intent)
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
    # spec whole keeps nothing, with other branches or alone: split into its fields, one
    # object each; a leaf no object keeps is tried once more alone, then given up
    assert [len(w) for w in writes] == [1, 1, 3, 3]
    assert sum(map(len, writes)) <= branch_objects.budget(schema)


JOURNEYS = Path(__file__).resolve().parent / "data" / "journeys-crd.yaml"
# every leaf of each branch of the exactly-one-of (and of each branch's own oneOf)
BRANCH_PATHS = {
    "rail": {
        "spec.leg.rail.gauge",
        "spec.leg.rail.carriages[].number",
        "spec.leg.rail.carriages[].firstClass",
        "spec.leg.rail.ticket.paper.office",
        "spec.leg.rail.ticket.mobile.phone",
    },
    "sea": {
        "spec.leg.sea.vessel.name",
        "spec.leg.sea.vessel.flag",
        "spec.leg.sea.cabin.inside.deck",
        "spec.leg.sea.cabin.balcony.side",
    },
    "air": {
        "spec.leg.air.flight",
        "spec.leg.air.seat",
        "spec.leg.air.luggage.hold.kilograms",
        "spec.leg.air.luggage.cabinBag.wheels",
    },
}


def journeys_filled(validator) -> tuple[dict, dict, list[dict], list[int]]:
    """The Journey CRD, its version, the bodies the local validator accepted (as repaired:
    what the history sends) after the coverage objects and ``fill``, and each write's size."""
    crd = yaml.safe_load(JOURNEYS.read_text())
    entry = crd["spec"]["versions"][0]
    schema = objects.body_schema(entry)
    sent, writes, write = accepted_writes(validator, crd, entry, lambda fixed: fixed)
    built = coverage_objects.bodies(entry)
    write(built)
    branch_objects.fill(schema, built, lambda: [objects.intent(b) for b in sent], write)
    return crd, entry, sent, writes


def test_each_branch_of_an_exactly_one_of_over_three_is_held_by_an_accepted_object(validator):
    crd, entry, sent, writes = journeys_filled(validator)
    schema = objects.body_schema(entry)
    every = set().union(*BRANCH_PATHS.values())
    assert every <= set(coverage.declared(schema))
    held = set().union(*(coverage.held(schema, objects.intent(b)) for b in sent))
    assert held >= every, sorted(every - held)
    assert held == set(coverage.declared(schema))
    # no accepted object holds two branches of the choice (the rule holds; nothing packed)
    for body in sent:
        legs = [k for k in BRANCH_PATHS if k in body["spec"]["leg"]]
        assert len(legs) == 1, body
    # judged again, each object as sent is accepted whole
    manifests = [objects.manifest(crd, "v1", f"j-{i}", "gate", b) for i, b in enumerate(sent)]
    assert all(not errors for errors in validator.validate(crd, "v1", manifests))
    # bounded: the first objects kept one branch; the others took a round, one object per
    # branch of the choice (each branch's oneOf split by the coverage builder itself)
    assert len(writes) <= 3 and sum(writes[1:]) <= 6, writes


@pytest.mark.e2e
def test_the_api_server_accepts_every_branch_object(validator, cluster, make_crd, namespace):
    """What the local validator accepted, the API server accepts (a server-side dry run):
    the branch objects are what the history would write."""
    from crdharness.gate.api import call
    from crdharness.scenarios.versioned import unique_group

    sent = journeys_filled(validator)[2]
    crd = yaml.safe_load(JOURNEYS.read_text())
    group = unique_group("journeys")
    crd["spec"]["group"] = group
    crd["metadata"] = {"name": f"journeys.{group}"}
    make_crd(crd)
    refused = []
    where = f"/apis/{group}/v1/namespaces/{namespace}/journeys?dryRun=All"
    for i, body in enumerate(sent):
        manifest = objects.manifest(crd, "v1", f"journey-{i}", namespace, body)
        answer = call(cluster, "POST", where, manifest)
        if not answer.ok:
            refused.append(f"{answer.message}: {objects.intent(body)}")
    assert len(sent) >= 3 and refused == [], refused[:3]
