"""The webhook the gate starts talks only to the gate's cluster: a developer's exported
``KUBECONFIG`` (most have one) and a pod's in-cluster variables are never handed on, so a
controller manager started as the webhook cannot reach the caller's real cluster."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from crdharness import kubeconfig
from tests.audited import audited_control_plane
from tests.gate_cli import report_of, run_gate

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

CRD = Path(__file__).resolve().parent.parent / "examples" / "gate" / "crontab-webhook" / "crd.yaml"
CALLER = "the-callers-own-user"

# The webhook: before it serves, it does what a controller manager does at start (lists
# namespaces through $KUBECONFIG) and writes down which server answered and what it was given.
WEBHOOK = textwrap.dedent(
    """
    import json, os, sys
    from kubernetes import client, config
    config.load_kube_config()
    api = client.CoreV1Api()
    server = api.api_client.configuration.host
    names = [n.metadata.name for n in api.list_namespace().items]
    seen = {"server": server, "namespaces": names, "KUBECONFIG": os.environ.get("KUBECONFIG"),
            "in_cluster": os.environ.get("KUBERNETES_SERVICE_HOST")}
    open(sys.argv[1], "w").write(json.dumps(seen))
    os.execv(sys.executable, [sys.executable, "-m", "crdconvert", *sys.argv[2:]])
    """
)


@pytest.fixture
def callers_cluster(tmp_path, request):
    """The caller's own cluster: a control plane with an audit log of every request."""
    with audited_control_plane(tmp_path, request.config.getoption("--k8s-version")) as (
        plane,
        audit_log,
    ):
        assert plane.ca is not None
        pair = plane.ca.issue_client(CALLER, CALLER, ("system:masters",))
        path = kubeconfig.write(
            tmp_path / "callers.kubeconfig",
            "callers-cluster",
            plane.server_url,
            plane.ca.bundle_b64,
            pair,
        )
        yield plane, path, audit_log


def _requests_by(audit_log: Path, user: str) -> list[str]:
    if not audit_log.exists():
        return []
    made = []
    for line in audit_log.read_text().splitlines():
        event = json.loads(line)
        if event.get("user", {}).get("username") == user:
            made.append(f"{event['verb']} {event['requestURI']}")
    return made


def test_the_webhook_never_reaches_the_callers_cluster(callers_cluster, tmp_path):
    plane, callers_kubeconfig, audit_log = callers_cluster
    script = tmp_path / "webhook.py"
    script.write_text(WEBHOOK)
    seen_file = tmp_path / "seen.json"
    command = (
        f"{{python}} {script} {seen_file} --host 127.0.0.1 --port {{port}} "
        "--tls-cert {tls_cert} --tls-key {tls_key} --path /crdconvert"
    )
    gate_file = tmp_path / "gate.yaml"
    gate_file.write_text(
        f"crds: [{CRD}]\nwebhook:\n  command: {json.dumps(command)}\ngenerate: 3\n"
        "upgrade_objects: 3\nmin_objects: 1\n"
    )
    # The caller's environment as on a developer's machine, and in a CI pod.
    env = {
        "KUBECONFIG": str(callers_kubeconfig),
        "KUBERNETES_SERVICE_HOST": "127.0.0.1",
        "KUBERNETES_SERVICE_PORT": plane.server_url.rsplit(":", 1)[1],
    }
    artifacts = tmp_path / "gate"
    done = run_gate(gate_file, artifacts, cwd=tmp_path, env=env)
    report_of(done, artifacts / "report.json")  # it ran
    seen = json.loads(seen_file.read_text())
    assert seen["KUBECONFIG"] != str(callers_kubeconfig), seen
    assert seen["in_cluster"] is None, seen
    assert seen["server"] != plane.server_url and "kube-system" in seen["namespaces"], seen
    assert _requests_by(audit_log, CALLER) == [], "the webhook reached the caller's cluster"
