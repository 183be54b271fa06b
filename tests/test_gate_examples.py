"""The gate's shipped examples, run as a user runs them (``python -m crdharness gate``), each
on a control plane of its own: the verdict and the evidence the issue promises."""

import json
import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from crdharness.binaries import assets, versions

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "gate"
pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def gate(
    tmp_path: Path, example: str, env: dict | None = None, report_in: str = ""
) -> tuple[int, dict, str]:
    """Run the gate on an example; return its exit code, its report (the one in
    ``report_in``, a sub-directory, for a gate over several Kubernetes versions) and output."""
    artifacts = tmp_path / "gate"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "crdharness",
            "gate",
            str(EXAMPLES / example),
            "--artifacts",
            str(artifacts),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, **(env or {})},
        cwd=tmp_path,
        check=False,
    )
    report_file = artifacts / report_in / "report.json"
    assert report_file.exists(), (
        f"no report; the gate said:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    )
    return result.returncode, json.loads(report_file.read_text()), result.stdout


def checks(report: dict) -> dict[str, dict]:
    return {f"{c['check']}[{c['subject']}]": c for c in report["checks"]}


def failed(report: dict) -> set[str]:
    return {key for key, c in checks(report).items() if c["status"] == "FAIL"}


def test_the_documented_crontab_with_the_reference_webhook_passes(tmp_path):
    code, report, output = gate(tmp_path, "crontab-webhook/gate.yaml")
    assert code == 0, output[-3000:]
    assert report["verdict"] == "PASS" and failed(report) == set()
    found = checks(report)
    assert found["round-trip[crontabs.gate.example.com v1beta1->v1]"]["counts"]["compared"] > 0
    assert found["webhook-conduct[webhook]"]["counts"]["reviews"] > 0
    assert "crdharness upgrade gate" in output  # the terminal summary


def test_objects_written_under_the_older_kubernetes_read_the_same_under_the_newer(tmp_path):
    code, report, output = gate(
        tmp_path, "crontab-webhook/gate-across-kubernetes.yaml", report_in="k8s-1.36"
    )
    assert code == 0, output[-3000:]
    upgrade = checks(report)["kubernetes-upgrade[1.36->1.37]"]
    assert upgrade["status"] == "pass", upgrade
    assert upgrade["counts"]["objects"] > 30 and upgrade["counts"]["reads"] > 60
    assert "v1.37.2 exactly as under v1.36.4; stored bytes untouched" in upgrade["evidence"]
    newer = json.loads((tmp_path / "gate" / "k8s-1.37" / "report.json").read_text())
    assert newer["verdict"] == "PASS"
    assert not [c for c in newer["checks"] if c["check"] == "kubernetes-upgrade"]


def test_a_lossy_converter_fails_and_names_the_path(tmp_path):
    code, report, _ = gate(tmp_path, "crontab-lossy/gate.yaml")
    assert code != 0
    assert failed(report) == {
        "round-trip[crontabs.gate.example.com v1->v1beta1]",
        "round-trip[crontabs.gate.example.com v1beta1->v1]",
    }
    for key in failed(report):
        assert "changed image" in checks(report)[key]["evidence"]
    shown = list((tmp_path / "gate" / "objects").glob("round-trip-*.yaml"))
    assert shown, "the failing objects are written as YAML"
    assert any("image:" in path.read_text() for path in shown)


def test_strategy_none_with_a_renamed_field_fails_the_schema_check(tmp_path):
    code, report, _ = gate(tmp_path, "rename-none/gate.yaml")
    assert code != 0
    strategy = checks(report)["schemas-vs-strategy[widgets.gate.example.com]"]
    assert strategy["status"] == "FAIL"
    assert "spec.colour exists at v1 but not at v2" in "\n".join(strategy["details"])
    # ... and the sample shows it on data: its colour does not survive v1 -> v2 -> v1.
    assert (
        "spec.colour" in checks(report)["round-trip[widgets.gate.example.com v1->v2]"]["evidence"]
    )


def test_status_written_through_the_subresource_survives_a_faithful_webhook(tmp_path):
    code, report, output = gate(tmp_path, "backup-webhook/gate.yaml")
    assert code == 0, output[-3000:]
    assert (
        checks(report)["round-trip[backups.gate.example.com v1->v1alpha1]"]["counts"]["compared"]
        > 0
    )


def test_a_webhook_that_drops_status_conditions_fails_and_names_them(tmp_path):
    code, report, _ = gate(tmp_path, "backup-webhook/gate-drops-conditions.yaml")
    assert code != 0
    assert failed(report) == {
        "round-trip[backups.gate.example.com v1->v1alpha1]",
        "round-trip[backups.gate.example.com v1alpha1->v1]",
    }
    # v1 is stored: a spec update at v1alpha1 loses the conditions written at v1.
    spec_update = checks(report)["round-trip[backups.gate.example.com v1->v1alpha1]"]
    assert "v1->v1alpha1->v1 changed status.conditions" in spec_update["evidence"]


def test_objects_refused_by_the_users_admission_webhook_are_counted_not_findings(tmp_path):
    code, report, output = gate(tmp_path, "admission/gate.yaml")
    assert code == 0, output[-3000:]
    refused = report["refused_objects"].get("refused by an admission webhook", 0)
    assert refused > 0
    assert "spec.size" in report["refused_examples"]["refused by an admission webhook"]


@pytest.fixture(scope="module")
def agnhost_binary() -> Path:
    # Built from the same Kubernetes module as kube-apiserver (seconds with a warm module cache).
    return assets.agnhost(versions.resolve(None))


def test_agnhost_as_the_users_webhook_passes(tmp_path, agnhost_binary):
    code, report, output = gate(
        tmp_path, "crontab-agnhost/gate.yaml", {"AGNHOST": str(agnhost_binary)}
    )
    assert code == 0, output[-3000:]
    assert report["verdict"] == "PASS"
    assert checks(report)["webhook-conduct[webhook]"]["counts"]["reviews"] > 0
    # Started through sh -> unshare -> sh: the whole process group went with the gate.
    leftovers = [
        p.pid
        for p in psutil.process_iter(["cmdline"])
        if str(agnhost_binary) in " ".join(p.info["cmdline"] or [])
    ]
    assert leftovers == []


def test_a_three_release_history_passes_because_the_gate_migrates(tmp_path):
    code, report, output = gate(tmp_path, "backup-history/gate.yaml")
    assert code == 0, output[-3000:]
    found = checks(report)
    assert "storedVersions ['v1alpha1', 'v1'] -> [v1]" in found["migration[release 2]"]["evidence"]
    assert "etcd keys untouched" in found["upgrade[release 1->2]"]["evidence"]
    assert found["deprecation[release 2]"]["evidence"].startswith("Warning header on get, list")


def test_removing_a_version_never_deprecated_fails_the_deprecation_check(tmp_path):
    code, report, _ = gate(tmp_path, "backup-history/gate-not-deprecated.yaml")
    assert code != 0
    assert failed(report) == {"deprecation[release 2->3]"}
    assert "never deprecated" in checks(report)["deprecation[release 2->3]"]["evidence"]


def test_removing_a_version_still_stored_shows_the_servers_422(tmp_path):
    code, report, _ = gate(tmp_path, "backup-history/gate-still-stored.yaml")
    assert code != 0
    found = checks(report)
    migration = found["migration[release 2->3]"]
    assert migration["status"] == "FAIL"
    assert (
        "reject this revision with 422: ship a release that migrates first" in migration["evidence"]
    )
    assert any("must remain in spec.versions" in line for line in migration["details"])
    assert "install[release 3]" in failed(report)


@pytest.mark.container
def test_the_reference_webhook_from_its_image_passes(tmp_path):
    from crdharness.webhooks import images

    code, report, output = gate(tmp_path, "crontab-image/gate.yaml")
    assert code == 0, output[-3000:]
    assert checks(report)["webhook-conduct[webhook]"]["counts"]["reviews"] > 0
    left = images.docker("ps", "-aq", "--filter", "label=crdharness=webhook").stdout.split()
    assert left == [], "the gate's webhook container outlived the run"
