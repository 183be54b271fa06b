"""The reference conversion webhook (``webhook_image/crdconvert``), run for the tests.

Two forms, one interface: ``LocalWebhook`` is a local HTTPS process; ``ContainerWebhook`` runs
the built image with the port published on 127.0.0.1. The API server reaches either by URL,
trusting it through ``caBundle``. Ready means a real ConversionReview round trip over HTTPS
succeeded, not merely that the port is open.
"""

from __future__ import annotations

import os
import socket
import sys
import tempfile
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import requests

from crdharness import certs, ports
from crdharness.errors import HarnessError
from crdharness.guardian import Guardian
from crdharness.polling import wait_for
from crdharness.processes import ManagedProcess, identity
from crdharness.webhooks import images
from crdharness.webhooks.protocol import ConversionWebhook, ReviewRecords, started

CONVERT_PATH = "/crdconvert"


def probe_review() -> dict:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": str(uuid.uuid4()), "desiredAPIVersion": "example.com/v1", "objects": []},
    }


class WebhookServer(ReviewRecords):
    """What both forms share: certificates, readiness, fault switching, review records."""

    def __init__(
        self,
        ca: certs.CertificateAuthority,
        directory: Path,
        faults: tuple[str, ...] = (),
        fault_control: bool = True,
        client_ca: Path | None = None,
        port: int | None = None,
        serving: certs.KeyPair | None = None,
        workers: int | None = None,
        max_body: int | None = None,
    ):
        """``workers``: server processes (crdconvert's default: one per CPU, or one with
        ``fault_control``); ``max_body``: the largest request body in bytes (its default)."""
        self.workers = workers
        self.max_body = max_body
        self.ca = ca
        self.directory = directory
        self.faults = faults
        self.fault_control = fault_control
        self.client_ca = client_ca
        self.port = ports.claim(port, "the conversion webhook", "another port")
        self.serving = serving or ca.issue_server("webhook", *certs.LOOPBACK_NAMES)
        self.records_path = directory / "webhook-records.jsonl"

    @property
    def url(self) -> str:
        return f"https://{ports.LOOPBACK}:{self.port}{CONVERT_PATH}"

    @property
    def base_url(self) -> str:
        return f"https://{ports.LOOPBACK}:{self.port}"

    def client_config(self) -> dict:
        """How the API server reaches this webhook (``clientConfig`` of a CRD)."""
        return {"url": self.url, "caBundle": self.ca.bundle_b64}

    def server_args(self, cert: str, key: str, client_ca: str | None) -> list[str]:
        """crdconvert's options (after ``--host``/``--port``), with paths as it sees them."""
        args = ["--tls-cert", cert, "--tls-key", key, "--path", CONVERT_PATH]
        if client_ca:
            args += ["--client-ca", client_ca]
        if self.fault_control:
            args.append("--fault-control")
        if self.workers is not None:
            args += ["--workers", str(self.workers)]
        if self.max_body is not None:
            args += ["--max-body-bytes", str(self.max_body)]
        for fault in self.faults:
            args += ["--fault", fault]
        return args

    guardian: Guardian | None = None  # stops what launch started if the run is killed

    def launch(self) -> WebhookServer:
        """Start serving, without waiting for it (each form says how)."""
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def start(
        self, client_cert: certs.KeyPair | None = None, ready_timeout: float = 30
    ) -> WebhookServer:
        return started(self, lambda: self.wait_ready(client_cert, ready_timeout))

    def running(self) -> bool:
        raise NotImplementedError

    def log_tail(self) -> str:
        raise NotImplementedError

    def _post(self, body: dict, client_cert: certs.KeyPair | None = None) -> requests.Response:
        cert = (str(client_cert.cert), str(client_cert.key)) if client_cert else None
        return requests.post(
            self.url, json=body, cert=cert, verify=str(self.ca.cert_path), timeout=10
        )  # verify= per request, so REQUESTS_CA_BUNDLE cannot override it

    def wait_ready(self, client_cert: certs.KeyPair | None = None, timeout: float = 30) -> None:
        def round_trip() -> bool:
            if not self.running():
                raise HarnessError(f"the webhook exited: {self.log_tail()}")
            review = probe_review()
            answer = self._post(review, client_cert).json()
            return answer["response"]["uid"] == review["request"]["uid"]

        wait_for(
            round_trip,
            timeout,
            f"the webhook at {self.url} to answer a ConversionReview",
            interval=0.1,
            retry=(requests.RequestException, ValueError, KeyError, TypeError),
        )

    def wait_listening(self, timeout: float = 30) -> None:
        """Wait until the port accepts connections (no TLS: see ``LocalWebhook.launch``)."""

        def listening() -> bool:
            if not self.running():
                raise HarnessError(f"the webhook exited: {self.log_tail()}")
            with socket.socket() as sock:
                return sock.connect_ex((ports.LOOPBACK, self.port)) == 0

        wait_for(listening, timeout, f"the webhook to listen on port {self.port}", retry=(OSError,))

    held_port: socket.socket | None = None

    def go_away(self) -> None:
        """Stop serving, and keep the port bound (not listening) in ``held_port``: the API
        server's calls are refused, as a test of an unreachable webhook wants, instead of
        reaching a webhook that a test running alongside started on the freed port."""
        self.stop()
        if self.held_port is None:
            self.held_port = ports.hold(self.port)

    def set_faults(self, *faults: str) -> None:
        """Switch fault modes at run time (the server runs with ``--fault-control``)."""
        response = requests.put(
            f"{self.base_url}/control/faults",
            json=list(faults),
            verify=str(self.ca.cert_path),
            timeout=10,
        )
        if response.status_code != 200:
            raise HarnessError(f"webhook refused faults {faults}: {response.text.strip()}")

    def _record_lines(self) -> list[str]:
        try:
            return self.records_path.read_text().splitlines()
        except FileNotFoundError:
            return []


