"""What changed between two releases (``changes``) and the objects built to hold each change
(``targeted``): computed from manifests alone, before any cluster."""

import copy
import re

import pytest

from crdharness.gate.evidence import changes, old_values, targeted
from crdharness.gate.given.manifests import Release

SCHEMA = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "size": {"type": "string", "enum": ["small", "large"]},
                "name": {"type": "string", "maxLength": 63},
                "replicas": {"type": "integer", "minimum": 0, "maximum": 100},
                "mode": {"type": "string"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "legacy": {"type": "boolean"},
            },
        },
        "status": {
            "type": "object",
            "properties": {
                "conditions": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["type"],
                        "properties": {
                            "type": {"type": "string", "enum": ["Ready", "Progressing"]},
                            "reason": {"type": "string", "pattern": "^[A-Za-z]+$"},
                        },
                    },
                }
            },
        },
    },
}


def release(index: int, schema: dict, **spec) -> Release:
    crd = {
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
            **spec,
        },
    }
    return Release(index, f"release {index + 1}", {"widgets.example.com": crd})


def changed(edit) -> list[changes.Change]:
    new = copy.deepcopy(SCHEMA)
    edit(new["properties"])
    return changes.between(release(0, SCHEMA), release(1, new), "widgets.example.com")


def rows(found) -> set[tuple[str, str]]:
    return {(c.path, c.kind) for c in found}


def test_an_unchanged_release_has_no_changes():
    assert changed(lambda p: None) == []


def test_widening_is_a_row_decided_on_the_old_objects():
    def widen(p):
        p["spec"]["properties"]["size"]["enum"].append("huge")
        p["spec"]["properties"]["name"]["maxLength"] = 253
        p["spec"]["properties"]["owner"] = {"type": "string"}

    found = changed(widen)
    assert rows(found) == {
        ("spec.size", "enum widened"),
        ("spec.name", "bound loosened"),
        ("spec.owner", "field added"),
    }
    assert all(changes.on_the_crd(c) for c in found)  # no object is built for them


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            lambda p: p["status"]["properties"]["conditions"]["items"]["properties"]["type"].update(
                enum=["Ready"]
            ),
            ("status.conditions[].type", "enum value removed"),
        ),
        (lambda p: p["spec"].update(required=["size"]), ("spec.size", "required added")),
        (
            lambda p: p["spec"]["properties"]["name"].update(maxLength=20),
            ("spec.name", "bound tightened"),
        ),
        (
            lambda p: p["spec"]["properties"]["replicas"].update(maximum=10),
            ("spec.replicas", "bound tightened"),
        ),
        (
            lambda p: p["spec"]["properties"]["name"].update(pattern="^[a-z]+$"),
            ("spec.name", "pattern changed"),
        ),
        (
            lambda p: p["spec"]["properties"]["mode"].update(type="integer"),
            ("spec.mode", "type changed"),
        ),
        (lambda p: p["spec"]["properties"].pop("legacy"), ("spec.legacy", "field removed")),
        (
            lambda p: p["spec"].update(
                {"x-kubernetes-validations": [{"rule": "!has(self.legacy)"}]}
            ),
            ("spec", "rule added"),
        ),
        (
            lambda p: p["spec"]["properties"]["mode"].update(default="auto"),
            ("spec.mode", "default added"),
        ),
        (
            lambda p: p["spec"]["properties"].update(tier={"type": "string", "default": "basic"}),
            ("spec.tier", "default added"),
        ),
        (
            lambda p: p["spec"]["properties"]["replicas"].update(default=1),
            ("spec.replicas", "default added"),
        ),
        (
            lambda p: p["spec"]["properties"]["labels"].update(maxProperties=1),
            ("spec.labels", "bound tightened"),
        ),
        (
            lambda p: p["spec"]["properties"]["mode"].update(enum=["auto"]),
            ("spec.mode", "enum added"),
        ),
    ],
)
def test_each_tightening_is_one_row_and_its_object_holds_it(edit, expected):
    found = changed(edit)
    assert rows(found) == {expected}
    change = found[0]
    entry = release(0, SCHEMA).entry("widgets.example.com", "v1")
    built = targeted.bodies(change, entry, [])
    assert built, "no object built"
    for body in built:
        assert "spec" in body or "status" in body
    value = _at(built[0], change.path)
    if change.kind == "enum value removed":
        assert value == "Progressing"
    elif change.kind in ("required added", "default added", "default removed"):
        assert value is _MISSING and _at(built[0], change.path.rsplit(".", 1)[0]) is not _MISSING
    elif change.path == "spec.name" and change.kind == "bound tightened":
        assert len(value) == 21
    elif change.path == "spec.replicas":
        assert value == 11
    elif change.kind == "pattern changed":
        assert isinstance(value, str) and not re.search("^[a-z]+$", value)
    elif change.kind == "type changed":
        assert isinstance(value, str)
    elif change.path == "spec.labels":
        assert len(value) == 2
    elif change.kind == "enum added":
        assert value != "auto"
    elif change.kind == "rule added":  # a variant holds each value the old schema enumerates
        assert any(_at(b, "spec.legacy") is True for b in built)
        assert any(_at(b, "spec.size") == "large" for b in built)


