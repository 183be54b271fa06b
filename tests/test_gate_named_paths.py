"""The field paths a finding names, where they are: beside ``spec`` too (``status.phase``, a
top-level ``data``), and never the word "status" of a write's name or a URL."""

from __future__ import annotations

import pytest

from crdharness.gate.diff import named_paths
from crdharness.gate.reporting.terminal import failure_block
from crdharness.gate.results import CheckResult

STATUS_WRITE = 'team-a/lab: status update through /status at v1: 422 Tunnel.x "lab" is invalid: '


@pytest.mark.parametrize(
    ("text", "paths"),
    [
        (STATUS_WRITE + 'status.phase: Unsupported value: "Gone"', ["status.phase"]),
        (STATUS_WRITE + 'data.mode: Unsupported value: "legacy"', ["data.mode"]),
        ("team-a/lab at v1: data: lost (was <value>)", ["data"]),
        ('team-a/lab at v1: data.port: 80 -> "80"', ["data.port"]),
        (
            "[spec.owner: Required value, metadata.labels: Invalid value: x]",
            ["spec.owner", "metadata.labels"],
        ),
        ("ns/a at v1: status: lost (was {})", ["status"]),
        ("status.conditions lost between v1 and v2", ["status.conditions"]),
        ("spec.ports[1].name: Too long: may not be longer than 15", ["spec.ports[1].name"]),
        ("status update through /status at v1: 409 conflict", []),
        ("update with what was read at v1: 422 y -> z", []),
        ("cannot be read at v1alpha1: Internal error occurred: StorageError", []),
        ("read back at v2: Invalid value: 3", []),
    ],
)
def test_a_finding_names_the_paths_it_is_about(text, paths):
    assert named_paths(text) == paths


def test_a_failure_block_names_the_field_not_the_status_write():
    result = CheckResult("upgrade", "release 1->2")
    result.fail(STATUS_WRITE + 'data.mode: Unsupported value: "legacy"')
    lines = failure_block(result, {})
    assert "  paths: data.mode" in lines, lines
