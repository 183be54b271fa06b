"""JSON values copied and keyed through orjson, with the standard library for what it refuses."""

from crdharness.gate import json_values


def test_a_copy_is_equal_and_shares_nothing():
    value = {"spec": {"items": [{"a": 1.5, "b": None, "c": True}], "s": "é\u2028"}}
    copied = json_values.copied(value)
    assert copied == value
    copied["spec"]["items"][0]["a"] = 2
    assert value["spec"]["items"][0]["a"] == 1.5


def test_what_orjson_refuses_is_copied_all_the_same():
    # An integer beyond 64 bits (drawn for a bound) and a key that is not a string.
    value = {"big": 2**70, "n": [-(2**65)], 3: "x"}
    copied = json_values.copied(value)
    assert copied == value and copied is not value
    assert copied["n"] is not value["n"]


def test_content_text_is_the_same_for_the_same_content_in_any_order():
    one = {"b": [1, {"y": 2, "x": 1}], "a": "t"}
    other = {"a": "t", "b": [1, {"x": 1, "y": 2}]}
    assert json_values.content_text(one) == json_values.content_text(other)
    assert json_values.content_text(one) != json_values.content_text({**one, "a": "u"})
    # Lists keep their order: a different order is different content.
    assert json_values.content_text([1, 2]) != json_values.content_text([2, 1])
    big = {"b": 2**70, "a": 1}
    assert json_values.content_text(big) == json_values.content_text({"a": 1, "b": 2**70})


def test_content_text_writes_other_values_with_default():
    class Opaque:
        def __repr__(self) -> str:
            return "opaque"

    assert b"opaque" in json_values.content_text([Opaque()], default=repr)