def test_a_rule_variant_keeps_the_samples_own_values():
    found = changed(
        lambda p: p["spec"].update({"x-kubernetes-validations": [{"rule": "self.size != 'large'"}]})
    )
    entry = release(0, SCHEMA).entry("widgets.example.com", "v1")
    sample = {"spec": {"size": "small", "name": "kept", "mode": "m"}}
    built = targeted.bodies(found[0], entry, [sample])
    assert built[0] == sample  # the sample as it is
    assert {"size": "large", "name": "kept", "mode": "m"} in [b["spec"] for b in built]


def test_a_change_no_object_can_hold_says_why():
    def impossible(p):
        # Matches every string; a flag leaves inclusion undecided, so the search says why.
        p["spec"]["properties"]["name"].update(pattern="(?i).*")

    (change,) = changed(impossible)
    entry = release(0, SCHEMA).entry("widgets.example.com", "v1")
    with pytest.raises(old_values.NoObject, match="no string valid under the old schema") as raised:
        targeted.bodies(change, entry, [])
    assert not isinstance(raised.value, old_values.Harmless)
    assert "flag" in str(raised.value), raised.value  # what kept it from being decided


def test_a_removed_default_is_a_change_its_object_leaves_the_field_absent():
    with_default = copy.deepcopy(SCHEMA)
    with_default["properties"]["spec"]["properties"]["mode"]["default"] = "auto"
    found = changes.between(release(0, with_default), release(1, SCHEMA), "widgets.example.com")
    assert rows(found) == {("spec.mode", "default removed")}
    entry = release(0, with_default).entry("widgets.example.com", "v1")
    assert all(_at(b, "spec.mode") is _MISSING for b in targeted.bodies(found[0], entry, []))


