"""The gate's checks as pytest tests: one per planned check (see ``crdharness.gate.plan``).
Collected only by ``python -m crdharness gate``."""

import pytest


@pytest.mark.e2e
def test_gate(gate_run, gate_check):
    gate_run.run(gate_check.phase)
    result = gate_run.results.get(f"{gate_check.check}:{gate_check.subject}")
    if result is None:
        if gate_check.phase == "history" and not gate_run.history_completed:
            pytest.fail("not reached: a release before it was refused (see the install check)")
        pytest.fail(f"{gate_check.check} [{gate_check.subject}] was not decided by the run")
    if result.passed is False:
        pytest.fail(result.explain(), pytrace=False)
