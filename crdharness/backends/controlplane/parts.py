"""What a control plane's parts see of the plane they belong to.

``record`` (the plane's ``plane.json``) and ``controller_manager`` work on a ``ControlPlane``
(``plane``), which uses both: they name it by this protocol, so neither imports ``plane``
back. ``ControlPlaneOptions`` lives here for the same reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from crdharness import certs
from crdharness.backends.controlplane.apiserver import APIServer
from crdharness.backends.controlplane.etcd_server import EtcdServer
from crdharness.binaries.versions import Release
from crdharness.processes import AttachedProcess, ManagedProcess
from crdharness.progress import Reporter


@dataclass
class ControlPlaneOptions:
    watch_cache: bool = True
    apiserver_port: int | None = None  # None: a free one
    etcd_port: int | None = None
    ready_timeout: float = 120.0
    extra_apiserver_flags: list[str] = field(default_factory=list)


class Plane(Protocol):
    """A control plane as its record and its kube-controller-manager use it."""

    release: Release
    options: ControlPlaneOptions
    report: Reporter
    etcd: EtcdServer | None
    apiserver: APIServer | None
    controller_manager: ManagedProcess | AttachedProcess | None
    controller_manager_port: int | None
    ca: certs.CertificateAuthority | None
    start_to_ready_seconds: float | None

    @property
    def path(self) -> Path: ...

    @property
    def server_url(self) -> str: ...

    @property
    def apiserver_port(self) -> int | None: ...

    @property
    def etcd_port(self) -> int | None: ...

    @property
    def guardian_pid(self) -> int | None: ...

    def adopt(self, process: ManagedProcess) -> None: ...
