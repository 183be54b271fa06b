"""A convertibility failure release 1's round trips cannot decide, known by its hazards
(``evidence.hazard_errors``), on a real control plane: the examples in
``examples/gate/hazard-debt`` run as a user runs them. Release 1's round trips never write
the failing object (the user's sample is refused at v1 by release 1's pattern); its
upgrade's writes of its own objects meet the same defect at v2."""

from pathlib import Path

import pytest

from tests.gate_cli import gate_example, row

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "gate" / "hazard-debt"
PAIR = "kilns.hazards.example.com v1->v2"
pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def gate(tmp_path: Path, example: str) -> tuple[int, dict, str]:
    return gate_example(EXAMPLES / example, tmp_path)


def convertibility(report: dict) -> dict:
    return row(report, "convertibility", PAIR)


def test_a_refusal_in_the_words_of_release_1s_own_hazards_is_its_debt(tmp_path):
    code, report, output = gate(tmp_path, "gate-same-rule.yaml")
    assert "a glazing starts with g" in " ".join(report["hazards"]), report["hazards"]
    row = convertibility(report)
    assert (
        row["status"] != "FAIL"
        and "release 1's debt, not a finding: spec.glazing" in row["evidence"]
    ), row
    owed = [d for d in report["debt"] if d["subject"] == PAIR]
    assert [(d["paths"], d.get("same_object")) for d in owed] == [(["spec.glazing"], None)], owed
    assert owed[0]["evidence"].startswith(
        "release 1's own objects were refused at v2 for spec.glazing in the same words"
    ), owed[0]
    assert code == 2 and "verdict: NOT PROVEN" in output, output[-3000:]  # thin, never FAIL


def test_a_rule_worded_anew_on_the_same_field_stays_the_candidates_finding(tmp_path):
    code, report, output = gate(tmp_path, "gate-new-rule.yaml")
    row = convertibility(report)
    assert row["status"] == "FAIL", row
    assert "a glazing must begin with g" in row["evidence"], row
    assert any("the per-object check was not made" in d for d in row["details"]), row
    assert not [d for d in report["debt"] if d["subject"] == PAIR], report["debt"]
    assert code == 1, output[-3000:]
