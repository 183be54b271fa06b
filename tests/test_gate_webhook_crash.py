"""A webhook that crashes on an object is named as crashing, with what its log printed at
that moment (a Go ``panic:`` and its first frames), not only by the API server's
``StorageError: corrupt object … RemoteDisconnected``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.gate_cli import gate_crdconvert, report_of, run_gate, two_version_crd

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

CRD = Path(__file__).resolve().parent.parent / "examples" / "gate" / "crontab-webhook" / "crd.yaml"


def test_a_panic_on_one_object_is_named_with_the_webhooks_own_words(tmp_path):
    # crdconvert's panic-on fault stands for a Go converter's nil pointer on objects holding
    # hostPort: it prints a panic and drops the connection unanswered, as net/http does.
    command = (
        "{python} -m crdconvert --host 127.0.0.1 --port {port} --tls-cert {tls_cert} "
        "--tls-key {tls_key} --path /crdconvert --fault panic-on=hostPort"
    )
    gate_file = tmp_path / "gate.yaml"
    gate_file.write_text(
        f"crds: [{CRD}]\nwebhook:\n  command: {json.dumps(command)}\ngenerate: 6\n"
    )
    artifacts = tmp_path / "gate"
    done = run_gate(gate_file, artifacts, cwd=tmp_path)
    report = report_of(done, artifacts / "report.json")
    output = done.stdout + done.stderr
    assert done.returncode == 1, output[-3000:]
    failures = [c for c in report["checks"] if c["status"] == "FAIL"]
    said = json.dumps(failures)
    assert "the webhook crashed on this review" in said, said[:3000]
    assert "http: panic serving: runtime error" in said and "goroutine" in said, said[:3000]
    conduct = next(c for c in report["checks"] if c["check"] == "webhook-conduct")
    assert conduct["status"] == "FAIL" and "crashed on this review" in conduct["evidence"]
    assert "crashed on this review" in done.stdout, done.stdout[-3000:]
    assert "Traceback" not in output, output[-3000:]


TIMER = {"type": "object", "properties": {"name": {"type": "string"}}}
STATUS_CRD = two_version_crd(
    "statusfail.example.com",
    "Timer",
    {
        "type": "object",
        "properties": {
            "spec": TIMER,
            "status": {"type": "object", "properties": {"every": {"type": "string"}}},
        },
    },
    status=True,
)


def test_a_webhook_failing_on_a_status_the_schema_allows_is_a_finding_not_a_refusal(tmp_path):
    # Outside trial (43, D8): a status written at v2 is converted for storage, and a webhook
    # whose Go type cannot hold the value fails; the schema allows it, so the object cannot
    # be stored: convertibility's finding, not "refused by the API server's validation".
    done, report = gate_crdconvert(
        tmp_path, STATUS_CRD, "--fault go-duration=status.every", generate=6
    )
    assert done.returncode == 1, done.stdout[-3000:]
    failing = [c for c in report["checks"] if c["status"] == "FAIL"]
    assert any(
        c["check"] == "convertibility"
        and "v2->v1" in c["subject"]
        and "cannot have its status written" in c["evidence"]
        and "invalid duration" in c["evidence"]
        for c in failing
    ), failing
    assert "status refused by the API server's validation" not in done.stdout


def test_a_sample_the_webhook_cannot_convert_at_all_proves_no_path_built_on_it(tmp_path):
    # (The outside trial: one kueue sample the webhook panics on made four unrelated "paths
    # that differ" rows "proven", every object built for them being built on it.)
    command = (
        "{python} -m crdconvert --host 127.0.0.1 --port {port} --tls-cert {tls_cert} "
        "--tls-key {tls_key} --path /crdconvert --fault panic-on=image"
    )
    (tmp_path / "sample.yaml").write_text(
        "apiVersion: gate.example.com/v1beta1\nkind: CronTab\nmetadata: {name: nightly}\n"
        "cronSpec: '0 3 * * *'\nimage: backup:1\n"
    )
    gate_file = tmp_path / "gate.yaml"
    gate_file.write_text(
        f"crds: [{CRD}]\nsamples: [sample.yaml]\nwebhook:\n  command: {json.dumps(command)}\n"
        "generate: 6\n"
    )
    artifacts = tmp_path / "gate"
    done = run_gate(gate_file, artifacts, cwd=tmp_path)
    report = report_of(done, artifacts / "report.json")
    assert done.returncode == 1, (done.stdout + done.stderr)[-3000:]  # the sample's crash
    rows = {
        r["path"]: r for r in report["version_pair_differences"] if r["version"] == "v1beta1->v1"
    }
    row = rows["hostPort"]
    assert row["decision"] == "not proven", row
    assert "the object it was built on fails the same way without it" in row["evidence"], row
    assert "crashed on this review" in row["evidence"], row
