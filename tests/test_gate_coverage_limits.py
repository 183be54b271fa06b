"""What real CRDs ask of the coverage objects (``gate.evidence.coverage_objects``) and of their
retries (``gate.checks.path_coverage``): ``minProperties``/``maxProperties`` (one provider of
many set at a time), a webhook that fails on a value the schema allows (a Go duration's
``type: string`` field), and a refusal named for what refused it, with the true count of
objects tried. The planner is run against scripted outcomes of the round trip (which objects
it builds and retries, and what it concludes from each answer); the same behaviours run
against a real API server and webhook in ``examples/gate/couriers`` (test_gate_examples)."""

from __future__ import annotations

import copy
from types import SimpleNamespace

import pytest

from crdharness.gate import go_durations
from crdharness.gate.api import Answer
from crdharness.gate.checks import path_coverage
from crdharness.gate.checks.pair_record import PairRecord
from crdharness.gate.evidence import coverage, coverage_objects, objects, refusal
from crdharness.gate.results import DataChanged, NotConvertible


def obj(properties: dict, **more) -> dict:
    return {"type": "object", "properties": properties, **more}


ONE = {"minProperties": 1, "maxProperties": 1}  # exactly one field set
TOO_FEW = (
    "spec.vault.backend: Invalid value: 0: spec.vault.backend in body should have at least 1 "
    "properties"
)
FAILED = "conversion webhook for gate.example.com/v1, Kind=Thing failed: time: invalid duration"
SPEC = obj(
    {
        "owner": {"type": "string"},
        "interval": {"type": "string"},  # a Go metav1.Duration behind it
        "vault": obj(
            {
                "backend": obj(
                    {
                        "alpha": obj({"region": {"type": "string"}}, required=["region"]),
                        "beta": obj(
                            {
                                "url": {"type": "string"},
                                "auth": obj(
                                    {
                                        "token": obj({"name": {"type": "string"}}),
                                        "cert": obj({"key": {"type": "string"}}),
                                    },
                                    **ONE,
                                ),
                            }
                        ),
                        "gamma": obj({"zone": {"type": "string", "enum": ["a", "b"]}}),
                    },
                    **ONE,
                ),
            },
            required=["backend"],
        ),
    },
    required=["vault"],
    **{"x-kubernetes-validations": [{"rule": "self.owner != 'nobody'", "message": "no owner"}]},
)
ENTRY = {"name": "v1", "schema": {"openAPIV3Schema": obj({"spec": SPEC})}}
SCHEMA = objects.body_schema(ENTRY)


def one_set(body: dict, *path: str) -> bool:
    node = body
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return True  # absent: nothing to count
        node = node[part]
    return isinstance(node, dict) and len(node) == 1


def test_an_object_with_min_and_max_properties_one_gets_one_object_per_field():
    built = coverage_objects.packed(SCHEMA)
    for body in built:
        assert one_set(body, "spec", "vault", "backend"), body
        assert one_set(body, "spec", "vault", "backend", "beta", "auth"), body
    held = set().union(*(coverage.held(SCHEMA, b) for b in built))
    assert held == set(coverage.declared(SCHEMA))


def test_a_single_path_object_fills_min_properties_and_gives_way_to_the_path():
    alone = coverage_objects.single(SCHEMA, "spec.owner", "me")
    assert alone["spec"]["vault"] == {"backend": {"alpha": {"region": "gate-value"}}}
    sample = {"spec": {"vault": {"backend": {"alpha": {"region": "eu"}}}}}
    over = coverage_objects.single(SCHEMA, "spec.vault.backend.beta.auth.cert.key", "k", sample)
    assert over["spec"]["vault"]["backend"] == {"beta": {"auth": {"cert": {"key": "k"}}}}


def test_many_fields_one_at_a_time_go_past_the_value_cap():
    many = obj({"one": obj({f"p{i:02}": obj({"x": {"type": "string"}}) for i in range(30)}, **ONE)})
    built = coverage_objects.packed(
        objects.body_schema(ENTRY | {"schema": {"openAPIV3Schema": obj({"spec": many})}})
    )
    assert len(built) == 30 > coverage_objects.MAX_OBJECTS
    assert {next(iter(b["spec"]["one"])) for b in built} == {f"p{i:02}" for i in range(30)}


