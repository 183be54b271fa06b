"""A Go zero value (false, 0, "") a webhook's ``omitempty`` drops is normalised, not a
finding, where the schema declares the field with no default; a changed value, a default,
a list item or map value, or ``strict: true`` keeps it a finding."""

from crdharness.gate import diff
from crdharness.gate.evidence import schemas
from crdharness.gate.given.config import GateConfig
from crdharness.gate.given.manifests import Release
from crdharness.gate.run.context import GateContext

NAME = "widgets.example.com"


def spec_schema(**properties) -> dict:
    return {
        "openAPIV3Schema": {
            "type": "object",
            "properties": {"spec": {"type": "object", "properties": properties}},
        }
    }


PLAIN = {
    "paused": {"type": "boolean"},
    "replicas": {"type": "integer"},
    "ratio": {"type": "number"},
    "owner": {"type": "string"},
    "ports": {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"open": {"type": "boolean"}, "n": {"type": "integer"}},
        },
    },
    "flags": {"type": "object", "additionalProperties": {"type": "boolean"}},
}


def context(v1: dict, v2: dict | None = None, strict: bool = False) -> GateContext:
    versions = [{"name": "v1", "served": True, "storage": True, "schema": v1}]
    versions.append({"name": "v2", "served": True, "storage": False, "schema": v2 or v1})
    crd = {"metadata": {"name": NAME}, "spec": {"versions": versions}}
    config = GateConfig(source=None, crds=[], strict=strict)  # type: ignore[arg-type]
    return GateContext(None, config, [Release(0, "r1", {NAME: crd})], {}, lambda line: None)  # type: ignore[arg-type]


def judged(ctx: GateContext, before: dict, after: dict) -> dict[str, object]:
    """Each difference's path -> the excuse (kind, note), or None for a finding."""
    return {d.path: ctx.excused(d, "v1", "v2", NAME) for d in diff.differences(before, after)}


def test_a_zero_value_read_back_absent_is_normalised_where_no_default_is_declared():
    before = {"spec": {"paused": False, "replicas": 0, "ratio": 0.0, "owner": ""}}
    found = judged(context(spec_schema(**PLAIN)), before, {"spec": {}})
    assert found == {
        "spec.paused": ("normalised", "spec.paused: lost (was false) (zero value)"),
        "spec.replicas": ("normalised", "spec.replicas: lost (was 0) (zero value)"),
        "spec.ratio": ("normalised", "spec.ratio: lost (was 0.0) (zero value)"),
        "spec.owner": ("normalised", 'spec.owner: lost (was "") (zero value)'),
    }


def test_a_zero_value_that_appears_is_normalised_likewise():
    found = judged(context(spec_schema(**PLAIN)), {"spec": {}}, {"spec": {"paused": False}})
    assert found == {"spec.paused": ("normalised", "spec.paused: appeared (false) (zero value)")}


def test_inside_a_list_item_the_field_is_still_a_plain_field():
    before = {"spec": {"ports": [{"open": False, "n": 1}]}}
    found = judged(context(spec_schema(**PLAIN)), before, {"spec": {"ports": [{"n": 1}]}})
    assert found == {
        "spec.ports[0].open": ("normalised", "spec.ports[0].open: lost (was false) (zero value)")
    }


CLIMATE = {
    "climate": {
        "type": "object",
        "properties": {"celsius": {"type": "integer"}, "vent": {"type": "boolean"}},
    }
}


def test_an_object_of_zero_values_read_back_absent_is_normalised():
    # A Go converter that leaves a pointer to a struct nil when all its fields are zero.
    before = {"spec": {"climate": {"celsius": 0, "vent": False}}}
    found = judged(context(spec_schema(**CLIMATE)), before, {"spec": {}})
    note = 'spec.climate: lost (was {"celsius": 0, "vent": false}) (zero value)'
    assert found == {"spec.climate": ("normalised", note)}


def test_an_object_holding_a_value_or_a_defaulted_zero_stays_a_finding():
    ctx = context(spec_schema(**CLIMATE))
    assert judged(ctx, {"spec": {"climate": {"celsius": 3}}}, {"spec": {}}) == {
        "spec.climate": None
    }
    defaulted = {
        "climate": {
            **CLIMATE["climate"],
            "properties": {
                "celsius": {"type": "integer", "default": 20},
                "vent": {"type": "boolean"},
            },
        }
    }
    ctx = context(spec_schema(**defaulted))
    assert judged(ctx, {"spec": {"climate": {"celsius": 0}}}, {"spec": {}}) == {
        "spec.climate": None
    }


