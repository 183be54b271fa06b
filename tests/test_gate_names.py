"""The names a CRD's schema lets its objects have (``evidence.names``), read from manifests
alone, and fixed names held one at a time (``names.Slots``); no cluster."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest

from crdharness.gate.evidence import names
from crdharness.gate.evidence.names import NameRule
from crdharness.gate.given import manifests
from crdharness.gate.phases import singletons

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "gate" / "singleton"
UNIQUE = "rt-v1beta1-v1-1234"  # a name the gate makes: prefix, then the run's counter


def entry(*rules: str, name: dict | None = None) -> dict:
    root: dict = {"type": "object", "properties": {"spec": {"type": "object"}}}
    if rules:
        root["x-kubernetes-validations"] = [{"rule": r, "message": "m"} for r in rules]
    if name is not None:
        root["properties"]["metadata"] = {"type": "object", "properties": {"name": name}}
    return {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": root}}


def test_a_schema_that_says_nothing_of_names_keeps_the_gates_own():
    rule = names.rule(entry("self.spec.size > 0"))
    assert rule == NameRule() and rule.single is None
    assert rule.name(UNIQUE) == UNIQUE
    assert names.rule(None) == NameRule()


@pytest.mark.parametrize(
    "text",
    [
        "self.metadata.name == 'cluster'",
        'self.metadata.name == "cluster"',
        "'cluster' == self.metadata.name",
        "(self.metadata.name == 'cluster')",
        "self.metadata.name  ==\n 'cluster'",
        "self.metadata.name == 'cluster' && has(self.spec)",
    ],
)
def test_a_rule_fixing_the_name_makes_a_singleton(text):
    rule = names.rule(entry(text))
    assert rule.single == "cluster"
    assert rule.name(UNIQUE) == rule.name("another-7") == "cluster"


def test_a_listed_set_of_names_is_held_to_its_first_one_at_a_time():
    rule = names.rule(entry("self.metadata.name in ['default', \"primary\"]"))
    assert rule.exact == ("default", "primary") and rule.single == "default"
    assert rule.allows("primary") and not rule.allows("other")
    # Both a rule and the schema's enum: only names both allow.
    both = names.rule(entry("self.metadata.name in ['a', 'b']", name={"enum": ["b", "c"]}))
    assert both.single == "b"


def test_prefix_suffix_and_length_are_met_and_the_counter_kept():
    rule = names.rule(
        entry(
            "self.metadata.name.startsWith('team-')",
            "self.metadata.name.endsWith('-cfg') && size(self.metadata.name) <= 20",
        )
    )
    assert (rule.prefix, rule.suffix, rule.max_length) == ("team-", "-cfg", 20)
    made = rule.name(UNIQUE)
    assert made.startswith("team-") and made.endswith("-cfg") and len(made) <= 20
    assert "1234" in made  # shortened from the front: still unique
    assert rule.name("rt-v1beta1-v1-1235") != made
    assert rule.single is None


@pytest.mark.parametrize(
    ("text", "limit"),
    [
        ("size(self.metadata.name) < 10", 9),
        ("self.metadata.name.size() <= 12", 12),
    ],
)
def test_a_size_rule_bounds_the_name(text, limit):
    rule = names.rule(entry(text))
    assert rule.max_length == limit
    made = rule.name(UNIQUE)
    assert len(made) <= limit and made[0].isalnum() and made.endswith("1234")


def test_a_pattern_from_a_rule_or_the_schema_is_met():
    rule = names.rule(entry("self.metadata.name.matches('^[a-z]+$')"))
    made = rule.name(UNIQUE)
    assert re.fullmatch("[a-z]+", made), made
    assert rule.name("rt-v1beta1-v1-1235") != made  # digits become letters, one for one
    declared = names.rule(entry(name={"type": "string", "pattern": "^[a-z0-9]+$", "maxLength": 8}))
    made = declared.name(UNIQUE)
    assert re.fullmatch("[a-z0-9]+", made) and len(made) <= 8, made


def test_what_depends_on_the_object_is_left_to_the_server():
    # Either-or terms, conditionals: no name is fixed or constrained by the gate's reading.
    for text in (
        "self.metadata.name == 'cluster' || self.spec.shared",
        "self.spec.shared ? self.metadata.name == 'cluster' : true",
        "self.metadata.name == self.spec.owner",
    ):
        assert names.rule(entry(text)) == NameRule(), text


def test_a_name_no_candidate_meets_is_returned_as_built_for_the_server_to_refuse():
    rule = names.rule(entry("self.metadata.name.matches('^x{40}$')"))
    assert rule.name(UNIQUE) == UNIQUE
    assert not rule.allows(UNIQUE)


def test_the_singleton_example_is_read_as_one():
    releases = manifests.load_history(
        [[EXAMPLE / "release-1.yaml"], [EXAMPLE / "release-2-compatible.yaml"]], EXAMPLE
    )
    crd = "settings.singleton.gate.example.com"
    for release in releases:
        assert singletons.one_at_a_time(release, crd)
        assert {names.rule(v).single for v in release.versions(crd)} == {"cluster"}


def test_a_fixed_name_is_held_by_one_at_a_time_and_a_free_one_by_none():
    slots = names.Slots()
    with slots.held("settings.example.com", None, "gate-1", fixed=False):
        assert slots._held == {}  # unique names need no turn
    entered = threading.Event()

    def second() -> None:
        with slots.held("settings.example.com", None, "cluster", fixed=True):
            entered.set()

    with slots.held("settings.example.com", None, "cluster", fixed=True):
        lock = slots._held[("settings.example.com", "", "cluster")]
        assert lock.locked()
        waiting = threading.Thread(target=second)
        waiting.start()
        assert not entered.is_set()  # it cannot have entered: the name is held here
    # Awaited: the second holder's turn, once the first let go.
    assert entered.wait(timeout=30), "the second holder never got the name"
    waiting.join(timeout=30)
    assert not lock.locked()
