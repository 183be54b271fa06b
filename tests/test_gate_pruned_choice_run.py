"""A path no object can hold, below a field the other version does not declare, on a real
control plane (``examples/gate/pruned-choice``, run as a user runs it): under strategy None
the API server prunes that field at the other version whatever it holds, so the path is
judged with the field's loss, not left "not held" (kueue v0.19.2's workloads upgraded to
itself stayed "not proven" for the branch of an exactly-one-of rule no object held)."""

from pathlib import Path

import pytest

from tests.gate_cli import gate_example, row

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "gate" / "pruned-choice"
PAIR = "berths.pruned.example.com v2->v1"
pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_the_branch_no_object_holds_is_judged_with_the_field_pruned_above_it(tmp_path):
    code, report, output = gate_example(EXAMPLE / "gate.yaml", tmp_path)
    trip = row(report, "round-trip", PAIR)
    coverage = trip["coverage"]
    assert coverage["uncovered"] == {}, trip
    assert coverage["lost_whole"]["spec.slot.individual.prefix"] == (
        "lost whole with spec.slot, which v1 does not declare (no object held this path "
        "itself: that field is pruned at v1 whatever it holds)"
    ), coverage
    # The loss itself is said, and is release 1's: the same CRD loses it there.
    assert trip["status"] != "FAIL" and "spec.slot" in trip["evidence"], trip
    assert not trip["evidence"].startswith("not proven"), trip
    assert any(d["subject"] == PAIR for d in report["debt"]), report["debt"]
    assert code in (0, 2), output[-3000:]
