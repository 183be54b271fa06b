"""Schema path coverage: every declared leaf path of a version's schema, at any depth, and
the coverage objects built to hold them all (``gate.evidence.coverage``,
``coverage_objects``), the verdict a pair gets below 100% (``checks.path_coverage``), and
sample mutation below the random draws' depth."""

from __future__ import annotations

import re

from hypothesis import given, settings

from crdharness.gate.checks import path_coverage
from crdharness.gate.evidence import (
    coverage,
    coverage_objects,
    objects,
    sample_mutations,
    written_back,
)
from crdharness.gate.results import CheckResult


def obj(properties: dict, **more) -> dict:
    return {"type": "object", "properties": properties, **more}


def deep(levels: int, leaf: dict) -> dict:
    """``levels`` nested objects ``l1.l2...`` around ``leaf``."""
    node = leaf
    for i in range(levels, 0, -1):
        node = obj({f"l{i}": node})
    return node


# spec.l1...l6 (7 levels with spec), a list of maps of lists, enums, booleans, numbers, a
# pattern, a oneOf between two fields, and the extensions.
SPEC = obj(
    {
        "deep": deep(6, {"type": "string"}),
        "routes": {
            "type": "array",
            "maxItems": 2,
            "items": obj(
                {
                    "byHost": {
                        "type": "object",
                        "additionalProperties": {
                            "type": "array",
                            "items": obj(
                                {
                                    "mode": {"type": "string", "enum": ["a", "b", "c"]},
                                    "on": {"type": "boolean"},
                                }
                            ),
                        },
                    }
                }
            ),
        },
        "count": {"type": "integer", "minimum": 0, "maximum": 3},
        "ratio": {"type": "number"},
        "code": {"type": "string", "pattern": "^[a-z]{2}-[0-9]+$"},
        "when": {"type": "string", "format": "date-time"},
        "target": obj(
            {"url": {"type": "string"}, "queue": {"type": "string"}},
            oneOf=[{"required": ["url"]}, {"required": ["queue"]}],
        ),
        "port": {"x-kubernetes-int-or-string": True},
        "raw": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "template": {
            "type": "object",
            "x-kubernetes-embedded-resource": True,
            "x-kubernetes-preserve-unknown-fields": True,
        },
        "keyed": {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "items": obj(
                {"name": {"type": "string"}, "kind": {"type": "string", "enum": ["x", "y"]}},
                required=["name"],
            ),
        },
    },
    required=["count"],
)
VERSION = {"name": "v1", "schema": {"openAPIV3Schema": obj({"spec": SPEC})}}
SCHEMA = objects.body_schema(VERSION)
DECLARED = {
    "spec.deep.l1.l2.l3.l4.l5.l6",
    "spec.routes[].byHost.*[].mode",
    "spec.routes[].byHost.*[].on",
    "spec.count",
    "spec.ratio",
    "spec.code",
    "spec.when",
    "spec.target.url",
    "spec.target.queue",
    "spec.port",
    "spec.raw",
    "spec.template",
    "spec.keyed[].name",
    "spec.keyed[].kind",
}


def values_at(body, path: str) -> list:
    """Every value a body holds at a schema path (``[]`` any item, ``*`` any map key)."""
    found = [body]
    for part in re.findall(r"[^.\[\]]+|\[\]", path):
        nxt: list = []
        for value in found:
            if part == "[]" and isinstance(value, list):
                nxt += value
            elif part == "*" and isinstance(value, dict):
                nxt += list(value.values())
            elif isinstance(value, dict) and part in value:
                nxt.append(value[part])
        found = nxt
    return found


def everywhere(path: str) -> list:
    return [v for b in coverage_objects.packed(SCHEMA) for v in values_at(b, path)]


def test_every_leaf_path_is_declared_at_any_depth_in_lists_and_maps():
    assert set(coverage.declared(SCHEMA)) == DECLARED
    # A subtree that declares nothing below itself is one leaf, not a place to look further.
    assert coverage.held(SCHEMA, {"spec": {"raw": {"a": {"b": 1}}}}) == {"spec.raw"}


def test_the_coverage_objects_hold_every_path_with_data():
    built = coverage_objects.packed(SCHEMA)
    held = set().union(*(coverage.held(SCHEMA, b) for b in built))
    assert held == DECLARED
    assert values_at(built[0], "spec.deep.l1.l2.l3.l4.l5.l6") == ["gate-value"]
    assert len(built) <= 4  # many paths per object: the enum of three values sets the count


