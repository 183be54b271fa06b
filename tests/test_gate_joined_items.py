"""Items of a list of plain strings are drawn holding a separator (a comma most often): a
webhook that keeps such a list joined in one annotation and splits it back turns one item
into two, and the gate must name that loss (issue 43: capsule's forbidden label lists)."""

from __future__ import annotations

import json

import pytest

from crdharness.gate.evidence import objects
from tests.gate_cli import gate_crdconvert, two_version_crd

TAGS = {"type": "array", "items": {"type": "string"}}
SCHEMA = {
    "type": "object",
    "properties": {"spec": {"type": "object", "required": ["tags"], "properties": {"tags": TAGS}}},
}


def drawn_specs(properties: dict) -> list[dict]:
    """The ``spec`` of 30 bodies drawn (seed 0) for a version whose spec requires
    ``properties``."""
    spec = {"type": "object", "required": list(properties), "properties": properties}
    root = {"type": "object", "required": ["spec"], "properties": {"spec": spec}}
    version = {"name": "v1", "schema": {"openAPIV3Schema": root}}
    return [body["spec"] for body in objects.first_examples(version, 30, seed=0)]


def drawn_items(items: dict) -> list[str]:
    specs = drawn_specs({"tags": {"type": "array", "minItems": 1, "items": items}})
    return [t for spec in specs for t in spec["tags"]]


def test_plain_string_items_are_drawn_holding_a_comma():
    tags = drawn_items({"type": "string"})
    assert any("," in t for t in tags), tags
    assert any(not any(s in t for s in objects.SEPARATORS) for t in tags), tags


def test_items_too_short_for_a_separator_or_with_a_pattern_are_drawn_as_before():
    assert all(len(t) <= 2 for t in drawn_items({"type": "string", "maxLength": 2}))
    assert all(t.isdigit() for t in drawn_items({"type": "string", "pattern": "^[0-9]+$"}))


CRD = two_version_crd("joineditems.example.com", "Label", SCHEMA)


@pytest.mark.e2e
@pytest.mark.slow
def test_a_list_kept_joined_with_commas_by_the_webhook_is_named_lost(tmp_path):
    done, report = gate_crdconvert(tmp_path, CRD, "--fault split-items=spec.tags", generate=10)
    assert done.returncode == 1, done.stdout[-3000:]
    pairs = [c for c in report["checks"] if c["check"] == "round-trip"]
    assert any(p["status"] == "FAIL" and "spec.tags" in json.dumps(p) for p in pairs), pairs


def test_durations_are_drawn_as_go_spells_them_below_a_second_too():
    from crdharness.gate import go_durations

    every = {"type": "string", "format": "duration"}
    drawn = [spec["every"] for spec in drawn_specs({"every": every})]
    lengths = [go_durations.parse(d) for d in drawn]
    assert None not in lengths, drawn
    assert any(n % 10**9 for n in lengths if n), drawn  # some not whole seconds
    assert len(set(drawn)) > 5, drawn


DURATION_CRD = two_version_crd(
    "drawndurations.example.com",
    "Timer",
    {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "required": ["every"],
                "properties": {"every": {"type": "string", "format": "duration"}},
            }
        },
    },
)


@pytest.mark.e2e
@pytest.mark.slow
def test_the_api_server_accepts_every_drawn_duration(tmp_path):
    done, report = gate_crdconvert(tmp_path, DURATION_CRD, generate=10)
    assert done.returncode == 0, done.stdout[-3000:]
    assert not report.get("refused_objects"), report.get("refused_objects")