def test_a_changed_value_stays_a_finding():
    ctx = context(spec_schema(**PLAIN))
    before = {"spec": {"paused": True, "replicas": 1, "ratio": 0.5, "owner": "me"}}
    after = {"spec": {"replicas": 0, "ratio": 0}}
    assert judged(ctx, before, after) == {
        "spec.paused": None,  # true -> absent
        "spec.replicas": None,  # 1 -> 0
        "spec.ratio": None,
        "spec.owner": None,
    }
    assert judged(ctx, {"spec": {"paused": True}}, {"spec": {"paused": False}}) == {
        "spec.paused": None
    }


def test_where_the_schema_declares_a_default_absent_is_a_real_loss():
    # The API server fills in the default where the field is absent: not the zero value.
    defaulted = {**PLAIN, "paused": {"type": "boolean", "default": True}}
    defaulted["owner"] = {"type": "string", "default": "team-a"}
    before = {"spec": {"paused": False, "owner": ""}}
    after: dict = {"spec": {}}
    assert judged(context(spec_schema(**defaulted)), before, after) == {
        "spec.paused": None,
        "spec.owner": None,
    }
    # A default at either version of the pair is enough.
    mixed = context(spec_schema(**PLAIN), spec_schema(**defaulted))
    assert judged(mixed, before, after) == {"spec.paused": None, "spec.owner": None}


def test_a_zero_value_whose_declared_default_is_that_zero_is_normalised():
    # Absent reads as the default, which is the zero value lost: the same either way.
    zero_default = {**PLAIN, "paused": {"type": "boolean", "default": False}}
    before = {"spec": {"paused": False}}
    found = judged(context(spec_schema(**zero_default)), before, {"spec": {}})
    assert found == {"spec.paused": ("normalised", "spec.paused: lost (was false) (zero value)")}
    # A default of true at the other version: absent reads true there, a finding.
    truthy = {**PLAIN, "paused": {"type": "boolean", "default": True}}
    mixed = context(spec_schema(**zero_default), spec_schema(**truthy))
    assert judged(mixed, before, {"spec": {}}) == {"spec.paused": None}


def test_a_list_item_or_map_value_keeps_its_zero_value_in_go():
    ctx = context(spec_schema(**PLAIN))
    items = judged(ctx, {"spec": {"ports": [{"n": 1}, {"n": 0}]}}, {"spec": {"ports": [{"n": 1}]}})
    assert items == {"spec.ports[1]": None}
    flags = judged(ctx, {"spec": {"flags": {"a": False}}}, {"spec": {"flags": {}}})
    assert flags == {"spec.flags.a": None}


