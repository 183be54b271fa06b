"""A webhook that re-spells a deprecated field into its successor (``regex: true`` as
``matchType: "=~"``) keeps the meaning: the object reads the same at the other version
before and after the round trip. That is listed apart with both spellings, not a finding
(unless ``strict: true``); a field only lost stays a loss though the other version's reading
is unchanged too (examples/gate/matchers)."""

from __future__ import annotations

import pytest

from tests.test_gate_examples import checks, failed, gate

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
PAIR = "round-trip[matchers.gate.example.com v1->v2]"


def test_a_re_spelling_is_listed_apart_and_passes(tmp_path):
    code, report, output = gate(tmp_path, "matchers/gate.yaml")
    assert code == 0, output[-3000:]
    pair = checks(report)[PAIR]
    assert pair["status"] == "pass" and pair["respelt"], pair
    assert any(
        "spec.pattern: lost" in n and "spec.match: appeared" in n and "reads the same at v2" in n
        for n in pair["respelt"]
    ), pair["respelt"]
    assert "re-spelt by the webhook" in pair["evidence"]
    assert "Re-spelt by the webhook" in (tmp_path / "gate" / "report.md").read_text()


def test_strict_makes_a_re_spelling_a_finding(tmp_path):
    code, report, output = gate(tmp_path, "matchers/gate-strict.yaml")
    assert code == 1 and PAIR in failed(report), output[-3000:]
    assert "spec.pattern" in checks(report)[PAIR]["evidence"]


def test_a_field_only_lost_stays_a_loss_though_the_other_version_reads_the_same(tmp_path):
    code, report, output = gate(tmp_path, "matchers/gate-lossy.yaml")
    assert code == 1 and PAIR in failed(report), output[-3000:]
    pair = checks(report)[PAIR]
    assert "spec.pattern" in pair["evidence"] and not pair.get("respelt"), pair
