"""What another process needs to attach to a running control plane: ``plane.json`` in its
workspace (ports, process identities, the guardian), rewritten after every change; and the
check that the plane attached to is the one this process would start.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

import requests

from crdharness.errors import HarnessError
from crdharness.processes import command_line, identity

if TYPE_CHECKING:
    from crdharness.backends.controlplane.parts import Plane

PLANE_FILE = "plane.json"


def write_record(plane: Plane) -> None:
    """Write the plane's record atomically (a reader never sees half of it)."""
    assert plane.etcd is not None
    processes = {
        p.name: list(identity(p.pid) or (p.pid, 0.0))
        for p in (plane.etcd, plane.apiserver, plane.controller_manager)
        if p is not None and p.pid is not None
    }
    record = {
        "kubernetes": plane.release.git_version,
        "apiserver_port": plane.apiserver_port,
        "etcd_port": plane.etcd_port,
        "etcd_peer_port": plane.etcd.peer_port,
        "controller_manager_port": plane.controller_manager_port,
        "processes": processes,
        "start_to_ready_seconds": plane.start_to_ready_seconds,
        "guardian_pid": plane.guardian_pid,
    }
    scratch = plane.path / f"{PLANE_FILE}.{os.getpid()}"
    scratch.write_text(json.dumps(record, indent=2))
    scratch.replace(plane.path / PLANE_FILE)


def read_record(path: Path) -> dict:
    """The record in workspace ``path``; empty if there is none (yet)."""
    try:
        return json.loads((path / PLANE_FILE).read_text())
    except (OSError, ValueError):
        return {}


def check_attached(plane: Plane) -> None:
    """The processes run, with the binaries and flags this process would use, and
    kube-apiserver is ready; else a HarnessError that says what differs."""
    assert plane.etcd is not None and plane.apiserver is not None
    for server in (plane.etcd, plane.apiserver):
        if not server.running():
            raise HarnessError(f"its {server.name} (pid {server.pid}) is not running")
        running, wanted = command_line(server.pid), server.args()
        if running != wanted:
            differ = sorted(set(running or []) ^ set(wanted))
            raise HarnessError(
                f"its {server.name} runs with other binaries or flags: {' '.join(differ)}"
            )
    try:
        ready = plane.apiserver.healthy()
    except requests.RequestException as exc:
        raise HarnessError(f"its kube-apiserver does not answer: {exc}") from None
    if not ready:
        raise HarnessError("its kube-apiserver is not ready (/readyz)")
