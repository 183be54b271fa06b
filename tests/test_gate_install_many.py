"""A release of many CRDs is installed and waited for side by side (``phases.install``),
and judged as one by one: every CRD served, the rows the same. On a real control plane."""

from __future__ import annotations

from benchmarks import many_crds
from tests.gate_cli import report_of, run_gate


def test_a_release_of_many_crds_is_installed_and_every_one_served(tmp_path):
    history = many_crds.generate(24, tmp_path / "history")
    artifacts = tmp_path / "out"
    done = run_gate(history.gate_file, artifacts, "--", "-k", "install", cwd=tmp_path)
    report = report_of(done, artifacts / "report.json")
    rows = {(c["check"], c["subject"]): c for c in report["checks"]}
    first, second = rows[("install", "release 1")], rows[("install", "release 2")]
    assert first["status"] == "pass", first
    assert first["evidence"].startswith("24 CRDs created; Established, names accepted"), first
    assert second["status"] == "pass", second
    assert second["evidence"].startswith("24 CRDs applied on top of the previous release"), second
    # The break many_crds plants is the upgrade's finding, no install's.
    assert not [c for c in report["checks"] if c["check"] == "install" and c["status"] != "pass"]
