"""Every certificate and key the harness uses, made with trustme.

One CA signs the API server's serving certificate, the admin client certificate (whose
Organization is the group ``system:masters``) and, later, webhook certificates. Private keys
are written with mode 0600 and never logged.
"""

from __future__ import annotations

import base64
import os
import re
from dataclasses import dataclass
from pathlib import Path

import trustme
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")


def write_private(path: Path, data: bytes) -> Path:
    """Write secret ``data`` so that only the owner can read it, from the first byte on."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    return path


@dataclass(frozen=True)
class KeyPair:
    cert: Path
    key: Path


class CertificateAuthority:
    """A trustme CA whose certificates land as files in ``directory``."""

    def __init__(self, directory: Path, ca: trustme.CA | None = None):
        self.directory = directory
        self._ca = ca or trustme.CA(organization_name="crdharness")
        self.cert_path = directory / "ca.crt"
        self._ca.cert_pem.write_to_path(str(self.cert_path))

    def save_key(self) -> Path:
        """Write the CA's key too, so another process can issue certificates (``load``)."""
        return write_private(self.directory / "ca.key", self._ca.private_key_pem.bytes())

    @classmethod
    def load(cls, directory: Path) -> CertificateAuthority:
        """The CA saved in ``directory`` (``save_key``)."""
        loaded = cls.__new__(cls)  # not __init__: rewriting ca.crt would race its readers
        loaded.directory, loaded.cert_path = directory, directory / "ca.crt"
        loaded._ca = trustme.CA.from_pem(
            loaded.cert_path.read_bytes(), (directory / "ca.key").read_bytes()
        )
        return loaded

    @property
    def pem(self) -> bytes:
        return self._ca.cert_pem.bytes()

    @property
    def bundle_b64(self) -> str:
        """The CA as Kubernetes wants it in ``caBundle`` and kubeconfig ``*-data`` fields."""
        return base64.b64encode(self.pem).decode()

    def issue(self, name: str, *identities: str, **subject) -> KeyPair:
        """Issue a certificate (server and client usage) and write ``<name>.crt/.key``."""
        leaf = self._ca.issue_cert(*identities, **subject)
        cert = self.directory / f"{name}.crt"
        cert.write_bytes(b"".join(blob.bytes() for blob in leaf.cert_chain_pems))
        key = write_private(self.directory / f"{name}.key", leaf.private_key_pem.bytes())
        return KeyPair(cert, key)

    def issue_server(self, name: str, *hosts: str) -> KeyPair:
        return self.issue(name, *(hosts or LOOPBACK_NAMES))

    def issue_client(self, name: str, user: str, groups: tuple[str, ...] = ()) -> KeyPair:
        # Kubernetes reads the user from CN and the groups from O (trustme takes one O). The
        # user also goes into the SAN: trustme marks SAN critical, and Go rejects a critical,
        # empty SAN as an "unhandled critical extension". A SAN must be a DNS name, so
        # "system:kube-controller-manager" goes in as "system-kube-controller-manager".
        san = re.sub(r"[^a-z0-9.-]", "-", user.lower())
        return self.issue(
            name, san, common_name=user, organization_name=groups[0] if groups else None
        )


def service_account_keys(directory: Path) -> KeyPair:
    """An RSA key pair for signing and checking service-account tokens."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    pub_path = directory / "sa.pub"
    pub_path.write_bytes(public)
    return KeyPair(cert=pub_path, key=write_private(directory / "sa.key", private))
