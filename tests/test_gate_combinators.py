"""allOf, oneOf, anyOf and not drawn as the API server reads them (``combinators``, and the
object generator through them), without a cluster."""

from crdharness.gate.evidence import combinators, objects


def test_all_of_folds_enums_bounds_and_required():
    node = combinators.folded(
        {
            "type": "object",
            "required": ["a"],
            "properties": {"a": {"type": "integer", "maximum": 9}, "b": {"type": "string"}},
            "allOf": [
                {"required": ["b"], "properties": {"a": {"minimum": 2, "maximum": 5}}},
                {"properties": {"b": {"enum": ["x", "y", "z"]}}},
                {"properties": {"b": {"enum": ["y", "z", "w"]}}},
            ],
        }
    )
    assert node["required"] == ["a", "b"]
    assert node["properties"]["a"] == {"type": "integer", "maximum": 5, "minimum": 2}
    assert node["properties"]["b"]["enum"] == ["y", "z"]


def test_one_of_gives_one_branch_each_without_the_others_fields():
    found = combinators.alternatives(
        {
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
            "oneOf": [{"required": ["a"]}, {"required": ["b"]}],
        }
    )
    assert [(n["required"], sorted(n["properties"])) for n in found] == [
        (["a"], ["a"]),
        (["b"], ["b"]),
    ]


def test_not_is_avoided():
    node = combinators.folded(
        {
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
            "not": {"anyOf": [{"required": ["a"]}]},
        }
    )
    assert sorted(node["properties"]) == ["b"]
    drawn = objects.drawn_from(
        objects.strategy({"type": "string", "enum": ["x", "y"], "not": {"enum": ["x"]}}), 10, 0
    )
    assert set(drawn) == {"y"}


def test_drawn_objects_hold_every_combinator():
    schema = {
        "type": "object",
        "properties": {
            "kind": {"type": "string", "allOf": [{"enum": ["A", "B", "C"]}, {"enum": ["B", "C"]}]},
            "pick": {
                "type": "object",
                "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
                "oneOf": [{"required": ["x"]}, {"required": ["y"]}],
            },
            "name": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 3},
            "embedded": {
                "type": "object",
                "x-kubernetes-embedded-resource": True,
                "x-kubernetes-preserve-unknown-fields": True,
            },
        },
        "required": ["kind", "pick", "name", "embedded"],
    }
    for value in objects.drawn_from(objects.strategy(schema), 30, 0):
        assert value["kind"] in ("B", "C")
        assert len(set(value["pick"]) & {"x", "y"}) == 1
        assert 1 <= len(value["name"]) <= 3 or value["name"] == ""
        assert value["embedded"]["apiVersion"] and value["embedded"]["kind"]


def test_the_users_schema_is_left_as_it_is():
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
        "oneOf": [{"required": ["a"]}, {"required": ["b"]}],
        "anyOf": [{"required": ["a"]}],
    }
    before = repr(schema)
    combinators.alternatives(schema)
    objects.drawn_from(objects.strategy(schema), 3, 0)
    assert repr(schema) == before
