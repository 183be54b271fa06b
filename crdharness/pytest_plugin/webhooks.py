"""The reference conversion webhook as fixtures: one shared by the session, and one of a
test's own whose fault modes it may switch."""

from __future__ import annotations

import contextlib
import socket

import pytest

from crdharness import certs, ports
from crdharness.cluster import HOST_LOOPBACK, IMAGE_LOADER, SERVICE_ROUTING
from crdharness.errors import HarnessError
from crdharness.progress import to_stderr as report
from crdharness.pytest_support import harness_work
from crdharness.webhooks.reference import WebhookServer


def _start_webhook(config: pytest.Config, directory, cluster=None):
    from crdharness.webhooks.reference import ContainerWebhook, LocalWebhook

    with harness_work(config):
        if cluster is not None and not cluster.can(HOST_LOOPBACK):
            return _start_in_cluster_webhook(cluster, directory)
        form = ContainerWebhook if config.getoption("--webhook") == "container" else LocalWebhook
        return form(certs.CertificateAuthority(directory), directory).start()


def _start_in_cluster_webhook(cluster, directory):
    """Build the image, load it into the nodes, deploy it behind its Service."""
    from crdharness.webhooks import images

    if not (cluster.can(IMAGE_LOADER) and cluster.can(SERVICE_ROUTING)):
        raise HarnessError(
            f"the {cluster.backend} cluster can neither reach a webhook on this machine nor "
            "run the webhook image behind a Service"
        )
    image = images.build_webhook_image(report)
    cluster.load_image(image, directory)
    return cluster.deploy_webhook(certs.CertificateAuthority(directory), image).start()


# Ports of stopped webhooks, bound (not listening) until the session ends; see ``_retire``.
_RETIRED_PORTS: list[socket.socket] = []


def _retire(server) -> None:
    """Stop a webhook and keep its port taken until the session ends. A CRD may still point at
    it for a while (deleted after the test, its objects' watch events still converted), and
    those calls must be refused, not answered by a webhook another worker started on the port."""
    server.stop()
    if not isinstance(server, WebhookServer):
        return  # on kind, the webhook is a Service in the cluster: no port here
    held = server.held_port
    if held is None:
        with contextlib.suppress(HarnessError):  # taken at once by someone else: nothing to do
            held = ports.hold(server.port)
    if held is not None:
        _RETIRED_PORTS.append(held)


def pytest_unconfigure(config: pytest.Config) -> None:
    while _RETIRED_PORTS:
        _RETIRED_PORTS.pop().close()


@pytest.fixture(scope="session")
def conversion_webhook(cluster, request, tmp_path_factory):
    """The reference webhook on 127.0.0.1 (process or container, see ``--webhook``), shared
    by the session. Tests that switch fault modes must use ``isolated_webhook`` instead."""
    server = _start_webhook(request.config, tmp_path_factory.mktemp("webhook"), cluster)
    yield server
    _retire(server)


@pytest.fixture
def isolated_webhook(cluster, request, tmp_path):
    """A webhook of the test's own, whose fault modes it may switch (``set_faults``)."""
    server = _start_webhook(request.config, tmp_path)
    yield server
    _retire(server)
