"""etcd for one local control plane: one member on loopback, throwaway data."""

from __future__ import annotations

from pathlib import Path

import requests

from crdharness import ports
from crdharness.backends.controlplane.server import ServerProcess


class EtcdServer(ServerProcess):
    name = "etcd"

    def __init__(self, binary: Path, directory: Path, port: int, peer_port: int):
        super().__init__(binary, directory / "etcd.log")
        self.data_dir = directory / "etcd-data"
        self.port, self.peer_port = port, peer_port
        self.url = f"http://{ports.LOOPBACK}:{port}"

    def args(self) -> list[str]:
        peer = f"http://{ports.LOOPBACK}:{self.peer_port}"
        return [
            str(self.binary),
            "--name=crdharness",
            f"--data-dir={self.data_dir}",
            f"--listen-client-urls={self.url}",
            f"--advertise-client-urls={self.url}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=crdharness={peer}",
            # Throwaway data: skip fsync, which dominates write latency on CI disks.
            "--unsafe-no-fsync=true",
            "--log-level=warn",
        ]

    def healthy(self) -> bool:
        # One connection per check, closed by us: an idle keep-alive connection that etcd
        # closed on exit would leave its TIME_WAIT on etcd's own port, and a plain bind() of
        # that port would fail for a minute after the run.
        with requests.Session() as http:
            http.trust_env = False  # loopback: no proxy, no machine-wide CA bundle
            return http.get(f"{self.url}/health", timeout=2).json().get("health") == "true"
