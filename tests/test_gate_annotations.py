"""CI annotations from real gate reports (``tests/data/reports``: report.json files the gate
wrote on the examples), and the GitHub Action's gate step run as Actions runs it."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from crdharness.gate.reporting import annotations

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "gate"
REPORTS = Path(__file__).resolve().parent / "data" / "reports"


def annotate(report: str, *candidate: str) -> list[str]:
    found = annotations.from_report(
        json.loads((REPORTS / report).read_text()), [EXAMPLES / c for c in candidate]
    )
    return [a.github(ROOT) for a in found]


def line_of(file: str, key: str) -> int:
    """The 1-based line of the first line of ``file`` that is ``key`` (a schema's field:
    ``name:`` alone, or ``colour: {type: string}``)."""
    lines = (EXAMPLES / file).read_text().splitlines()
    return next(
        i for i, line in enumerate(lines, 1) if line.strip() in (key, f"{key} {{type: string}}")
    )


def test_a_failing_upgrade_points_to_each_tightened_field():
    found = annotate("upgrade-tightened-bounds.json", "tightened/release-2-bounds.yaml")
    file = "examples/gate/tightened/release-2-bounds.yaml"
    name = line_of("tightened/release-2-bounds.yaml", "name:")
    replicas = line_of("tightened/release-2-bounds.yaml", "replicas:")
    assert [a.split("::")[1].split(",title=")[0] for a in found] == [
        f"error file={file},line={name}",
        f"error file={file},line={name}",
        f"error file={file},line={replicas}",
    ]
    assert "title=upgrade%3A bound tightened at spec.replicas" in found[2]
    assert "less than or equal to 10" in found[2]
    assert all("\n" not in a for a in found)  # one workflow command per line


def test_a_failing_migration_points_to_the_crds_versions_line():
    found = annotate("migration-bundle.json", "bundle/release-3")
    file = "examples/gate/bundle/release-3/snapshots.yaml"
    versions = line_of("bundle/release-3/snapshots.yaml", "versions:")
    assert versions > 1
    by_title = {a.split("title=")[1].split("::")[0]: a for a in found}
    assert f"file={file},line={versions}," in by_title["migration%3A release 2->3"]
    assert f"file={file},line={versions}," in by_title["install%3A release 3"]
    assert "clusters that still store v1alpha1" in by_title["migration%3A release 2->3"]


def test_a_failing_round_trip_points_to_the_lost_field_at_its_version():
    found = annotate("round-trip-rename-none.json", "rename-none/crd.yaml")
    colour = line_of("rename-none/crd.yaml", "colour:")
    color = line_of("rename-none/crd.yaml", "color:")
    assert any(f",line={colour},title=round-trip%3A" in a and "spec.colour" in a for a in found)
    assert any(f",line={color},title=round-trip%3A" in a and "spec.color" in a for a in found)


def test_messages_are_escaped_for_the_workflow_command():
    annotation = annotations.Annotation(Path("/r/a.yaml"), 3, "t: x, y", "50%\nnext")
    assert (
        annotation.github(Path("/r"))
        == "::error file=a.yaml,line=3,title=t%3A x%2C y::50%25%0Anext"
    )


@pytest.mark.e2e
def test_the_actions_gate_step_writes_the_summary_outputs_and_annotations(tmp_path):
    output, summary = tmp_path / "output", tmp_path / "summary.md"
    run = subprocess.run(
        ["bash", str(ROOT / "action" / "gate.sh")],
        env={
            **os.environ,
            "GATE_FILE": str(EXAMPLES / "tightened" / "gate-bounds.yaml"),
            "ARTIFACTS": str(tmp_path / "artifacts"),
            "GITHUB_OUTPUT": str(output),
            "GITHUB_STEP_SUMMARY": str(summary),
        },
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-3000:]  # the action's last step fails the job
    assert output.read_text().splitlines() == [
        "exit-code=1",
        "verdict=fail",
        "artifact-name=crdharness-gate-report",  # one per shard with `shard:`
    ]
    assert summary.read_text().startswith("# Upgrade gate: FAIL")
    assert "## What changed, release 1 -> 2" in summary.read_text()
    errors = [line for line in run.stdout.splitlines() if line.startswith("::error ")]
    assert len(errors) == 3, run.stdout[-3000:]
    assert all("file=examples/gate/tightened/release-2-bounds.yaml" in e for e in errors)


def test_the_action_is_valid_metadata_and_its_inputs_are_documented():
    import yaml

    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    steps = action["runs"]["steps"]
    assert all(s.get("shell") == "bash" for s in steps if "run" in s)  # composite runs need it
    gate_step = next(s for s in steps if s.get("id") == "gate")
    assert "action/gate.sh" in gate_step["run"] and (ROOT / "action" / "gate.sh").is_file()
    assert set(action["outputs"]) == {"exit-code", "verdict"}
    readme = (ROOT / "README.md").read_text()
    assert all(f"{name}:" in readme for name in action["inputs"]), "README: The gate in a PR"
