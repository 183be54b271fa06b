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


class _Read:
    """An API answer's body, as respelt reads it."""

    def __init__(self, body: dict):
        self.body = body


def test_only_a_value_b_showed_counts_as_re_spelt_not_a_loss_b_cannot_see():
    from crdharness.gate import diff
    from crdharness.gate.checks.respelling import respelt

    at_b = _Read({"metadata": {"name": "x"}, "spec": {"match": "a*"}})
    pattern_lost = diff.Difference("spec.pattern", "lost", "a*")
    match_added = diff.Difference("spec.match", "added", None, "a*")
    assert respelt([pattern_lost, match_added], at_b, at_b)  # the matchers example
    assert not respelt([pattern_lost], at_b, at_b)  # only lost: a loss
    # Outside trial (43): a status B does not declare, changed on the way back, reads the
    # same at B trivially; and a field B holds, lost at A beside a re-spelling, is a loss.
    state = diff.Difference("status.state", "changed", "Cordoned", "Active")
    assert not respelt([state], at_b, at_b)
    holds = _Read({"metadata": {"name": "x"}, "spec": {"match": "a*", "classes": ["c"]}})
    classes_lost = diff.Difference("spec.classes", "lost", ["c"])
    assert not respelt([pattern_lost, match_added, classes_lost], holds, holds)
    other = _Read({"metadata": {"name": "x"}, "spec": {"match": "b*"}})
    assert not respelt([pattern_lost, match_added], other, other)  # not what B showed
    # Outside trial (43): a list lost beside an annotation that appeared is no re-spelling.
    noted = diff.Difference("metadata.annotations.note", "added", None, "a*")
    marked = _Read({"metadata": {"name": "x", "annotations": {"note": "a*"}}, "spec": {}})
    assert not respelt([pattern_lost, noted], marked, marked)
    # The successor may sit deeper in the same object.
    deeper = _Read({"metadata": {"name": "x"}, "spec": {"match": {"glob": "a*"}}})
    glob = diff.Difference("spec.match.glob", "added", None, "a*")
    assert respelt([pattern_lost, glob], deeper, deeper)
