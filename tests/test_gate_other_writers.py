"""Reads of old objects that another client wrote since the gate's last read or write (the
project's controllers, running in the webhook's process: kueue's reconcile its Workloads'
status) are not compared (``upgrade_objects.other_writers``)."""

from crdharness.gate.checks.upgrade_objects import other_writers


def test_a_read_another_client_wrote_names_it_and_the_gates_own_writes_do_not():
    def read(*entries):
        return {"metadata": {"managedFields": [dict(e) for e in entries]}}

    gate_put = {"manager": "python-requests", "operation": "Update", "time": "t1"}
    gate_apply = {"manager": "crdharness-gate", "operation": "Apply", "time": "t2"}
    controller = {"manager": "kueue-admission", "operation": "Update", "subresource": "status"}
    before = read(gate_put, {**controller, "time": "t0"})
    # the gate's own writes since: no other writer
    assert (
        other_writers(
            before, read({**gate_put, "time": "t3"}, gate_apply, {**controller, "time": "t0"})
        )
        == []
    )
    # the controller wrote the status again (its entry changed): named
    assert other_writers(before, read(gate_put, {**controller, "time": "t4"})) == [
        "kueue-admission"
    ]
    # a manager that appears
    assert other_writers(read(), read({"manager": "kubectl-edit", "operation": "Update"})) == [
        "kubectl-edit"
    ]
