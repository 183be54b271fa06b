"""A second control plane with an audit log of every request: a user's own cluster, whose
log shows who reached it (the gate reading it, a webhook that must never reach it)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import yaml

from crdharness.backends.controlplane import ControlPlane, ControlPlaneOptions
from crdharness.binaries import assets, versions

AUDIT_POLICY = {"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": [{"level": "Metadata"}]}


@contextmanager
def audited_control_plane(directory: Path, k8s_version: str) -> Iterator[tuple[ControlPlane, Path]]:
    """A started control plane and its audit log's path; stopped on leaving."""
    policy = directory / "audit-policy.yaml"
    policy.write_text(yaml.safe_dump(AUDIT_POLICY))
    audit_log = directory / "audit.log"
    release = versions.resolve(k8s_version)
    options = ControlPlaneOptions(
        extra_apiserver_flags=[f"--audit-policy-file={policy}", f"--audit-log-path={audit_log}"]
    )
    plane = ControlPlane(assets.resolve(release), release, options, report=lambda line: None)
    try:
        plane.start()
        yield plane, audit_log
    finally:
        plane.stop()
