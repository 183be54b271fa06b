"""The gate's checks as pytest tests: one per planned check (see ``crdharness.gate.run.plan``).
Collected only by ``python -m crdharness gate``."""

import pytest


@pytest.mark.e2e
def test_gate(gate_run, gate_check):
    gate_run.run(gate_check.phase)
    result = gate_run.decision(gate_check)
    if result.passed is False:
        pytest.fail(result.explain(), pytrace=False)
