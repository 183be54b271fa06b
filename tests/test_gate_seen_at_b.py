"""``seen_at_b``: which readings at B it probes, and where its answer goes (a note of the
pair, or under ``strict`` the round trip's failure naming the path)."""

from __future__ import annotations

from crdharness.gate import diff
from crdharness.gate.checks import seen_at_b
from crdharness.gate.checks.pair_record import PairRecord
from crdharness.gate.checks.respelling import TOUCH
from crdharness.gate.checks.round_trip_steps import Steps


def with_annotations(**annotations: str) -> dict:
    return {"metadata": {"name": "x", "annotations": annotations}, "spec": {}}


def test_only_annotations_the_webhook_added_make_a_probe():
    sent = with_annotations(**{"user.io/note": "mine"})
    read = with_annotations(**{"user.io/note": "mine", TOUCH: "v2", "hook.io/v1-spec": "{}"})
    assert seen_at_b.added_keys(sent, read) == ["hook.io/v1-spec"]
    assert seen_at_b.added_keys(sent, with_annotations(**{"user.io/note": "mine"})) == []


def hidden() -> seen_at_b.Hidden:
    found = [
        diff.Difference("spec.cors.maxAge", "changed", "1.5s", "1s"),
        diff.Difference("spec.mutators[1]", "lost", {"handler": "hydrator"}),
        diff.Difference("spec.mutators[2]", "lost", {"handler": "id_token"}),
    ]
    notes = [f"v1->v2: {d.describe()} (v2 shows ...)" for d in found]
    return seen_at_b.Hidden(found, notes, ["hook.io/v1-spec"])


def test_a_path_held_only_in_annotations_is_noted_once_and_is_no_finding():
    seen, steps = PairRecord(), Steps({})
    seen_at_b.settle(hidden(), seen, steps, False, ("v1", "v2"))
    seen_at_b.settle(hidden(), seen, steps, False, ("v1", "v2"))  # another object, same paths
    assert steps.failure([]) is None
    assert set(seen.hidden) == {"spec.cors.maxAge", "spec.mutators[]"}
    assert len(seen.unseen_at_b) == 2, seen.unseen_at_b
    merged = PairRecord()
    merged.add(seen)
    assert merged.hidden == seen.hidden and merged.unseen_at_b == seen.unseen_at_b


def test_under_strict_it_is_the_round_trips_finding_naming_the_paths():
    seen, steps = PairRecord(), Steps({})
    seen_at_b.settle(hidden(), seen, steps, True, ("v1", "v2"))
    failure = steps.failure([])
    assert failure is not None and not seen.unseen_at_b
    assert failure.paths == frozenset({"spec.cors.maxAge", "spec.mutators[]"})
    assert "hook.io/v1-spec" in failure.evidence and failure.at_b == failure.paths


def test_a_probe_that_could_not_decide_is_said():
    seen, steps = PairRecord(), Steps({})
    said = 'not decided: created again at v2 without them: 422 "rt-1" no'
    seen_at_b.settle(said, seen, steps, False, ("v1", "v2"), "rt-1")
    assert seen.unseen_at_b == [
        "v1->v2: not decided: created again at v2 without them: 422 the object no"
    ]
    assert not seen.hidden and seen.counts[seen_at_b.UNDECIDED] == 1  # said on "cleared" rows


def test_a_status_b_would_not_take_on_a_new_object_is_said_as_not_compared():
    seen, steps = PairRecord(), Steps({})
    left = seen_at_b.Hidden([], [], ["hook.io/v1-spec"], "status not compared: 422 no")
    seen_at_b.settle(left, seen, steps, False, ("v1", "v2"))
    assert seen.unseen_at_b == ["v1->v2: status not compared: 422 no"]
    assert not seen.hidden and not seen.counts[seen_at_b.UNDECIDED]