def test_who_refused_is_read_from_the_servers_message():
    assert refusal.reason(SCHEMA, TOO_FEW, 1) == (
        f"the schema's minProperties refused the only object tried with it alone: {TOO_FEW}"
    )
    rule = 'spec: Invalid value: "object": no owner'
    assert refusal.reason(SCHEMA, rule, 3).startswith(
        "a CEL rule (x-kubernetes-validations) refused all 3 objects tried with it alone; the "
        "last: spec:"
    )
    assert refusal.who(SCHEMA, f'{FAILED} "x"') == "the conversion webhook failed on"
    assert refusal.who(SCHEMA, "something else") == "the API server refused"
    # cluster-api's Cluster: valid at v1beta2, refused where it is written back at v1beta1
    # (v1beta1's required, not v1beta2's): said as a conversion's failure, the webhook's
    # as the webhook's
    back = (
        "an object read at v1beta1 cannot be written back at v1beta1: Cluster "
        '"c" is invalid: spec.topology.class: Required value'
    )
    assert refusal.reason(SCHEMA, back, 6, unconverted=True).startswith(
        "a conversion failed on all 6 objects tried with it alone; the last: an object read"
    )
    assert refusal.reason(SCHEMA, back, 6).startswith("the schema's required refused all 6")
    hook = f'an object valid at v1 cannot be read at v1beta1: {FAILED} "x"'
    assert refusal.reason(SCHEMA, hook, 1, unconverted=True).startswith(
        "the conversion webhook failed on the only object"
    )


def scripted_round_trip(
    refuse_owner: bool = False,
    lose_owner: bool = False,
    durations: bool = True,
    stored: bool = False,
    lose_annotations: bool = False,
):
    """An attempt as ``round_trips`` makes it: the API server checks backend/auth's one
    field (and, if asked, refuses every owner by a CEL rule); the webhook decodes
    ``interval`` as a Go duration; what gets through is held."""
    tried: list[dict] = []

    def attempt(body: dict, record: PairRecord, refusals: list):
        tried.append(body)
        spec = body.get("spec", {})
        backend = spec.get("vault", {}).get("backend", {})
        if len(backend) != 1:
            refusals.append(Answer(422, {"message": TOO_FEW}, [], ""))
            return None
        if refuse_owner and "owner" in spec:
            refusals.append(
                Answer(422, {"message": 'spec: Invalid value: "object": no owner'}, [], "")
            )
            return None
        if durations and "interval" in spec and go_durations.parse(spec["interval"]) is None:
            message = f'{FAILED} "{spec["interval"]}"'
            if stored:  # created at the storage version: the read at the other one fails
                record.stopped |= coverage.held(SCHEMA, objects.intent(body))
                return NotConvertible(
                    f"an object valid at v1 cannot be read at v1beta1: {message}", [], []
                )
            failure = NotConvertible(f"an object valid at v1 cannot be created: {message}", [], [])
            failure.answer = Answer(500, {"message": message}, [], "")
            refusals.append(failure.answer)
            return failure
        held = coverage.held(SCHEMA, objects.intent(body))
        if lose_annotations and body.get(objects.METADATA, {}).get("annotations"):
            record.stopped |= held
            return DataChanged("lost metadata.annotations", [], [], {"metadata.annotations"})
        if lose_owner and "owner" in spec:  # the round trip stops at the first loss
            record.held |= {"spec.owner"}
            record.stopped |= held - {"spec.owner"}
            return DataChanged("lost spec.owner", [], [], {"spec.owner"})
        record.held |= held
        return None

    return attempt, tried


CTX = SimpleNamespace(config=SimpleNamespace(concurrency=2))


@pytest.mark.parametrize("stored", [False, True], ids=["on create", "on read"])
def test_a_webhook_failing_on_a_plain_string_gets_go_texts_and_every_path_is_held(stored):
    attempt, tried = scripted_round_trip(stored=stored)
    seen = PairRecord()
    found, refused, unconverted = path_coverage.exercise(CTX, ENTRY, [], attempt, seen)
    assert found and all(isinstance(f, NotConvertible) for f in found)  # the finding stays
    assert refused == {} and unconverted == set()  # held in the end: behind nothing
    assert path_coverage.judge(ENTRY, seen.held, refused, seen.stopped).uncovered == {}
    assert [b["spec"]["interval"] for b in tried if "interval" in b["spec"]][-1] == "1h"


