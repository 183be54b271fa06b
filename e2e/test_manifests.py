"""Every manifest in manifests/ is accepted by a real API server (server-side dry run)."""

import base64
import json
import uuid

import pytest

from crdharness import certs, manifests_yaml
from e2e.conftest import MANIFESTS

FILES = sorted(p.relative_to(MANIFESTS) for p in MANIFESTS.rglob("*.yaml"))


def filled(text: str, tmp_path) -> str:
    """Fill the placeholders the harness fills before applying."""
    ca = certs.CertificateAuthority(tmp_path)
    pair = ca.issue_server("webhook", "example-conversion-webhook-server.default.svc")
    return (
        text.replace("CA_BUNDLE_PLACEHOLDER", ca.bundle_b64)
        .replace("TLS_CRT_PLACEHOLDER", base64.b64encode(pair.cert.read_bytes()).decode())
        .replace("TLS_KEY_PLACEHOLDER", base64.b64encode(pair.key.read_bytes()).decode())
    )


@pytest.mark.behaviour("MV-14")
@pytest.mark.parametrize("relative", FILES, ids=[str(f) for f in FILES])
def test_manifest_passes_server_side_validation(cluster, tmp_path, relative):
    text = filled((MANIFESTS / relative).read_text(), tmp_path)
    (document,) = manifests_yaml.load_all(text)
    assert "metadata" in document and document["metadata"].get("name")
    if document["kind"] == "CustomResourceDefinition":
        spec = document["spec"]
        assert document["metadata"]["name"] == f"{spec['names']['plural']}.{spec['group']}"
        assert sum(1 for v in spec["versions"] if v.get("storage")) == 1
        # Under a group of its own: other tests create and delete the documented CRD on the
        # same cluster, and a dry-run apply racing a deletion is refused ("not found").
        spec["group"] = f"m{uuid.uuid4().hex[:8]}.{spec['group']}"
        document["metadata"]["name"] = f"{spec['names']['plural']}.{spec['group']}"
        text = json.dumps(document)
    result = cluster.kubectl("apply", "--dry-run=server", "-f", "-", input=text)
    assert "(server dry run)" in result.stdout