def test_a_field_no_schema_declares_is_not_judged_a_plain_field():
    ctx = context(
        {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    )
    assert judged(ctx, {"spec": {"paused": False}}, {"spec": {}}) == {"spec.paused": None}
    # An empty string stays normalised as an empty value, as before.
    assert judged(ctx, {"spec": {"owner": ""}}, {"spec": {}}) == {
        "spec.owner": ("normalised", 'spec.owner: lost (was "")')
    }


def test_strict_makes_zero_values_findings():
    ctx = context(spec_schema(**PLAIN), strict=True)
    assert judged(ctx, {"spec": {"paused": False, "replicas": 0}}, {"spec": {}}) == {
        "spec.paused": None,
        "spec.replicas": None,
    }


def test_an_allow_entry_still_comes_first():
    from crdharness.gate.given.config import Allowance

    ctx = context(spec_schema(**PLAIN))
    ctx.config.allow.append(Allowance("spec.paused", None, "flipped on purpose"))
    assert judged(ctx, {"spec": {"paused": True}}, {"spec": {}}) == {
        "spec.paused": ("allowed", "spec.paused (flipped on purpose)")
    }


def test_zero_field_says_what_the_schema_makes_of_a_path():
    entry = {"schema": spec_schema(**PLAIN, level={"type": "integer", "default": 3})}
    assert schemas.zero_field(entry, "spec.paused") == "plain"
    assert schemas.zero_field(entry, "spec.ports[2].open") == "plain"
    assert schemas.zero_field(entry, "spec.level") == "defaulted"
    assert schemas.zero_field(entry, "spec.ports[2]") == "entry"
    assert schemas.zero_field(entry, "spec.flags.x") == "entry"
    assert schemas.zero_field(entry, "spec.unknown") is None
    assert schemas.zero_field({}, "spec.paused") is None


def test_the_zero_value_of_a_difference():
    assert diff.Difference("spec.a", "lost", False).zero_value
    assert diff.Difference("spec.a", "lost", 0).zero_value
    assert diff.Difference("spec.a", "added", None, "").zero_value
    assert not diff.Difference("spec.a", "lost", True).zero_value
    assert not diff.Difference("spec.a", "lost", None).zero_value  # null is not Go's zero
    assert not diff.Difference("spec.a", "changed", True, False).zero_value
    assert not diff.Difference("spec.a[0]", "lost", 0).zero_value  # a list item is data


def test_a_duration_re_spelt_as_go_writes_it_is_normalised_another_is_a_change():
    ctx = context(spec_schema(every={"type": "string"}))
    same = judged(ctx, {"spec": {"every": "1h"}}, {"spec": {"every": "1h0m0s"}})
    note = 'spec.every: "1h" -> "1h0m0s" (the same value, as Go spells it)'
    assert same == {"spec.every": ("normalised", note)}
    assert judged(ctx, {"spec": {"every": "1h"}}, {"spec": {"every": "2h0m0s"}}) == {
        "spec.every": None
    }
    strict = context(spec_schema(every={"type": "string"}), strict=True)
    assert judged(strict, {"spec": {"every": "1h"}}, {"spec": {"every": "1h0m0s"}}) == {
        "spec.every": None
    }


TARGET = {
    "target": {
        "type": "object",
        "properties": {
            "policy": {"type": "string", "enum": ["Owner", "Orphan"], "default": "Owner"},
            "name": {"type": "string"},
            "retries": {"type": "integer"},
        },
    }
}


def test_an_object_appearing_with_only_defaults_and_zero_values_is_normalised():
    # A Go struct without omitempty answers `target: {name: "", retries: 0}`; the API server
    # fills in policy's default.
    ctx = context(spec_schema(**TARGET))
    appeared = {"spec": {"target": {"policy": "Owner", "name": "", "retries": 0}}}
    kind, note = judged(ctx, {"spec": {}}, appeared)["spec.target"]
    assert kind == "normalised" and "the schema's defaults" in note


def test_an_object_appearing_with_data_or_lost_with_defaults_stays_a_finding():
    ctx = context(spec_schema(**TARGET))
    with_data = {"spec": {"target": {"policy": "Orphan"}}}  # not the default: data
    assert judged(ctx, {"spec": {}}, with_data) == {"spec.target": None}
    named = {"spec": {"target": {"name": "web"}}}
    assert judged(ctx, {"spec": {}}, named) == {"spec.target": None}
    # Written by the user and lost: a Go reader of the absent struct gets "", not "Owner".
    assert judged(ctx, {"spec": {"target": {"policy": "Owner"}}}, {"spec": {}}) == {
        "spec.target": None
    }
    strict = context(spec_schema(**TARGET), strict=True)
    assert judged(strict, {"spec": {}}, {"spec": {"target": {"policy": "Owner"}}}) == {
        "spec.target": None
    }


def test_a_default_re_spelt_by_go_still_reads_as_only_defaults():
    # A defaulted duration `1h` reads back as Go's `1h0m0s` in an object written without it:
    # the same value, so the object that appeared holds only defaults (issue 43's `spec`).
    interval = {"type": "string", "default": "1h"}
    ctx = context(spec_schema(target={"type": "object", "properties": {"every": interval}}))
    appeared = {"spec": {"target": {"every": "1h0m0s"}}}
    kind, note = judged(ctx, {"spec": {}}, appeared)["spec.target"]
    assert kind == "normalised" and "the schema's defaults" in note
    other = {"spec": {"target": {"every": "2h0m0s"}}}  # another duration: data
    assert judged(ctx, {"spec": {}}, other) == {"spec.target": None}


def test_a_time_re_spelt_as_metav1_time_writes_it_is_normalised_a_lost_fraction_is_not():
    ctx = context(spec_schema(since={"type": "string", "format": "date-time"}))
    sent = {"spec": {"since": "2024-05-01T10:00:00+02:00"}}
    kind, note = judged(ctx, sent, {"spec": {"since": "2024-05-01T08:00:00Z"}})["spec.since"]
    assert kind == "normalised" and "as Go spells it" in note
    fraction = {"spec": {"since": "2024-05-01T08:00:00.5Z"}}
    assert judged(ctx, fraction, {"spec": {"since": "2024-05-01T08:00:00Z"}}) == {
        "spec.since": None
    }
    assert judged(ctx, sent, {"spec": {"since": "2024-05-01T09:00:00Z"}}) == {"spec.since": None}


def test_a_quantity_re_spelt_as_resource_quantity_writes_it_is_normalised():
    from crdharness.gate import go_values

    assert go_values.respelt("1.5Gi", "1536Mi") and go_values.respelt("1000", "1k")
    assert go_values.respelt(7, "7") and go_values.respelt(0.5, "500m")  # a number, as a string
    assert not go_values.respelt("1Gi", "1073741824")  # Go keeps a quantity's format
    assert not go_values.respelt("7", "8") and not go_values.respelt(7, "7.0")
    ctx = context(spec_schema(limits={"type": "object", "additionalProperties": {}}))
    sent = {"spec": {"limits": {"cpu": 7}}}
    kind, note = judged(ctx, sent, {"spec": {"limits": {"cpu": "7"}}})["spec.limits.cpu"]
    assert kind == "normalised" and "as Go spells it" in note


def test_an_upgrade_read_whose_zero_now_reads_as_both_releases_default_is_no_finding():
    # Outside trial (43, capsule): release 1's webhook answered `state: ""`, which kept the
    # schema's default from filling in; the fixed webhook leaves it to the default, "Active".
    from crdharness.gate.checks.upgrade_reads import _same_default, _zero_now_defaulted

    def entry(state: dict) -> dict:
        status = {"type": "object", "properties": {"state": state}}
        return {"schema": spec_schema(status=status)}

    defaulted = entry({"type": "string", "default": "Active"})
    plain = entry({"type": "string"})
    now_default = diff.Difference("spec.status.state", "changed", "", "Active")
    assert _zero_now_defaulted(defaulted, defaulted, now_default)
    # A default only the new release gives is its news (a finding), as is a value changed.
    assert not _zero_now_defaulted(plain, defaulted, now_default)
    assert not _same_default(plain, defaulted, "spec.status.state")
    cordoned = diff.Difference("spec.status.state", "changed", "Cordoned", "Active")
    assert not _zero_now_defaulted(defaulted, defaulted, cordoned)


def test_a_value_the_user_wrote_that_reads_again_as_it_was_sent_is_a_fix_not_a_loss():
    from types import SimpleNamespace

    from crdharness.gate.checks.upgrade_reads import lets_default

    state = {"type": "string", "enum": ["Active", "Cordoned"], "default": "Active"}
    status = {"type": "object", "properties": {"state": state}}
    ctx = context(spec_schema(status=status))
    release = SimpleNamespace(index=1, version=ctx.releases[0].version)
    ctx.releases = [ctx.releases[0], release]  # type: ignore[list-item]
    now_default = diff.Difference("spec.status.state", "changed", "", "Active")

    def written(sent: dict):
        return SimpleNamespace(crd=NAME, sent=sent)

    assert lets_default(ctx, release, written({}), "v1", now_default)  # never written
    sent_active = {"spec": {"status": {"state": "Active"}}}
    assert lets_default(ctx, release, written(sent_active), "v1", now_default)
    # A user's own "" (where a schema allows it) turned into the default is a change.
    sent_empty = {"spec": {"status": {"state": ""}}}
    assert not lets_default(ctx, release, written(sent_empty), "v1", now_default)
    # A version the earlier release did not have: nothing to compare, no error (CI caught a
    # KeyError here on a release adding a version).
    assert not lets_default(ctx, release, written({}), "v3", now_default)


def test_an_object_appearing_with_an_empty_list_beside_defaults_is_normalised():
    # Outside trial (43): capsule's Tenant written without `spec` reads back with
    # `spec: {owners: [], target-like defaults}` (a Go slice without omitempty); an empty
    # list is normalised on its own, so beside defaults and zero values it is too. A list
    # whose schema gives a default is not: [] there is not what absent reads as.
    lists = {
        **TARGET,
        "owners": {"type": "array", "items": {"type": "string"}},
        "groups": {"type": "array", "items": {"type": "string"}, "default": ["admins"]},
    }
    ctx = context(spec_schema(**lists))
    appeared = {"spec": {"target": {"policy": "Owner", "name": ""}, "owners": []}}
    kind, note = judged(ctx, {}, appeared)["spec"]
    assert kind == "normalised" and "the schema's defaults" in note
    with_item = {"spec": {"target": {"policy": "Owner"}, "owners": [""]}}
    assert judged(ctx, {}, with_item) == {"spec": None}
    emptied = {"spec": {"target": {"policy": "Owner"}, "groups": []}}
    assert judged(ctx, {}, emptied) == {"spec": None}


def test_a_list_item_of_empty_or_zero_values_that_appears_or_goes_is_a_finding():
    # Outside trial (43): capsule's v1alpha1 conversion turns `owners: []` into one owner
    # `{kind: "", name: ""}` (invalid at the hub: kind has an enum); it was listed as
    # normalised. Go and the API server keep every item of a list: its length is data.
    ctx = context(spec_schema(**PLAIN))
    grown = {"spec": {"ports": [{"open": False, "n": 0}]}}
    assert judged(ctx, {"spec": {"ports": []}}, grown) == {"spec.ports[0]": None}
    assert judged(ctx, {"spec": {"ports": [{}]}}, {"spec": {"ports": []}}) == {
        "spec.ports[0]": None
    }
    # the list itself appearing empty, or an item's own zero field, stay normalised
    assert judged(ctx, {"spec": {}}, {"spec": {"ports": []}}) == {
        "spec.ports": ("normalised", "spec.ports: appeared ([])")
    }
