"""kube-apiserver for one local control plane: its flags, and ``/readyz`` as its health."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import requests

from crdharness import certs, ports
from crdharness.backends.controlplane.server import ServerProcess
from crdharness.binaries.versions import Release


@dataclass(frozen=True)
class APIServerPKI:
    ca: Path  # signs every certificate below; kube-apiserver trusts client certificates it signed
    serving: certs.KeyPair
    service_account: certs.KeyPair
    admin: certs.KeyPair  # the client certificate /readyz is asked with
    # The admin's static bearer token (the kubeconfig's): kube-apiserver verifies a client
    # certificate's chain on every request (ECDSA, ~7 % of its CPU under the gate's writes),
    # a token file is a map look-up.
    tokens: Path


# Go's collector at its default (GOGC=100) took ~20 % of kube-apiserver's CPU under the
# gate's writes of large objects (pprof); collecting at twice the heap's growth halves that
# for a larger peak heap. A GOGC the caller set is kept.
GOGC = "200"


@dataclass
class APIServerFlags:
    watch_cache: bool = True
    extra: list[str] = field(default_factory=list)


class APIServer(ServerProcess):
    name = "kube-apiserver"

    def __init__(
        self,
        binary: Path,
        release: Release,
        directory: Path,
        port: int,
        etcd_url: str,
        pki: APIServerPKI,
        flags: APIServerFlags,
    ):
        super().__init__(binary, directory / "kube-apiserver.log")
        self.release = release
        self.cert_dir = directory / "pki"
        self.port, self.etcd_url, self.pki, self.flags = port, etcd_url, pki, flags
        self.url = f"https://{ports.LOOPBACK}:{port}"

    def args(self) -> list[str]:
        return [
            str(self.binary),
            f"--etcd-servers={self.etcd_url}",
            f"--bind-address={ports.LOOPBACK}",
            f"--advertise-address={ports.LOOPBACK}",
            # The endpoint reconciler refuses a loopback address, and nothing needs the
            # "kubernetes" Service's endpoints here.
            "--endpoint-reconciler-type=none",
            f"--secure-port={self.port}",
            f"--cert-dir={self.cert_dir}",
            f"--tls-cert-file={self.pki.serving.cert}",
            f"--tls-private-key-file={self.pki.serving.key}",
            f"--client-ca-file={self.pki.ca}",
            f"--token-auth-file={self.pki.tokens}",
            "--authorization-mode=RBAC",
            f"--service-account-issuer={self.url}",
            f"--service-account-key-file={self.pki.service_account.cert}",
            f"--service-account-signing-key-file={self.pki.service_account.key}",
            "--service-cluster-ip-range=10.0.0.0/24",
            "--allow-privileged=true",
            # No controller-manager makes service-account tokens; pods are never run here.
            "--disable-admission-plugins=ServiceAccount",
            # Lets a conversion webhook be reached through a Service with hand-made endpoints.
            "--enable-aggregator-routing=true",
            f"--watch-cache={'true' if self.flags.watch_cache else 'false'}",
            "--profiling=false",
            # Served even where it is beta, so the controller manager can be added later.
            *self.release.storage_migration_apiserver_flags,
            *self.flags.extra,
        ]

    def launch(self, started=lambda process: None):
        with self.log_path.open("a") as out:  # one log across upgrades: which binary wrote what
            out.write(f"--- crdharness: kube-apiserver {self.release.git_version} ---\n")
        return super().launch(started)

    def environment(self) -> dict[str, str]:
        return {"GOGC": GOGC, **os.environ}

    def healthy(self) -> bool:
        # verify= per request: a machine's REQUESTS_CA_BUNDLE would override a Session's.
        response = requests.get(
            f"{self.url}/readyz",
            cert=(str(self.pki.admin.cert), str(self.pki.admin.key)),
            verify=str(self.pki.ca),
            timeout=5,
        )
        return response.status_code == 200 and response.text.strip() == "ok"
