"""The reference conversion webhook (``webhook_image/crdconvert``) as a local HTTPS process.

The API server reaches it by URL on 127.0.0.1, trusting it through ``caBundle``. Ready means a
real ConversionReview round trip over HTTPS succeeded, not merely that the port is open.
"""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path

import requests

from crdharness import certs, ports
from crdharness.errors import HarnessError
from crdharness.polling import wait_for
from crdharness.processes import ManagedProcess

CONVERT_PATH = "/crdconvert"


def probe_review() -> dict:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": str(uuid.uuid4()), "desiredAPIVersion": "example.com/v1", "objects": []},
    }


class LocalWebhook:
    def __init__(
        self,
        ca: certs.CertificateAuthority,
        directory: Path,
        faults: tuple[str, ...] = (),
        fault_control: bool = True,
        client_ca: Path | None = None,
        port: int | None = None,
        serving: certs.KeyPair | None = None,
    ):
        self.ca = ca
        self.directory = directory
        self.faults = faults
        self.fault_control = fault_control
        self.client_ca = client_ca
        self.port = ports.claim(port, "the conversion webhook", "another port")
        self.serving = serving or ca.issue_server("webhook", *certs.LOOPBACK_NAMES)
        self.records_path = directory / "webhook-records.jsonl"
        self.process: ManagedProcess | None = None

    @property
    def url(self) -> str:
        return f"https://{ports.LOOPBACK}:{self.port}{CONVERT_PATH}"

    @property
    def base_url(self) -> str:
        return f"https://{ports.LOOPBACK}:{self.port}"

    def args(self) -> list[str]:
        args = [
            sys.executable,
            "-m",
            "crdconvert",
            "--host",
            ports.LOOPBACK,
            "--port",
            str(self.port),
            "--tls-cert",
            str(self.serving.cert),
            "--tls-key",
            str(self.serving.key),
            "--path",
            CONVERT_PATH,
            "--record-file",
            str(self.records_path),
        ]
        if self.client_ca:
            args += ["--client-ca", str(self.client_ca)]
        if self.fault_control:
            args.append("--fault-control")
        for fault in self.faults:
            args += ["--fault", fault]
        return args

    def start(self, client_cert: certs.KeyPair | None = None) -> LocalWebhook:
        self.process = ManagedProcess(
            "webhook", self.args(), self.directory / "webhook.log"
        ).start()
        self.wait_ready(client_cert)
        return self

    def _post(self, body: dict, client_cert: certs.KeyPair | None = None) -> requests.Response:
        cert = (str(client_cert.cert), str(client_cert.key)) if client_cert else None
        return requests.post(
            self.url, json=body, cert=cert, verify=str(self.ca.cert_path), timeout=10
        )  # verify= per request, so REQUESTS_CA_BUNDLE cannot override it

    def wait_ready(self, client_cert: certs.KeyPair | None = None, timeout: float = 30) -> None:
        def round_trip() -> bool:
            if self.process is None or not self.process.running():
                raise HarnessError(f"the webhook exited: {self.process.log_tail(5)}")
            review = probe_review()
            answer = self._post(review, client_cert).json()
            return answer["response"]["uid"] == review["request"]["uid"]

        wait_for(
            round_trip,
            timeout,
            f"the webhook at {self.url} to answer a ConversionReview",
            interval=0.1,
            fatal=(HarnessError,),
        )

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

    def records(self) -> list[dict]:
        """Every review the webhook answered so far, oldest first."""
        try:
            lines = self.records_path.read_text().splitlines()
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in lines if line.strip()]

    def reviews_for(self, name: str, desired_api_version: str | None = None) -> list[dict]:
        """Reviews that carried object ``name`` (optionally converting it to a version)."""
        return [
            r
            for r in self.records()
            if any(o.get("name") == name for o in r.get("objects", []))
            and (desired_api_version is None or r.get("desiredAPIVersion") == desired_api_version)
        ]

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