def test_each_enum_value_both_booleans_zero_and_valid_strings_are_held():
    assert sorted(everywhere("spec.routes[].byHost.*[].mode")) == ["a", "b", "c"]
    assert set(everywhere("spec.routes[].byHost.*[].on")) == {True, False}
    assert 0 in everywhere("spec.count") and any(v for v in everywhere("spec.count"))
    assert 0 in everywhere("spec.ratio")
    assert all(re.fullmatch("[a-z]{2}-[0-9]+", v) for v in everywhere("spec.code"))
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", v) for v in everywhere("spec.when"))
    assert {type(v) for v in everywhere("spec.port")} == {int, str}
    assert all(t["apiVersion"] and t["kind"] for t in everywhere("spec.template"))


def test_a_field_taking_any_json_holds_a_scalar_first_and_an_object_too():
    # No type: any JSON. The API server's ratcheting cannot follow an object's unknown keys
    # there, so an object written back as read is judged changed (and refused where an error
    # above it is kept only by ratcheting): the scalar comes first, for every path's retries.
    anything = {"x-kubernetes-preserve-unknown-fields": True}
    typed = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    knob = obj({"name": {"type": "string"}, "value": anything}, required=["name", "value"])
    schema = obj({"spec": obj({"knobs": {"type": "array", "items": knob}, "typed": typed})})
    assert coverage.values_of(anything)[0] == [coverage.TEXT, coverage.UNKNOWN]
    assert coverage.values_of(typed)[0] == [coverage.UNKNOWN]
    built = coverage_objects.packed(schema)
    values = [v for b in built for v in values_at(b, "spec.knobs[].value")]
    assert coverage.TEXT in values and coverage.UNKNOWN in values
    alone = coverage_objects.single(schema, "spec.knobs[].name", "n")
    assert values_at(alone, "spec.knobs[].value") == [coverage.TEXT]


def test_required_fields_bounds_and_list_keys_are_respected():
    for body in coverage_objects.packed(SCHEMA):
        assert "count" in body.get("spec", {"count": 0})  # required wherever spec is built
        for routes in values_at(body, "spec.routes"):
            assert len(routes) <= 2  # maxItems
        for keyed in values_at(body, "spec.keyed"):
            names = [item["name"] for item in keyed]
            assert len(names) == len(set(names))  # a map list's keys stay distinct


def test_one_of_branches_each_get_an_object_and_never_meet():
    targets = everywhere("spec.target")
    assert all(len(t) == 1 for t in targets), targets  # exactly one branch per object
    assert {next(iter(t)) for t in targets} == {"url", "queue"}


def test_a_pattern_no_string_can_meet_is_named_with_the_reason():
    schema = objects.body_schema(
        {"schema": {"openAPIV3Schema": obj({"id": {"type": "string", "pattern": "^a{5}$"}})}}
        | {"name": "v1"}
    )
    schema["properties"]["id"]["maxLength"] = 3
    (leaf,) = coverage.leaves(schema)
    assert leaf.values == [] and leaf.reason.startswith("no string found for pattern '^a{5}$'")
    found = path_coverage.judge(
        {"schema": {"openAPIV3Schema": {"type": "object", "properties": schema["properties"]}}},
        set(),
        {},
    )
    assert found.uncovered == {"id": leaf.reason}


def test_below_every_path_a_passing_pair_is_not_proven_and_names_why():
    refused = {"spec.count": "a rule refused every value tried (3 objects): count is odd"}
    held = DECLARED - {"spec.count", "spec.deep.l1.l2.l3.l4.l5.l6"}
    result = CheckResult("round-trip", "things v1->v2", evidence="9 objects equal")
    path_coverage.settle(result, path_coverage.judge(VERSION, held, refused), "v1")
    assert result.passed is None
    assert result.evidence.startswith("not proven: schema paths 12/14 at v1")
    assert "spec.count (a rule refused every value tried (3 objects): count is odd)" in (
        result.evidence
    )
    assert "spec.deep.l1.l2.l3.l4.l5.l6 (no object holding it" in result.evidence
    assert result.coverage["exercised"] == 12 and result.coverage["declared"] == 14
    whole = CheckResult("round-trip", "things v1->v2", evidence="9 objects equal")
    path_coverage.settle(whole, path_coverage.judge(VERSION, DECLARED, {}), "v1")
    assert whole.passed and whole.evidence == "9 objects equal; schema paths 14/14 held"
    failed = CheckResult("round-trip", "things v1->v2").fail("lost spec.deep")
    path_coverage.settle(failed, path_coverage.judge(VERSION, set(), {}), "v1")
    assert failed.passed is False and failed.evidence == "lost spec.deep"  # a FAIL stays


