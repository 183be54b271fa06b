"""Objects for fields whose validity lives in a rule of their own (outside trial on istio's
CRDs, a release upgraded to itself ended "not proven" for three of them): a string its rule
keeps empty is no path to hold, a map whose keys a rule reads as numbers gets numbered keys,
a string a rule reads as a URL gets one."""

from pathlib import Path

import pytest

from crdharness.gate.evidence import coverage, coverage_objects, forbidden
from tests.gate_cli import gate_example, row

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "gate" / "rule-shaped"


def rules(*texts: str) -> list[dict]:
    return [{"rule": text} for text in texts]


def test_a_leaf_its_own_rule_keeps_empty_is_no_path_to_hold():
    kept_empty = {"type": "string", "x-kubernetes-validations": rules("self.size() == 0")}
    assert forbidden.emptied(kept_empty)
    assert forbidden.emptied(
        {"type": "string", "x-kubernetes-validations": rules("size(self) == 0")}
    )
    assert forbidden.emptied({"type": "string", "x-kubernetes-validations": rules("self == ''")})
    assert not forbidden.emptied(
        {"type": "string", "x-kubernetes-validations": rules("self.size() > 0")}
    )
    assert not forbidden.emptied({"type": "string"})
    ref = {"type": "object", "properties": {"name": {"type": "string"}, "namespace": kept_empty}}
    assert coverage.declared({"type": "object", "properties": {"ref": ref}}) == ["ref.name"]


def test_a_map_whose_keys_a_rule_reads_as_numbers_gets_numbered_keys():
    numbered = {
        "type": "object",
        "additionalProperties": {"type": "integer"},
        "x-kubernetes-validations": rules("self.all(port, 0 < int(port) && int(port) <= 65535)"),
    }
    assert [coverage_objects.map_key(numbered, i) for i in range(2)] == ["1", "2"]
    named = {"type": "object", "additionalProperties": {"type": "integer"}}
    assert coverage_objects.map_key(named, 0) == "gate-0"
    # A rule reading the map's values as numbers says nothing of its keys.
    values = {**named, "x-kubernetes-validations": rules("self.all(k, int(self[k]) > 0)")}
    assert coverage_objects.map_key(values, 0) == "gate-0"
    schema = {"type": "object", "properties": {"ports": {**numbered, "minProperties": 1}}}
    assert coverage_objects.single(schema, "ports.*", 7) == {"ports": {"1": 7}}


def test_a_string_a_rule_reads_as_a_url_is_given_one():
    node = {
        "type": "string",
        "minLength": 1,
        "x-kubernetes-validations": rules("url(self).getScheme() in ['http', 'https']"),
    }
    assert coverage.values_of(node) == (["https://gate.example.com/path"], "")
    assert coverage.values_of({**node, "x-kubernetes-validations": rules("isURL(self)")})[0] == [
        "https://gate.example.com/path"
    ]


@pytest.mark.e2e
@pytest.mark.slow
def test_a_release_whose_fields_live_in_such_rules_passes_upgraded_to_itself(tmp_path):
    code, report, output = gate_example(EXAMPLE / "gate.yaml", tmp_path, "--full")
    for pair in ("v1->v1beta1", "v1beta1->v1"):
        trip = row(report, "round-trip", f"moorings.ruleshaped.example.com {pair}")
        assert trip["status"] == "pass", trip
        assert trip["coverage"] == {"exercised": 3, "declared": 3, "uncovered": {}}, trip
    assert code == 0 and "verdict: PASS" in output, output[-3000:]
