"""The user's webhook, whatever form it takes, behind the recording proxy (``proxy``).

``UserWebhook`` starts the webhook the gate file describes — a command (a controller-runtime
manager under ``go run``, agnhost, anything), a container image, or a URL that already
answers — with certificates the harness generates, and puts a ``RecordingProxy`` in front.
"""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import requests

from crdharness import certs, ports
from crdharness.errors import HarnessError
from crdharness.gate.given.config import WebhookSpec, fill_placeholders
from crdharness.gate.given.manifests import url_reach
from crdharness.gate.webhook import build, crash, startup
from crdharness.gate.webhook.proxy import PROBE_HEADER, RecordingProxy, review_record
from crdharness.guardian import Guardian
from crdharness.kubeconfig import environment_for
from crdharness.polling import WaitTimeout, wait_for
from crdharness.processes import ManagedProcess, identity
from crdharness.webhooks import images
from crdharness.webhooks.protocol import ConversionWebhook, ReviewRecords, started

PORT_ATTEMPTS = 3  # launches, each on a port of its own, before a taken port is the answer


class UserWebhook(ReviewRecords):
    """The user's webhook, started (or reached) with certificates the harness made, behind
    the recording proxy: a ``ConversionWebhook`` whose records are the proxy's exchanges.

    Ready means it answered an empty ConversionReview at ``ready_path`` (converting to
    ``ready_version``) through the proxy, or, with no ``ready_path`` (a webhook serving only
    admission), that it answered HTTPS at all."""

    def __init__(
        self,
        spec: WebhookSpec,
        directory: Path,
        kubeconfig: Path,
        root: Path,
        ready_path: str | None = None,
        ready_version: str | None = None,
    ):
        self.spec = spec
        self.ready_path, self.ready_version = ready_path, ready_version
        self.directory = directory
        self.kubeconfig = kubeconfig
        self.root = root
        self.process: ManagedProcess | None = None
        self.container: str | None = None
        self.guardian: Guardian | None = None
        self.proxy: RecordingProxy | None = None
        self.ca = certs.CertificateAuthority(directory)
        self.log_path = directory / "webhook.log"

    def reach(self, path: str) -> dict:
        """The clientConfig by which the API server reaches this webhook at ``path``."""
        assert self.proxy is not None, "launch() first"
        return url_reach(self.proxy.url, self.ca.bundle_b64)(path)

    def client_config(self) -> dict:
        return self.reach(self.spec.path)

    def records(self) -> list[dict]:
        """The ConversionReviews the API server sent, in the reference webhook's record shape."""
        assert self.proxy is not None, "launch() first"
        return [
            review_record(e) for e in list(self.proxy.exchanges) if e.kind == "ConversionReview"
        ]

    def set_faults(self, *faults: str) -> None:
        raise HarnessError("the user's webhook has no fault control; only the reference has")

    def start(self) -> UserWebhook:
        # The port the gate picked is free when picked, not when the webhook binds it: on a
        # busy machine another process's connection may take it first. Then another port.
        for attempt in range(1, PORT_ATTEMPTS + 1):
            try:
                return started(self)
            except HarnessError as exc:
                if attempt == PORT_ATTEMPTS or not self._port_taken(str(exc)):
                    raise
        raise AssertionError("unreachable")

    def _port_taken(self, why: str) -> bool:
        """Whether the webhook exited because the port the gate gave it ({port}) was taken."""
        gave_port = any("{port}" in word for word in self.spec.command or [])
        return self.spec.form == "command" and gave_port and "address already in use" in why.lower()

    # -- launching -------------------------------------------------------------------------

    def placeholders(self, port: int, cert_dir: str, binary: str = "") -> dict[str, str]:
        return {
            "binary": binary,  # what webhook.build made
            "tls_cert": f"{cert_dir}/tls.crt",
            "tls_key": f"{cert_dir}/tls.key",
            "cert_dir": cert_dir,
            "port": str(port),
            "kubeconfig": str(self.kubeconfig),
            "ca": f"{cert_dir}/ca.crt",
            "python": sys.executable,  # the harness's interpreter, for webhooks in Python
        }

    def _cert_dir(self) -> Path:
        """``tls.crt``/``tls.key``/``ca.crt``: the names controller-runtime's server reads."""
        directory = self.directory / "serving-certs"
        if directory.is_dir():  # made by an earlier launch (``start`` tries another port)
            return directory
        directory.mkdir(mode=0o700)
        serving = self.ca.issue_server("webhook", *certs.LOOPBACK_NAMES)
        (directory / "tls.crt").write_bytes(serving.cert.read_bytes())
        certs.write_private(directory / "tls.key", serving.key.read_bytes())
        (directory / "ca.crt").write_bytes(self.ca.pem)
        return directory

    def launch(self) -> UserWebhook:
        """Start the webhook (not waiting for it) and the proxy in front of it."""
        target_ca: Path | None
        if self.spec.form == "command":
            target, target_ca = self._launch_command()
        elif self.spec.form == "image":
            target, target_ca = self._launch_image()
        else:
            assert self.spec.url is not None  # the form says so
            parts = urlsplit(self.spec.url)
            target, target_ca = f"{parts.scheme}://{parts.netloc}", self.spec.ca
            if parts.path not in ("", "/"):
                self.spec.path = parts.path
        # A command webhook's output is the gate's to quote when it crashes on a review.
        output = crash.WebhookLog(self.log_path) if self.process is not None else None
        self.proxy = RecordingProxy(
            self.ca, target, target_ca, self.directory / "exchanges.jsonl", output, self._exit_code
        )
        return self

    def _exit_code(self) -> int | None:
        """The command webhook's exit code once its process has exited (None while it runs,
        or for an image or URL webhook)."""
        popen = self.process.popen if self.process is not None else None
        return popen.poll() if popen is not None else None

    def _launch_command(self) -> tuple[str, Path]:
        binary = ""
        built = self.directory / "bin" / "webhook"
        if self.spec.build is not None and built.exists():  # an earlier launch built it
            binary = str(built)
        elif self.spec.build is not None:  # before ready_timeout starts: a build is untimed
            built.parent.mkdir()
            workdir = self.spec.workdir or self.root
            binary = str(build.build(self.spec.build, built, self.log_path, workdir))
        cert_dir = self._cert_dir()
        port = ports.free_port()
        values = self.placeholders(port, str(cert_dir), binary)
        command = [fill_placeholders(word, values) for word in self.spec.command or []]
        # The gate's cluster only: an exported KUBECONFIG (most developers have one) would
        # start a controller manager against the caller's real cluster.
        env = environment_for(
            self.kubeconfig, {k: fill_placeholders(v, values) for k, v in self.spec.env.items()}
        )
        self.process = ManagedProcess(
            "webhook",
            command,
            self.log_path,
            env=env,
            cwd=self.spec.workdir or self.root,
            whole_group=True,
        )
        try:
            self.process.start()
        except OSError as exc:
            raise HarnessError(
                f"webhook.command: cannot start {command[0]!r}: {exc.strerror}"
            ) from None
        self.guardian = Guardian()
        who = identity(self.process.pid)
        if who:
            self.guardian.watch_group(*who)
        return f"https://{ports.LOOPBACK}:{port}", cert_dir / "ca.crt"

    def _launch_image(self) -> tuple[str, Path]:
        images.require_engine()
        image = self.spec.image
        assert image is not None  # the form says so
        if not images.image_exists(image):
            raise HarnessError(
                f"webhook.image: {self.spec.image} is not in the local Docker engine: build or "
                "pull it first"
            )
        cert_dir = self._cert_dir()
        if os.geteuid() == 0:  # the image's user must read its key, as from a Secret volume
            for path in (cert_dir, *cert_dir.iterdir()):
                os.chmod(path, 0o755 if path.is_dir() else 0o644)
        port = ports.free_port()
        values = self.placeholders(self.spec.port, self.spec.cert_dir)
        name = f"crdharness-gate-webhook-{uuid.uuid4().hex[:8]}"
        env = []
        for key, value in self.spec.env.items():
            env += ["-e", f"{key}={fill_placeholders(value, values)}"]
        self.guardian = Guardian()
        self.guardian.remove_container(name)
        images.docker(
            "run",
            "-d",
            "--name",
            name,
            "--label",
            "crdharness=webhook",
            *env,
            "-p",
            f"{ports.LOOPBACK}:{port}:{self.spec.port}",
            "-v",
            f"{cert_dir}:{self.spec.cert_dir}:ro",
            image,
            *[fill_placeholders(a, values) for a in self.spec.args],
        )
        self.container = name
        return f"https://{ports.LOOPBACK}:{port}", cert_dir / "ca.crt"

    # -- readiness -------------------------------------------------------------------------

    def running(self) -> bool:
        if self.process is not None:
            return self.process.running()
        if self.container is not None:
            state = images.docker(
                "inspect", "--format", "{{.State.Running}}", self.container, check=False, timeout=30
            )
            return state.stdout.strip() == "true"
        return True

    def log_tail(self, lines: int = 10) -> str:
        if self.process is not None:
            return self.process.log_tail(lines)
        if self.container is not None:
            out = images.docker(
                "logs", "--tail", str(lines), self.container, check=False, timeout=30
            )
            return (out.stdout + out.stderr).strip()
        return "(a webhook the harness did not start)"

    def wait_ready(self) -> None:
        """Until the webhook answers an (empty) ConversionReview at ``ready_path`` with its
        uid; with no ``ready_path`` (it serves only admission), until it answers HTTPS. One
        that exits or never answers: the gate could not run, said with the likely cause, a
        fix and the webhook's last lines (``startup``)."""
        proxy = self.proxy
        assert proxy is not None, "launch() first"
        path, desired_api_version = self.ready_path, self.ready_version
        seen = startup.ProbeSeen()

        def answers() -> bool:
            if not self.running():
                raise HarnessError(
                    startup.explain(
                        "the webhook exited before it was ready",
                        self.log_tail(startup.LOG_LINES),
                        seen,
                        path,
                    )
                )
            if path is None:  # any answer from the webhook; 502 is the proxy's "unreachable"
                response = requests.post(
                    proxy.url + "/",
                    data=b"{}",
                    headers={PROBE_HEADER: "1", "Content-Type": "application/json"},
                    verify=str(self.ca.cert_path),
                    timeout=10,
                )
            else:
                uid = str(uuid.uuid4())
                review = {
                    "apiVersion": "apiextensions.k8s.io/v1",
                    "kind": "ConversionReview",
                    "request": {
                        "uid": uid,
                        "desiredAPIVersion": desired_api_version,
                        "objects": [],
                    },
                }
                response = requests.post(
                    proxy.url + path,
                    json=review,
                    headers={PROBE_HEADER: "1"},
                    verify=str(self.ca.cert_path),
                    timeout=10,
                )
            if response.status_code == 502:  # the proxy could not reach it: why, in its body
                seen.status, seen.error = None, response.text
                if startup.hopeless(seen):
                    raise HarnessError(
                        startup.explain(
                            "the webhook refused the gate's TLS connection",
                            self.log_tail(startup.LOG_LINES),
                            seen,
                            path,
                        )
                    )
                return False
            seen.status, seen.error = response.status_code, None
            if path is None:
                return True
            return response.status_code == 200 and response.json()["response"]["uid"] == uid

        what = f"the webhook ({self.spec.form}) to answer " + (
            f"a ConversionReview at {path}" if path else "HTTPS"
        )
        # Not listening yet, or not answering JSON yet: wait; an exit (HarnessError) ends it.
        retry = (requests.RequestException, ValueError, KeyError, TypeError)
        try:
            wait_for(answers, self.spec.ready_timeout, what, interval=0.2, retry=retry)
        except WaitTimeout:
            raise HarnessError(
                startup.explain(
                    f"the webhook did not answer a ConversionReview at {path} in "
                    f"{self.spec.ready_timeout:g} s"
                    if path
                    else f"the webhook did not answer HTTPS in {self.spec.ready_timeout:g} s",
                    self.log_tail(startup.LOG_LINES),
                    seen,
                    path,
                )
            ) from None

    def stop(self) -> None:
        if self.proxy is not None:
            self.proxy.stop()
            self.proxy = None
        if self.process is not None:
            self.process.stop()
        if self.container is not None:
            logs = images.docker("logs", self.container, check=False, timeout=60)
            self.log_path.write_text(logs.stdout + logs.stderr)
            images.docker("rm", "-f", self.container, check=False, timeout=60)
            self.container = None
        if self.guardian is not None:
            self.guardian.release()
            self.guardian = None


if TYPE_CHECKING:  # mypy checks it against the protocol every caller relies on
    _checked: type[ConversionWebhook] = UserWebhook