def test_paths_behind_a_failure_are_carried_as_data_not_read_from_words():
    # A path whose objects were all valid at v1 but not convertible, one a round trip
    # stopped short of, one below a field lost whole: behind a failure. A path a rule
    # refused is not, whatever its reason says.
    count, deepest = "spec.count", "spec.deep.l1.l2.l3.l4.l5.l6"
    refused = {count: "the schema's required refused all 2 objects tried with it alone"}
    held = DECLARED - {count, deepest, "spec.target.url"}
    found = path_coverage.judge(
        VERSION,
        held,
        refused,
        stopped={deepest},
        parents={"spec.target.url": "spec.target"},
        unconverted={count},
    )
    # each with the failure it is behind
    assert found.behind_a_failure == {
        count: path_coverage.BEHIND_NOT_CONVERTIBLE,
        deepest: path_coverage.BEHIND_STOPPED,
        "spec.target.url": path_coverage.BEHIND_LOST_PARENT,
    }
    assert found.as_json()["behind_a_failure"] == dict(sorted(found.behind_a_failure.items()))
    plain = path_coverage.judge(VERSION, held, refused, stopped={deepest})
    assert set(plain.behind_a_failure) == {deepest}  # refused at creation: not behind one


def test_a_path_is_also_tried_with_what_bs_rules_ask_where_its_objects_are_written_back():
    # crossplane's XRD: v1 alone says a conversion is a webhook's and names it; a v2 object
    # holding spec.conversion.webhook.url is refused when written back at v1 unless its
    # strategy is 'Webhook'. The path's objects also meet B's rule (A has none).
    def relay(rules: list) -> dict:
        hook = {"type": "object", "properties": {"url": {"type": "string"}}}
        conversion = {
            "type": "object",
            "properties": {"strategy": {"type": "string"}, "webhook": hook},
            "x-kubernetes-validations": rules,
        }
        spec = {"type": "object", "properties": {"conversion": conversion}}
        return {"type": "object", "properties": {"spec": spec}}

    a = relay([])
    b = relay([{"rule": "self.strategy == 'Webhook' && has(self.webhook)"}])
    path = "spec.conversion.webhook.url"
    leaf = next(x for x in coverage.leaves(a) if x.path == path)
    alone, met = path_coverage._plan(a, path, leaf, [None])
    assert met == 0
    both, met = path_coverage._plan(a, path, leaf, [None], b)
    assert met == 1
    assert both[1]["spec"]["conversion"]["strategy"] == "Webhook"
    assert (
        both[1]["spec"]["conversion"]["webhook"]["url"]
        == alone[0]["spec"]["conversion"]["webhook"]["url"]
    )


def test_a_path_is_also_tried_on_the_least_b_requires_of_fields_a_declares():
    # cluster-api's Cluster: v1beta2 requires a spec of at least one field, v1beta1 does
    # not; a v1beta1 object holding only a status path is never written back at v1beta2.
    a = obj(
        {"spec": obj({"paused": {"type": "boolean"}}), "status": obj({"note": {"type": "string"}})}
    )
    b_spec = obj({"paused": {"type": "boolean"}, "onlyAtB": {"type": "string"}}, minProperties=1)
    b = obj({"spec": b_spec, "status": obj({"note": {"type": "string"}})}, required=["spec"])
    least = written_back.least_for(b, a)
    assert least == {"spec": {"paused": True}}  # of A's fields only, never onlyAtB
    path = "status.note"
    leaf = next(x for x in coverage.leaves(a) if x.path == path)
    alone, met = path_coverage._plan(a, path, leaf, [None])
    assert met == 0 and all("spec" not in body for body in alone)
    both, met = path_coverage._plan(a, path, leaf, [None], b)
    assert met == 1 and both[1] == {**alone[0], **least}
    # B requiring nothing A's objects lack: no object more
    assert path_coverage._plan(a, path, leaf, [None], a)[1] == 0


def test_a_single_value_is_laid_over_a_sample():
    sample = {"spec": {"count": 2, "keyed": [{"name": "mine", "kind": "x"}]}}
    body = coverage_objects.single(SCHEMA, "spec.keyed[].kind", "y", sample)
    assert body["spec"]["count"] == 2 and body["spec"]["keyed"] == [{"name": "mine", "kind": "y"}]