def test_a_path_refused_every_time_names_the_rule_and_the_objects_really_tried():
    attempt, tried = scripted_round_trip(refuse_owner=True)
    seen = PairRecord()
    _, refused, unconverted = path_coverage.exercise(CTX, ENTRY, [], attempt, seen)
    alone = [b for b in tried if "owner" in b["spec"] and "interval" not in b["spec"]]
    assert set(refused) == {"spec.owner"}
    assert unconverted == set()  # refused at creation: behind no failure of a round trip
    assert refused["spec.owner"].startswith(
        f"a CEL rule (x-kubernetes-validations) refused all {len(alone)} objects tried with it "
        "alone; the last:"
    )
    assert len(alone) > 1  # its own value, then the other strings


def test_paths_a_round_trip_stopped_short_of_are_tried_again_on_their_own():
    attempt, tried = scripted_round_trip(lose_owner=True, durations=False)
    seen = PairRecord()
    found, refused, _ = path_coverage.exercise(CTX, ENTRY, [], attempt, seen)
    assert any(isinstance(f, DataChanged) for f in found) and refused == {}
    # The first object's other paths were not judged with it, then each was, alone.
    assert "spec.interval" in seen.stopped and "spec.interval" in seen.held
    assert path_coverage.judge(ENTRY, seen.held, refused, seen.stopped).uncovered == {}
    # Packed again (many paths an object: here one holds them all), not one by one.
    again = tried[len(coverage_objects.bodies(ENTRY)) :]
    assert len(again) == 1 and "owner" not in again[0]["spec"], again
    assert objects.METADATA not in again[0] and "interval" in again[0]["spec"]


def test_a_value_the_webhook_fails_on_every_time_is_named_with_its_message():
    bounded = copy.deepcopy(ENTRY)  # "1h" and "1" too short; a timestamp is no duration
    spec = bounded["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["properties"]["interval"]["minLength"] = 5
    attempt, tried = scripted_round_trip(stored=True)
    seen = PairRecord()
    _, refused, unconverted = path_coverage.exercise(CTX, bounded, [], attempt, seen)
    # The path alone (or beside the value a rule names): not the objects packed again.
    alone = [
        b for b in tried if "interval" in b["spec"] and b["spec"].get("owner", "nobody") == "nobody"
    ]
    assert set(refused) == {"spec.interval"} and len(alone) > 1
    # every object holding it was valid at v1 and failed its conversion: behind that failure
    assert unconverted == {"spec.interval"}
    assert refused["spec.interval"].startswith(
        f"the conversion webhook failed on all {len(alone)} objects tried with it alone; the "
        "last: an object"
    )
    assert refused["spec.interval"].endswith(
        'time: invalid duration "' + alone[-1]["spec"]["interval"] + '"'
    )


def test_a_path_stopped_short_of_is_tried_without_the_samples_fields_first():
    # The webhook loses every annotation: the coverage objects (labelled and annotated)
    # and the user's sample stop there; the paths alone, on nothing of the sample, do not.
    attempt, tried = scripted_round_trip(durations=False, lose_annotations=True)
    sample = objects.sample_body(
        {"metadata": {"annotations": {"team": "mail"}}, "spec": {"vault": {"backend": {}}}}
    )
    seen = PairRecord()
    found, refused, _ = path_coverage.exercise(CTX, ENTRY, [sample], attempt, seen)
    assert found and refused == {}
    assert path_coverage.judge(ENTRY, seen.held, refused, seen.stopped).uncovered == {}
    assert any(objects.METADATA not in b for b in tried)  # no sample, no annotations


def test_a_failure_inside_a_preserved_subtree_is_its_leafs_not_a_stop_for_it():
    from crdharness.gate.checks.round_trip_steps import below_a_loss, judged_with

    held = {"spec.route.routes[]", "spec.route.name", "spec.deep.a"}
    failed = frozenset({"spec.route.routes[0].gateUnknown", "spec.deep"})
    assert judged_with(held, failed) == {"spec.route.routes[]"}
    # spec.deep was lost whole: what the webhook does with spec.deep.a is unknown (issue 43)
    assert below_a_loss(held, failed) == {"spec.deep.a"}


def test_a_value_laid_under_a_sample_with_an_empty_list_on_its_path():
    # Outside trial (43): a sample's `mutators: []` on the path crashed the builder.
    from crdharness.gate.evidence import coverage_objects

    item = {"type": "object", "properties": {"handler": {"type": "string"}}}
    rules = {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"mutators": {"type": "array", "items": item}},
        },
    }
    schema = {
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {"rules": rules}}},
    }
    body = coverage_objects.single(
        schema, "spec.rules[].mutators[].handler", "x", {"spec": {"rules": [{"mutators": []}]}}
    )
    assert body["spec"]["rules"][0]["mutators"][0]["handler"] == "x"