class LocalWebhook(WebhookServer):
    """crdconvert as a child process of the test run, with this venv's Python."""

    process: ManagedProcess | None = None

    def launch(self) -> LocalWebhook:
        """Start the process, guarded, without waiting for it to answer: for a caller that
        checks readiness its own way (``wait_listening`` for a certificate that does not name
        127.0.0.1, which no ConversionReview from here would accept)."""
        args = [
            sys.executable,
            "-m",
            "crdconvert",
            "--host",
            ports.LOOPBACK,
            "--port",
            str(self.port),
            "--record-file",
            str(self.records_path),
        ]
        args += self.server_args(
            str(self.serving.cert),
            str(self.serving.key),
            str(self.client_ca) if self.client_ca else None,
        )
        self.process = ManagedProcess("webhook", args, self.directory / "webhook.log").start()
        # Stopped by stop(); by the guardian if the test process is killed.
        self.guardian = Guardian()
        who = identity(self.process.pid)
        if who:
            self.guardian.watch(*who)
        return self

    def running(self) -> bool:
        return self.process is not None and self.process.running()

    def log_tail(self) -> str:
        return self.process.log_tail(5) if self.process else "(never started)"

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
        if self.guardian is not None:
            self.guardian.release()
            self.guardian = None


class ContainerWebhook(WebhookServer):
    """The built image in a container; records come from its standard output."""

    container: str | None = None

    def __init__(self, *args, image: str | None = None, **kwargs):
        """``image``: default the one `nox -s image` builds."""
        super().__init__(*args, **kwargs)
        self.image = image or images.WEBHOOK_IMAGE

    def launch(self) -> ContainerWebhook:
        images.require_engine()
        image = self.image
        if not images.image_exists(image):
            raise HarnessError(f"image {image} does not exist: build it with `nox -s image`")
        mount = self._tls_mount()
        # Records go to a file on the host, as the local process's do: written before each
        # answer, so a test sees the review once its request returns (``docker logs`` lags).
        records = self._container_dir("records-")
        self.records_path = records / "webhook-records.jsonl"
        name = f"crdharness-webhook-{uuid.uuid4().hex[:8]}"
        server = ["--record-file", "/records/webhook-records.jsonl"]
        server += self.server_args(
            "/tls/tls.crt", "/tls/tls.key", "/tls/client-ca.crt" if self.client_ca else None
        )
        environment = []
        if os.environ.get("CRDCONVERT_FAULTS"):  # sabotage runs break the container too
            environment = ["-e", f"CRDCONVERT_FAULTS={os.environ['CRDCONVERT_FAULTS']}"]
        images.docker(
            "run",
            *environment,
            "-d",
            "--rm",
            "--name",
            name,
            "--label",
            "crdharness=webhook",
            *self._container_user(),
            "-p",
            f"{ports.LOOPBACK}:{self.port}:8443",
            "-v",
            f"{mount}:/tls:ro",
            "-v",
            f"{records}:/records",
            image,
            *server,
        )
        self.container = name
        self.guardian = Guardian()
        self.guardian.remove_container(name)
        return self

    def _tls_mount(self) -> Path:
        """The certificate files, for the container's user only.

        The key stays 0600, as Kubernetes mounts a Secret with ``defaultMode: 0400``: as root
        the copy is handed to the image's user; otherwise the container runs as this user.
        """
        mount = self._container_dir("tls-")
        pairs = [(self.serving.cert, "tls.crt"), (self.serving.key, "tls.key")]
        if self.client_ca:
            pairs.append((self.client_ca, "client-ca.crt"))
        for source, name in pairs:
            certs.write_private(mount / name, Path(source).read_bytes())
        if os.geteuid() == 0:
            for path in mount.iterdir():
                os.chown(path, images.WEBHOOK_IMAGE_UID, images.WEBHOOK_IMAGE_UID)
        return mount

    def _container_dir(self, prefix: str) -> Path:
        """A directory of the test's own that the container's user may write."""
        path = Path(tempfile.mkdtemp(prefix=prefix, dir=self.directory))  # 0700
        if os.geteuid() == 0:
            os.chown(path, images.WEBHOOK_IMAGE_UID, images.WEBHOOK_IMAGE_UID)
        return path

    def _container_user(self) -> list[str]:
        return [] if os.geteuid() == 0 else ["--user", f"{os.geteuid()}:{os.getegid()}"]

    def running(self) -> bool:
        if self.container is None:
            return False
        state = images.docker(
            "inspect", "--format", "{{.State.Running}}", self.container, check=False, timeout=30
        )
        return state.returncode == 0 and state.stdout.strip() == "true"

    def log_tail(self) -> str:
        if self.container is None:
            return "(never started)"
        logs = images.docker("logs", "--tail", "5", self.container, check=False, timeout=30)
        return (logs.stdout + logs.stderr).strip()

    def stop(self) -> None:
        if self.container is not None:
            images.docker("rm", "-f", self.container, check=False, timeout=60)
            self.container = None
        if self.guardian is not None:
            self.guardian.release()
            self.guardian = None


if TYPE_CHECKING:  # mypy checks each form against the protocol every caller relies on
    _local: type[ConversionWebhook] = LocalWebhook
    _container: type[ConversionWebhook] = ContainerWebhook