def test_declared_fields_headline_before_keys_inside_preserved_subtrees():
    paths = ["spec.raw.aaa", "metadata.annotations.x", "spec.deep.l1.l2.l3.l4.l5.l6"]
    ordered = sorted(paths, key=lambda p: coverage.headline_order(SCHEMA, p))
    assert ordered == ["spec.deep.l1.l2.l3.l4.l5.l6", "metadata.annotations.x", "spec.raw.aaa"]


def test_a_mutated_sample_subtree_gets_optional_fields_at_any_depth():
    version = {"schema": {"openAPIV3Schema": obj({"spec": deep(8, {"type": "string"})})}}
    # The sample ends 5 levels down; what is drawn there reaches the leaf 4 levels further.
    sample = objects.sample_body({"kind": "K", "spec": {"l1": {"l2": {"l3": {"l4": {}}}}}})
    reached = []

    @settings(max_examples=100, database=None)
    @given(sample_mutations.mutations(version, [sample]))
    def check(body):
        reached.append(bool(values_at(body, "spec.l1.l2.l3.l4.l5.l6.l7.l8")))

    check()
    assert any(reached)


def test_the_lossy_webhook_drops_a_field_inside_every_list_item():
    from crdconvert.field_edits import drop

    converted = {"spec": {"a": [{"b": [{"c": {"d": 1, "e": 2}}]}, {"b": []}], "x": 1}}
    drop(converted, "spec.a[].b[].c.d")
    assert converted == {"spec": {"a": [{"b": [{"c": {"e": 2}}]}, {"b": []}], "x": 1}}
    drop(converted, "spec.x")
    assert "x" not in converted["spec"]


def test_drawn_and_minimal_strings_meet_the_formats_the_api_server_checks():
    # cert-manager's CertificateRequest has `spec.request: {format: byte}`: "" is refused, so
    # objects drawn or built with it never reached the upgrade (always "not proven").
    import base64

    from crdharness.gate.evidence import objects, old_values

    byte = {"type": "string", "format": "byte"}
    assert base64.b64decode(old_values.minimal(byte), validate=True)
    schema = {"type": "object", "properties": {"request": byte}, "required": ["request"]}
    for body in objects.drawn_from(objects.strategy(schema), 20, seed=1):
        assert base64.b64decode(body["request"], validate=True), body
    assert old_values.minimal({"type": "string", "format": "uuid"}).count("-") == 4


def test_paths_a_refusal_naming_no_field_stopped_are_halved_not_sent_one_each():
    # upjet's CRDs: a CEL rule at ``spec`` cannot evaluate when two fields meet (a list where
    # the other version has an object, beside a non-default managementPolicies), and the
    # refusal names only ``spec``. Every packed object meets both: halves are packed again
    # until the two are apart, so the other paths go round in a few objects, not one each.
    from types import SimpleNamespace

    from crdharness.gate.checks.pair_record import PairRecord
    from crdharness.gate.results import NotConvertible

    schema = obj({"spec": obj({f"f{i:02d}": {"type": "string"} for i in range(64)})})
    declared = sorted(coverage.declared(schema))
    trigger = {"spec.f07", "spec.f50"}
    sent: list[set[str]] = []

    def attempt(body: dict, record: PairRecord, answers: list) -> NotConvertible | None:
        held = coverage.held(schema, body)
        sent.append(held)
        if trigger <= held:
            return NotConvertible("spec: Invalid value: evaluating rule", [], [])
        record.held |= held
        return None

    ctx = SimpleNamespace(config=SimpleNamespace(concurrency=1))
    seen, found = PairRecord(), []
    path_coverage._repack(ctx, attempt, schema, declared, seen, found)
    assert seen.held == set(declared)  # the two meet in no object that went round
    assert len(found) == len([s for s in sent if trigger <= s]) >= 1
    assert len(sent) <= 12, f"{len(sent)} objects for {len(declared)} paths"

    # A path below a field an object lost whole is not packed again: alone, with its own
    # values, it may keep it; one judged lost with a field B lacks is not sent at all.
    seen = PairRecord(parents_lost={"spec.f01": "spec"}, lost_whole={"spec.f02": "gone"})
    sent.clear()
    path_coverage._repack(ctx, attempt, schema, ["spec.f01", "spec.f02", "spec.f03"], seen, [])
    assert sent == [{"spec.f03"}]
