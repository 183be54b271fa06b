"""A value worked out from a schema alone (``evidence.schema_memo``) is searched once per
distinct schema: the same schema gets the same value, each caller its own copy; a schema it
cannot be found for fails the same way again; the smallest values of ``targeted`` are the
same remembered or searched anew."""

from __future__ import annotations

import copy

import pytest

from crdharness.gate.evidence import old_values, schema_memo


def test_the_same_schema_is_worked_out_once_and_each_caller_gets_a_copy():
    calls: list[dict] = []

    @schema_memo.by_schema()
    def value(schema: dict) -> dict:
        calls.append(schema)
        return {"held": [schema.get("type")]}

    first = value({"type": "string", "minLength": 1})
    first["held"].append("changed by the caller")
    again = value({"minLength": 1, "type": "string"})  # the same content, keys reordered
    assert again == {"held": ["string"]}
    assert len(calls) == 1
    assert value({"type": "integer"}) == {"held": ["integer"]}
    assert len(calls) == 2


def test_a_schema_with_no_value_fails_again_without_searching_again():
    calls: list[dict] = []

    @schema_memo.by_schema(remembered=(LookupError,))
    def value(schema: dict) -> str:
        calls.append(schema)
        raise LookupError(f"nothing for {schema}")

    for _ in range(2):
        with pytest.raises(LookupError, match="nothing for"):
            value({"type": "object"})
    assert len(calls) == 1


def test_only_so_many_schemas_are_kept(monkeypatch):
    monkeypatch.setattr(schema_memo, "KEPT", 2)
    calls: list[int] = []

    @schema_memo.by_schema()
    def value(schema: dict) -> int:
        calls.append(schema["maximum"])
        return schema["maximum"]

    for n in (1, 2, 3, 1):
        assert value({"type": "integer", "maximum": n}) == n
    assert calls == [1, 2, 3, 1]  # 1 was the least recently asked when 3 came


@pytest.mark.parametrize(
    "schema",
    [
        {
            "type": "object",
            "required": ["name", "size"],
            "properties": {
                "name": {"type": "string", "minLength": 3, "pattern": "^[a-z]+$"},
                "size": {"type": "integer", "minimum": 5},
                "note": {"type": "string"},
            },
        },
        {"type": "array", "minItems": 2, "items": {"type": "string", "enum": ["b", "a"]}},
    ],
)
def test_targeted_smallest_values_are_the_same_remembered_or_searched_anew(schema):
    remembered = old_values.minimal(schema), old_values.present(schema)
    old_values.minimal.forget()
    old_values.present.forget()
    assert (old_values.minimal(schema), old_values.present(schema)) == remembered
    assert old_values.minimal(schema) == remembered[0]


def test_targeted_minimal_of_a_schema_nothing_satisfies_says_so_each_time():
    impossible = {"type": "string", "pattern": "^a$", "minLength": 3}
    for _ in range(2):
        with pytest.raises(old_values.NoObject):
            old_values.minimal(impossible)


def test_descriptions_aside_a_reworded_schema_is_the_same_but_a_field_named_description_is_not():
    calls: list[dict] = []

    @schema_memo.by_schema(descriptions_matter=False)
    def value(schema: dict, count: int) -> int:
        calls.append(schema)
        return count

    worded = {
        "type": "object",
        "description": "v1beta1 is deprecated",
        "properties": {"size": {"type": "integer", "description": "how big"}},
        "items": [{"type": "string", "description": "first"}],
    }
    reworded = {
        "type": "object",
        "description": "the old words",
        "properties": {"size": {"type": "integer"}},
        "items": [{"type": "string"}],
    }
    assert value(worded, 3) == 3 and value(reworded, 3) == 3
    assert len(calls) == 1
    value(reworded, 4)  # the other arguments count
    assert len(calls) == 2
    # A field called "description" is a field; data holding that key is data.
    named = {"type": "object", "properties": {"description": {"type": "string"}}}
    value(named, 3)
    value({"type": "object", "properties": {}}, 3)
    value({"type": "object", "default": {"description": "x"}}, 3)
    value({"type": "object", "default": {}}, 3)
    assert len(calls) == 6
    assert schema_memo.without_descriptions(named) == named


SPEC = {
    "type": "object",
    "description": "the spec",
    "properties": {
        "size": {"type": "integer", "minimum": 1},
        "description": {"type": "string", "description": "a field's words"},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
}
ENTRY = {
    "name": "v1",
    "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": SPEC}}},
}


def test_drawn_bodies_are_the_objects_drawn_anew_and_each_caller_gets_a_copy():
    from hypothesis import strategies as st

    from crdharness.gate.evidence import drawn_bodies, objects, sample_mutations

    samples = [objects.sample_body({"metadata": {"name": "s"}, "spec": {"size": 3}})]
    for given in ([], samples):
        strategy = objects.bodies(ENTRY)
        if given:
            strategy = st.one_of(sample_mutations.mutations(ENTRY, given), strategy)
        anew = objects.drawn_from(strategy, 6, 0)
        first = drawn_bodies.bodies(ENTRY, given, 6, 0)
        assert first == anew and len(first) == 6
        first[0]["changed"] = True
        assert drawn_bodies.bodies(ENTRY, given, 6, 0) == anew
    # The same schema reworded: the same objects (remembered); another seed: drawn anew.
    reworded = copy.deepcopy(ENTRY)
    reworded["schema"]["openAPIV3Schema"]["properties"]["spec"]["description"] = "deprecated"
    assert drawn_bodies.bodies(reworded, [], 6, 0) == drawn_bodies.bodies(ENTRY, [], 6, 0)
    assert drawn_bodies.bodies(ENTRY, [], 6, 1) == objects.drawn_from(objects.bodies(ENTRY), 6, 1)


def test_drawn_values_are_drawn_once_per_leaf_schema_and_the_same_as_drawn_anew():
    from crdharness.gate.evidence import drawn_bodies, objects

    leaf = {"type": "string", "pattern": "^[a-z]{2,4}$", "description": "a name"}
    anew = objects.drawn_from(objects.strategy(leaf), 9, 0)
    assert drawn_bodies.values(leaf, 9, 0) == anew
    assert drawn_bodies.values({**leaf, "description": "reworded"}, 9, 0) == anew
    assert drawn_bodies.values({"type": "integer", "minimum": 3}, 4, 0) == objects.drawn_from(
        objects.strategy({"type": "integer", "minimum": 3}), 4, 0
    )


def test_a_value_kept_comes_back_equal_and_a_copy_each_time():
    # Kept as compressed JSON where JSON gives it back equal; a tuple or a NaN as itself.
    bodies = [{"spec": {"size": 1.0, "on": True, "tags": ["a"], "none": None}}] * 3
    odd = [(1, 2), float("nan")]
    calls: list[str] = []

    @schema_memo.by_schema()
    def drawn(schema: dict, which: str):
        calls.append(which)
        return bodies if which == "bodies" else odd

    first = drawn({"type": "object"}, "bodies")
    again = drawn({"type": "object"}, "bodies")
    assert first == again == bodies and calls == ["bodies"]
    assert type(again[0]["spec"]["size"]) is float and again[0]["spec"]["on"] is True
    again[0]["spec"]["tags"].append("b")  # the caller's own copy
    assert drawn({"type": "object"}, "bodies") == bodies
    kept = drawn({"type": "object"}, "odd")
    kept_again = drawn({"type": "object"}, "odd")
    assert kept_again[0] == (1, 2) and kept_again is not kept and calls == ["bodies", "odd"]
