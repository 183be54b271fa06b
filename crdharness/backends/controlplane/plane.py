"""The local control plane: an ``EtcdServer`` and an ``APIServer`` (and, on demand,
kube-controller-manager) composed in one workspace, with one guardian, one CA and a kubeconfig.

``ControlPlane.start()`` is ready only when ``/readyz`` answers ok *and* a CRD can be
created, becomes Established and serves a LIST — the harness's whole reason to exist. A
half-done start is undone: whatever was started is stopped and the workspace removed.
"""

from __future__ import annotations

import json
import secrets
import shutil
import time
from pathlib import Path

from kubernetes import client

from crdharness import certs, kubeconfig, ports
from crdharness.backends.controlplane import controller_manager
from crdharness.backends.controlplane.apiserver import APIServer, APIServerFlags, APIServerPKI
from crdharness.backends.controlplane.etcd_server import EtcdServer
from crdharness.backends.controlplane.parts import ControlPlaneOptions
from crdharness.backends.controlplane.record import (
    PLANE_FILE,
    check_attached,
    read_record,
    write_record,
)
from crdharness.backends.controlplane.server import PortTaken
from crdharness.binaries import cache
from crdharness.binaries.assets import Assets
from crdharness.binaries.versions import Release
from crdharness.cluster import new_api_client
from crdharness.errors import HarnessError
from crdharness.guardian import Guardian
from crdharness.processes import ManagedProcess, identity
from crdharness.progress import Reporter, to_stderr
from crdharness.scenarios import crds
from crdharness.workspace import Workspace, sweep_stale

ADMIN_USER = "crdharness-admin"
ADMIN_GROUPS = ("system:masters",)
ADMIN_TOKENS = "admin-tokens.csv"  # in pki/: kube-apiserver's --token-auth-file


# Starts tried when a port the harness chose is taken before its server binds it.
PORT_ATTEMPTS = 3