def test_crd_wide_changes_and_a_new_storage_version_under_none():
    old, new = release(0, SCHEMA), release(1, SCHEMA, scope="Cluster")
    assert rows(changes.between(old, new, "widgets.example.com")) == {("", "scope changed")}
    two = copy.deepcopy(release(1, SCHEMA).crds["widgets.example.com"])
    v2 = copy.deepcopy(two["spec"]["versions"][0])
    v2["name"] = "v2"
    del v2["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["legacy"]
    two["spec"]["versions"][0]["storage"] = False
    two["spec"]["versions"].append(v2)
    found = changes.between(
        old, Release(1, "r2", {"widgets.example.com": two}), "widgets.example.com"
    )
    assert rows(found) == {
        ("", "version added"),
        ("", "storage version changed"),
        ("spec.legacy", "storage version changed under None"),
    }
    (under_none,) = [c for c in found if c.path]
    assert under_none.version == "v1"  # objects stored at v1 hold it


_MISSING = object()


def _at(body: dict, path: str):
    node = body
    for part in re.findall(r"[^.\[\]]+|\[\]", path):
        if part == "[]":
            node = node[0] if isinstance(node, list) and node else _MISSING
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return _MISSING
        if node is _MISSING:
            return _MISSING
    return node


def test_changes_that_need_a_value_present_share_objects_and_each_still_holds_its_value():
    def retype(p):  # three fields change type; one is tightened (its own objects)
        p["spec"]["properties"]["mode"] = {"type": "integer"}
        p["spec"]["properties"]["legacy"] = {"type": "string"}
        p["status"]["properties"]["conditions"] = {"type": "object"}
        p["spec"]["properties"]["replicas"]["maximum"] = 10

    found = changed(retype)
    assert {c.kind for c in found} >= {"type changed", "bound tightened"}
    grouped = targeted.groups(found)
    shared_group = next(g for g in grouped if len(g) > 1)
    assert {c.path for c in shared_group} == {"spec.mode", "spec.legacy"}  # status apart
    assert all(len(g) == 1 for g in grouped if g is not shared_group)
    entry = release(0, SCHEMA).entry("widgets.example.com", "v1")
    built = targeted.shared(shared_group, entry, [])
    assert len(built) == 2  # two variants holding every change, not two per change
    for body, alone in built:
        assert len(alone) == len(shared_group)
        for change, single in zip(shared_group, alone, strict=True):
            # the shared body holds each change's value as that change's own body does
            assert _at(body, change.path) == _at(single, change.path) is not _MISSING
    # each change's own bodies: the shared ones stand for the first two (written where the
    # server refuses a shared one), the third ("beside every other field") stays its own
    for change in shared_group:
        own = targeted.bodies(change, entry, [])
        i = shared_group.index(change)
        assert [alone[i] for _, alone in built] + targeted.beside_filled(change, entry, []) == own


def test_a_path_under_another_changed_path_is_not_shared():
    def nest(p):
        p["status"]["properties"]["conditions"]["items"]["properties"]["reason"] = {
            "type": "integer"
        }
        p["status"]["properties"]["conditions"]["type"] = "object"

    found = changed(nest)
    assert len(found) >= 2
    assert all(len(group) == 1 for group in targeted.groups(found))


def _pattern_change(old: str | None, new: str, **string) -> changes.Change:
    """The change of ``spec.mode``'s pattern from ``old`` (None: none) to ``new``."""
    before = copy.deepcopy(SCHEMA)
    mode = before["properties"]["spec"]["properties"]["mode"]
    mode.update(string)
    if old is not None:
        mode["pattern"] = old
    after = copy.deepcopy(before)
    after["properties"]["spec"]["properties"]["mode"]["pattern"] = new
    found = changes.between(release(0, before), release(1, after), "widgets.example.com")
    assert rows(found) == {("spec.mode", "pattern changed")}
    return found[0]


@pytest.mark.parametrize(
    ("old", "new"),
    [("^[a-z]+$", "^[a-z0-9-]+$"), ("^[a-z]{1,10}$", "^[a-z]{1,20}$"), ("^a$", "a")],
)
def test_a_relaxed_pattern_is_harmless_proven_with_no_object(old, new):
    change = _pattern_change(old, new)
    entry = release(0, SCHEMA).entry("widgets.example.com", "v1")
    with pytest.raises(old_values.Harmless, match="matches too"):
        targeted.bodies(change, entry, [])


def test_a_tightened_pattern_gets_a_string_the_old_takes_and_the_new_refuses():
    change = _pattern_change("^[a-z0-9-]+$", "^[a-z]+$", maxLength=63)
    value = _at(targeted.bodies(change, SCHEMA_ENTRY(), [])[0], "spec.mode")
    assert re.search("^[a-z0-9-]+$", value) and not re.search("^[a-z]+$", value)
    assert len(value) <= 63


def test_a_pattern_added_where_none_was_is_judged_against_every_string():
    # No old pattern: every string; the new one refuses some, so it is never harmless.
    change = _pattern_change(None, "^[a-z]+$")
    value = _at(targeted.bodies(change, SCHEMA_ENTRY(), [])[0], "spec.mode")
    assert isinstance(value, str) and not re.search("^[a-z]+$", value)


def test_a_witness_too_long_for_the_old_schema_leaves_the_search_to_decide():
    # The only string ^a{5}$ takes, which ^a{0,4}$ refuses, is five a's: over maxLength 4, the
    # old schema allows none, so no object, and not "harmless" (inclusion fails).
    change = _pattern_change("^a{5}$", "^a{0,4}$", maxLength=4)
    with pytest.raises(old_values.NoObject) as raised:
        targeted.bodies(change, SCHEMA_ENTRY(), [])
    assert not isinstance(raised.value, old_values.Harmless)


def SCHEMA_ENTRY() -> dict:
    return release(0, SCHEMA).entry("widgets.example.com", "v1")


def test_a_rule_on_a_list_of_strings_meets_its_literal_alone_and_beside_another_item():
    # Refuses a "*" only with company: an object holding "*" alone would clear it.
    rule = "!('*' in self && self.size() > 1)"
    before = copy.deepcopy(SCHEMA)
    before["properties"]["spec"]["properties"]["headers"] = {
        "type": "array",
        "items": {"type": "string"},
    }
    after = copy.deepcopy(before)
    after["properties"]["spec"]["properties"]["headers"]["x-kubernetes-validations"] = [
        {"rule": rule}
    ]
    found = changes.between(release(0, before), release(1, after), "widgets.example.com")
    assert rows(found) == {("spec.headers", "rule added")}
    lists = [_at(b, "spec.headers") for b in targeted.bodies(found[0], SCHEMA_ENTRY(), [])]
    together = [h for h in lists if isinstance(h, list) and "*" in h and len(h) > 1]
    assert together and all(len(set(h)) == len(h) for h in together), lists
    assert ["*"] in lists


def test_with_samples_a_change_also_gets_an_object_on_the_smallest_base():
    # A sample's other fields can break a rule the change's value meets: the smallest
    # object holding the value stands beside the samples'.
    found = changed(lambda p: p["spec"]["properties"]["name"].update(maxLength=20))
    sample = {"spec": {"size": "small", "mode": "m"}}
    built = targeted.bodies(found[0], SCHEMA_ENTRY(), [sample])
    assert built[0]["spec"]["size"] == "small"  # the sample's first
    assert any("size" not in b.get("spec", {}) and _at(b, "spec.name") for b in built), built


def _two_versions_storage_moved(old_shape: dict, new_shape: dict) -> tuple[Release, Release]:
    """Release 1 serves v1 (stored) and v2; release 2 stores v2. ``spec.creds`` has
    ``old_shape`` at v1 and ``new_shape`` at v2 in both releases."""

    def crd(storage: str) -> dict:
        def version(name: str, shape: dict) -> dict:
            schema = copy.deepcopy(SCHEMA)
            schema["properties"]["spec"]["properties"]["creds"] = shape
            return {
                "name": name,
                "served": True,
                "storage": name == storage,
                "schema": {"openAPIV3Schema": schema},
            }

        made = copy.deepcopy(release(0, SCHEMA).crds["widgets.example.com"])
        made["spec"]["versions"] = [version("v1", old_shape), version("v2", new_shape)]
        return made

    return (
        Release(0, "r1", {"widgets.example.com": crd("v1")}),
        Release(1, "r2", {"widgets.example.com": crd("v2")}),
    )


def test_a_field_required_below_one_whose_type_the_new_storage_version_changes_is_that_row():
    secret = {"type": "object", "properties": {"name": {"type": "string"}}}
    listed = {"type": "array", "items": {"type": "object", "properties": {"secret": secret}}}
    single = {"type": "object", "required": ["secret"], "properties": {"secret": secret}}
    old, new = _two_versions_storage_moved(listed, single)
    found = changes.between(old, new, "widgets.example.com")
    # The list at v1 is an object at v2: one row for it, none for what v2 requires inside
    # (no v1 object holds spec.creds.secret; the gate once failed building one).
    assert ("spec.creds", "storage version changed under None") in rows(found)
    assert not [c for c in found if c.path.startswith("spec.creds.")], rows(found)


def test_a_path_spelt_for_another_version_has_no_object_and_says_why():
    (change,) = changed(
        lambda p: p["status"]["properties"]["conditions"]["items"].update(
            required=["type", "reason"]
        )
    )
    entry = release(0, SCHEMA).entry("widgets.example.com", "v1")
    change.parts = ("status", "conditions", "reason")  # an object's spelling; a list here
    with pytest.raises(old_values.NoObject, match=r"status\.conditions is a list at this version"):
        targeted.bodies(change, entry, [])