STRING_ = {"type": "string"}

SELECTOR = obj(
    {
        "allowed": {"type": "array", "items": {"type": "string"}},
        "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}},
    }
)


def test_below_a_field_the_other_version_lacks_lost_whole_is_judged_with_it():
    # Outside trial (43): a v2 `classes` selector the v1 schema has no field for was lost
    # whole on every object; its keys were "not held" for ever, and a pair whose every
    # loss was release 1's debt stayed "not proven". No value of a key could keep it at v1.
    from crdharness.gate.checks.round_trip_steps import below_a_loss, lost_beyond_b

    route = obj({"key": {"type": "string"}})
    classes = obj({"allowed": SELECTOR["properties"]["allowed"]})
    b_schema = obj({"spec": obj({"classes": classes, "route": route})})
    held = {"spec.classes.allowed[]", "spec.classes.matchLabels.*", "spec.route.key"}
    failed = frozenset({"spec.classes.matchLabels", "spec.route"})
    below = below_a_loss(held, failed)
    assert below == {"spec.classes.matchLabels.*", "spec.route.key"}
    # spec.route is declared at v1 (an item dropped for one value may keep another): not judged
    assert lost_beyond_b(below, failed, b_schema, "v1") == {
        "spec.classes.matchLabels.*": "lost whole with spec.classes.matchLabels, which v1 "
        "does not declare"
    }
    # a field v1 lacks that only changed (not lost) judges nothing below it
    assert lost_beyond_b(below, frozenset(), b_schema, "v1") == {}


def test_a_round_trip_failure_names_what_was_lost_whole_apart_from_what_changed():
    from crdharness.gate import diff
    from crdharness.gate.checks.round_trip_steps import Steps

    steps = Steps(obj({}))
    steps.add(
        "v2->v1->v2 changed {paths}",
        [
            diff.Difference("spec.classes.matchLabels", "lost", {"a": "b"}),
            diff.Difference("spec.owners[0].name", "changed", "x", "y"),
        ],
    )
    failure = steps.failure([])
    assert failure is not None
    assert failure.paths == {"spec.classes.matchLabels", "spec.owners[].name"}
    assert failure.lost == {"spec.classes.matchLabels"}


def test_paths_lost_whole_with_a_field_the_other_version_lacks_are_judged_and_said():
    from crdharness.gate.results import CheckResult

    entry = {
        "name": "v2",
        "schema": {"openAPIV3Schema": obj({"spec": obj({"classes": SELECTOR})})},
    }
    why = "lost whole with spec.classes.matchLabels, which v1 does not declare"
    found = path_coverage.judge(
        entry,
        {"spec.classes.allowed[]"},
        {},
        {"spec.classes.matchLabels.*"},
        {"spec.classes.matchLabels.*": why},
    )
    assert found.uncovered == {} and found.exercised == 2
    result = CheckResult("round-trip", "things v2->v1")
    result.evidence = "3 objects equal"
    path_coverage.settle(result, found, "v2")
    assert result.passed, result
    assert result.evidence == (
        "3 objects equal; schema paths 2/2 held (1 of them only lost whole with a field the "
        "other version does not declare, that field's loss named above)"
    )
    assert f"judged without going round: spec.classes.matchLabels.*: {why}" in result.details
    assert found.as_json()["lost_whole"] == {"spec.classes.matchLabels.*": why}


def test_a_path_no_object_held_below_a_field_pruned_at_b_is_judged_with_that_field():
    # Corpus (kueue v0.19.2 upgraded to itself): v1beta2's `slices` (v1beta1 has no such
    # field) was lost whole on every object; below it a rule wants exactly one of `universal`
    # and `individual`, so no object held `individual`'s paths, and the pair, whose loss of
    # `slices` is release 1's debt, stayed "not proven" for them. Under strategy None the API
    # server prunes `slices` at v1beta1 whatever it holds.
    choice = obj({"universal": {"type": "string"}, "individual": obj({"prefix": STRING_})})
    entry = {
        "name": "v1beta2",
        "schema": {"openAPIV3Schema": obj({"spec": obj({"slices": choice, "kept": STRING_})})},
    }
    held = {"spec.kept"}
    lost_whole = {"spec.slices.universal": "lost whole with spec.slices, which v1beta1 ..."}
    gone = {"spec.slices": "v1beta1"}
    found = path_coverage.judge(entry, held, {}, set(), lost_whole, gone=gone)
    assert found.uncovered == {}
    assert found.lost_whole["spec.slices.individual.prefix"] == (
        "lost whole with spec.slices, which v1beta1 does not declare (no object held this path "
        "itself: that field is pruned at v1beta1 whatever it holds)"
    )
    # Without a loss of that field seen (or through a webhook, which records none): not held.
    alone = path_coverage.judge(entry, held, {}, set(), lost_whole)
    assert list(alone.uncovered) == ["spec.slices.individual.prefix"]
    # A field lost whole that is not an ancestor judges nothing.
    other = path_coverage.judge(entry, held, {}, set(), lost_whole, gone={"spec.kep": "v1"})
    assert list(other.uncovered) == ["spec.slices.individual.prefix"]