class ControlPlane:
    def __init__(
        self,
        assets: Assets,
        release: Release,
        options: ControlPlaneOptions | None = None,
        report: Reporter = to_stderr,
        owner: tuple[int, float] | None = None,
    ):
        """``owner``: the process whose end must end this control plane, when that is not
        this one (an xdist worker starting the plane its siblings share names the run's
        controller)."""
        self.owner = owner
        self.assets = assets
        self.release = release
        self.options = options or ControlPlaneOptions()
        self.report = report
        self.workspace: Workspace | None = None
        self.guardian: Guardian | None = None
        self.etcd: EtcdServer | None = None
        self.apiserver: APIServer | None = None
        self.controller_manager: ManagedProcess | None = None
        self.controller_manager_port: int | None = None
        self.kubeconfig: Path | None = None
        self.ca: certs.CertificateAuthority | None = None
        self.admin: certs.KeyPair | None = None
        self.serving: certs.KeyPair | None = None  # kube-apiserver's certificate
        self.service_account: certs.KeyPair | None = None  # the service account signing keys
        self.start_to_ready_seconds: float | None = None
        self._apiserver_port: int | None = None  # claimed before kube-apiserver exists

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> ControlPlane:
        """Start etcd and kube-apiserver; ready when CRDs work. A port the harness chose
        that another process takes before the server binds it (a race with any other
        program on the machine) is chosen again, a few times; a port the user fixed is not."""
        fixed = self.options.apiserver_port is not None or self.options.etcd_port is not None
        for attempt in range(1, PORT_ATTEMPTS + 1):
            try:
                return self._start_once()
            except PortTaken:
                if fixed or attempt == PORT_ATTEMPTS:
                    raise
                self.report("a port chosen for the control plane was taken meanwhile; new ports")
                self.apiserver, self.etcd, self._apiserver_port = None, None, None
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _start_once(self) -> ControlPlane:
        began = time.monotonic()
        sweep_stale()
        try:
            # etcd boots while the certificates are made, and kube-apiserver starts without
            # waiting for etcd's /health (it retries until etcd answers): the three overlap.
            etcd = self._prepare_workspace()
            etcd.launch(self.adopt)
            self._prepare_certificates()
            self.apiserver = self._new_apiserver(self.assets, self.release)
            self.apiserver.launch(self.adopt)
            etcd.wait_healthy(self.options.ready_timeout, "etcd /health")
            self._await_apiserver()
            self._wait_crds_work()
            self.start_to_ready_seconds = time.monotonic() - began
            write_record(self)
        except HarnessError as exc:
            kept = self._keep_logs()
            self.stop()
            raise type(exc)(f"{exc} (logs kept in {kept})") from None
        except BaseException:
            self.stop()
            raise
        self.report(
            f"control plane {self.release.git_version} ready at {self.server_url} "
            f"in {self.start_to_ready_seconds:.1f}s (workspace {self.path})"
        )
        return self

    def stop(self) -> None:
        """Stop the controller manager, kube-apiserver, then etcd, then remove the workspace
        and release the guardian. Idempotent. Each step runs whatever an earlier one raised;
        every failure is reported, in one HarnessError."""
        # Killed at once: everything they hold goes with the workspace, and a polite stop
        # only waits (kube-apiserver's graceful shutdown, 1-3 s, at the end of every run).
        steps = [
            (p.name, p.discard)
            for p in (self.controller_manager, self.apiserver, self.etcd)
            if p is not None
        ]
        if self.workspace is not None:
            steps.append(("the workspace", self.workspace.remove))
        if self.guardian is not None:
            steps.append(("the guardian", self.guardian.release))
        failures = []
        for what, step in steps:
            try:
                step()
            except Exception as exc:  # the next steps still run: nothing is left behind
                failures.append(f"{what}: {type(exc).__name__}: {exc}")
        self.guardian = None
        if failures:
            raise HarnessError("stopping the control plane failed: " + "; ".join(failures))

    def keep(self) -> str:
        """Leave everything running after this process exits; return how to reach it."""
        assert self.workspace is not None
        self.workspace.keep()
        if self.guardian is not None:
            self.guardian.release()
            self.guardian = None
        return (
            f"KUBECONFIG={self.kubeconfig} kubectl get crd   "
            f"(kubectl: {self.assets.kubectl}; stop it with: "
            f"python -m crdharness down {self.workspace.path})"
        )

    @classmethod
    def attach(
        cls,
        path: Path,
        assets: Assets,
        release: Release,
        options: ControlPlaneOptions | None = None,
        report: Reporter = to_stderr,
    ) -> ControlPlane:
        """The control plane running in workspace ``path``, started by another process,
        after checking — not assuming — that it is the one this process would start: the same
        binaries and flags on its command lines, the same version from ``/version``, and
        ready. A mismatch is a ``HarnessError`` that says what differs."""
        try:
            record = json.loads((path / PLANE_FILE).read_text())
        except (OSError, ValueError) as exc:
            raise HarnessError(f"{path} holds no control plane record: {exc}") from None
        plane = cls(assets, release, options, report)
        plane.workspace = Workspace.open(path)
        plane.start_to_ready_seconds = record.get("start_to_ready_seconds")
        pki = path / "pki"
        plane.ca = certs.CertificateAuthority.load(pki)
        plane.serving = certs.KeyPair(pki / "apiserver.crt", pki / "apiserver.key")
        plane.admin = certs.KeyPair(pki / "admin.crt", pki / "admin.key")
        plane.service_account = certs.KeyPair(pki / "sa.pub", pki / "sa.key")
        plane.kubeconfig = path / "kubeconfig"
        processes = record["processes"]
        plane.etcd = EtcdServer(assets.etcd, path, record["etcd_port"], record["etcd_peer_port"])
        plane.etcd.attach(*processes["etcd"])
        plane.apiserver = plane._new_apiserver(assets, release, record["apiserver_port"])
        plane.apiserver.attach(*processes["kube-apiserver"])
        controller_manager.adopt(plane, record)
        check_attached(plane)
        return plane

    @property
    def guardian_pid(self) -> int | None:
        """The guardian that cleans up after this plane: this process's, or for a plane
        attached to, the one its starter recorded."""
        if self.guardian is not None:
            return self.guardian.pid
        return read_record(self.path).get("guardian_pid")

    def __enter__(self) -> ControlPlane:
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()

    # -- pieces ----------------------------------------------------------------------------

    @property
    def path(self) -> Path:
        assert self.workspace is not None
        return self.workspace.path

    @property
    def server_url(self) -> str:
        return self.apiserver.url if self.apiserver else ""

    @property
    def etcd_url(self) -> str:
        return self.etcd.url if self.etcd else ""

    @property
    def apiserver_port(self) -> int | None:
        return self.apiserver.port if self.apiserver else self._apiserver_port

    @property
    def etcd_port(self) -> int | None:
        return self.etcd.port if self.etcd else None

    @property
    def etcd_peer_port(self) -> int | None:
        return self.etcd.peer_port if self.etcd else None

    @property
    def pids(self) -> dict[str, int]:
        """The running processes by name: etcd, kube-apiserver, kube-controller-manager."""
        processes = (self.etcd, self.apiserver, self.controller_manager)
        return {p.name: p.pid for p in processes if p is not None and p.pid is not None}

    @property
    def ports(self) -> list[int]:
        """Every loopback port its processes listen on."""
        claimed = (
            self.apiserver_port,
            self.etcd_port,
            self.etcd_peer_port,
            self.controller_manager_port,
        )
        return [port for port in claimed if port is not None]

    @property
    def logs(self) -> dict[str, Path]:
        processes = (self.etcd, self.apiserver, self.controller_manager)
        return {p.name: p.log_path for p in processes if p is not None}

    def _keep_logs(self) -> Path:
        """Copy the logs out of the workspace (which is about to go) after a failed start."""
        kept = cache.cache_root() / "logs" / f"failed-start-{time.strftime('%Y%m%d-%H%M%S')}"
        kept.mkdir(parents=True, exist_ok=True)
        for name, log in self.logs.items():
            if log.exists():
                shutil.copy(log, kept / f"{name}.log")
        return kept

    def adopt(self, process: ManagedProcess) -> None:
        """A process just started: into the workspace's list, under the guardian's watch."""
        assert self.workspace is not None
        self.workspace.adopt(process.pid)
        who = identity(process.pid)
        # A plane attached to has no guardian of this process's: the guardian of the process
        # that started it stops every child its workspace lists, this one too.
        if who and self.guardian is not None:
            self.guardian.watch(*who)

    def _prepare_workspace(self) -> EtcdServer:
        """The workspace, its guardian, the ports and the (not yet started) etcd."""
        self.workspace = Workspace(owner=self.owner)
        self.guardian = Guardian()
        if self.owner is not None:
            self.guardian.owner(*self.owner)
        self.guardian.remove(self.workspace.path)
        self._apiserver_port = ports.claim(
            self.options.apiserver_port, "kube-apiserver", "--apiserver-port"
        )
        etcd_port = ports.claim(self.options.etcd_port, "etcd", "--etcd-port")
        self.etcd = EtcdServer(self.assets.etcd, self.path, etcd_port, ports.free_port())
        self.kubeconfig = self.path / "kubeconfig"
        return self.etcd

    def _prepare_certificates(self) -> None:
        assert self.kubeconfig is not None  # _prepare_workspace first
        pki = self.path / "pki"
        pki.mkdir()
        self.ca = certs.CertificateAuthority(pki)
        self.ca.save_key()  # for processes that attach and start kube-controller-manager
        self.serving = self.ca.issue_server("apiserver", *certs.LOOPBACK_NAMES)
        self.admin = self.ca.issue_client("admin", ADMIN_USER, ADMIN_GROUPS)
        token = secrets.token_urlsafe(32)
        groups = ",".join(ADMIN_GROUPS)
        certs.write_private(
            pki / ADMIN_TOKENS, f'{token},{ADMIN_USER},{ADMIN_USER},"{groups}"\n'.encode()
        )
        self.service_account = certs.service_account_keys(pki)
        server_url = f"https://{ports.LOOPBACK}:{self._apiserver_port}"
        # The clients authenticate with the token, not the certificate (see APIServerPKI).
        kubeconfig.write(
            self.kubeconfig, "crdharness-local", server_url, self.ca.bundle_b64, token=token
        )

    def _new_apiserver(
        self, assets: Assets, release: Release, port: int | None = None
    ) -> APIServer:
        assert self.ca and self.admin and self.serving and self.service_account and self.etcd
        pki = APIServerPKI(
            self.ca.cert_path,
            self.serving,
            self.service_account,
            self.admin,
            self.path / "pki" / ADMIN_TOKENS,
        )
        port = port or self.apiserver_port
        assert port is not None  # claimed by _prepare_workspace
        flags = APIServerFlags(self.options.watch_cache, list(self.options.extra_apiserver_flags))
        return APIServer(
            assets.kube_apiserver,
            release,
            self.path,
            port,
            self.etcd.url,
            pki,
            flags,
        )

    def _await_apiserver(self) -> None:
        assert self.apiserver is not None
        self.apiserver.wait_healthy(
            self.options.ready_timeout, "kube-apiserver /readyz to answer ok"
        )

    # -- changes to a running control plane ----------------------------------------------

    def replace_apiserver(
        self, assets: Assets, release: Release, controller_manager_binary: Path | None = None
    ) -> float:
        """Upgrade (or roll back) kube-apiserver to ``release`` on the same etcd data, with the
        same certificates and port; return the seconds until it was ready again.

        A running controller manager is stopped first (it must never be newer than the API
        server) and started again from ``controller_manager_binary``, of the new release.
        """
        had_controllers = self.controller_manager is not None
        if had_controllers and controller_manager_binary is None:
            raise HarnessError(
                "the control plane runs kube-controller-manager: pass the new release's "
                "controller manager binary to replace_apiserver"
            )
        began = time.monotonic()
        for process in (self.controller_manager, self.apiserver):
            if process is not None:
                process.stop()
        self.controller_manager = None
        self.assets, self.release = assets, release
        self.apiserver = self._new_apiserver(assets, release)
        self.apiserver.launch(self.adopt)
        self._await_apiserver()
        self._wait_crds_work()
        if controller_manager_binary is not None and had_controllers:
            controller_manager.start(self, controller_manager_binary)
        write_record(self)
        took = time.monotonic() - began
        self.report(f"kube-apiserver is now {release.git_version} (ready in {took:.1f}s)")
        return took

    def _wait_crds_work(self) -> None:
        api_client = self.api_client()
        try:
            crds.wait_crds_work(api_client, timeout=self.options.ready_timeout)
        finally:
            api_client.close()

    def api_client(self) -> client.ApiClient:
        assert self.kubeconfig is not None
        return new_api_client(self.kubeconfig, self.credentials_dir)

    @property
    def credentials_dir(self) -> Path:
        return self.path / "client-credentials"