def test_the_fields_gone_are_those_b_does_not_declare():
    from crdharness.gate.checks.round_trip_steps import fields_gone

    b_schema = obj({"spec": obj({"route": obj({"key": STRING_})})})
    lost = frozenset({"spec.classes", "spec.route", "spec.route.key.x"})
    assert fields_gone(lost, b_schema) == ["spec.classes", "spec.route.key.x"]


def test_a_path_stopped_below_its_own_lost_parent_is_said_so_with_what_would_show_it():
    # Outside trial (43): api-gateway's v1beta1 read wipes the spec of every v2 object;
    # its 35 paths read "stopped at a failure on another path first (… give a sample)",
    # though the other path was their own parent and no sample could hold them.
    from crdharness.gate.checks.round_trip_steps import parents_lost

    failed = frozenset({"spec.rules", "spec.rules[0].path"})
    held = {"spec.rules[].service.name", "spec.rules[].path", "spec.gateway"}
    assert parents_lost(held, failed) == {
        "spec.rules[].service.name": "spec.rules",
        "spec.rules[].path": "spec.rules",
    }
    entry = {
        "name": "v2",
        "schema": {"openAPIV3Schema": obj({"spec": obj({"gateway": {"type": "string"}})})},
    }
    found = path_coverage.judge(
        entry, set(), {}, {"spec.gateway"}, parents={"spec.gateway": "spec"}
    )
    assert found.uncovered == {
        "spec.gateway": "its objects lost spec whole first (named above): it shows once the "
        "webhook keeps spec, or with a sample it keeps spec for"
    }


def test_a_path_whose_object_stopped_short_is_tried_on_what_b_requires():
    # cluster-api's Cluster v1beta1->v1beta2: a status path's object alone (no spec) went
    # round but stopped at another failure (v1beta2 requires a spec); a rule refused the
    # coverage object. Its other values would stop the same way: it is tried on the least
    # v1beta2 requires instead, and held.
    status = obj({"note": {"type": "string"}})
    a = {"name": "v1beta1", "schema": {"openAPIV3Schema": obj({"spec": obj({}), "status": status})}}
    a["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"] = {
        "paused": {"type": "boolean"}
    }
    b = copy.deepcopy(a)
    b["name"] = "v1beta2"
    b["schema"]["openAPIV3Schema"]["required"] = ["spec"]
    b["schema"]["openAPIV3Schema"]["properties"]["spec"]["minProperties"] = 1
    schema = objects.body_schema(a)
    tried: list[dict] = []

    def attempt(body: dict, record: PairRecord, refusals: list):
        tried.append(body)
        held = coverage.held(schema, objects.intent(body))
        if objects.METADATA in body:  # the coverage object: a rule spanning its fields
            refusals.append(Answer(422, {"message": "spec: Invalid value: no"}, [], ""))
            return None
        if "spec" not in body:  # round, but stopped at another path's failure first
            record.stopped |= held
            return DataChanged("lost status.gone", [], [], {"status.gone"})
        record.held |= held
        return None

    seen = PairRecord()
    _, refused, unconverted = path_coverage.exercise(CTX, a, [], attempt, seen, b)
    assert "status.note" in seen.held and refused == {} and unconverted == set()
    note = [body for body in tried if "note" in body.get("status", {})]
    assert note[-1]["spec"] == {"paused": True}  # the least B requires, of A's fields
    # without B: the path stays stopped short of, its other values not tried in vain
    seen, tried[:] = PairRecord(), []
    path_coverage.exercise(CTX, a, [], attempt, seen)
    assert "status.note" not in seen.held and "status.note" in seen.stopped
