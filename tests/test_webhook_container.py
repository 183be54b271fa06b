"""The webhook image: built by `nox -s image`, run with generated certificates, over HTTPS."""

import json

import pytest
import requests

from crdharness import certs
from crdharness.webhooks import images
from crdharness.webhooks.reference import ContainerWebhook
from tests import webhook_examples as ex

pytestmark = pytest.mark.container


@pytest.fixture(scope="module")
def webhook_image():
    """Build the image from webhook_image/ (Docker's layer cache makes a rebuild quick)."""
    return images.build_webhook_image(lambda line: None)


@pytest.fixture
def container_webhook(webhook_image, tmp_path):
    server = ContainerWebhook(
        certs.CertificateAuthority(tmp_path), tmp_path, image=webhook_image
    ).start()
    yield server
    server.stop()


def test_image_runs_as_an_unprivileged_user_on_8443(webhook_image):
    config = json.loads(images.docker("image", "inspect", webhook_image).stdout)[0]["Config"]
    assert config["User"] not in ("", "0", "root")
    assert "8443/tcp" in config["ExposedPorts"]


def test_container_converts_the_documented_review(container_webhook):
    response = requests.post(
        container_webhook.url,
        json=ex.REQUEST_V1,
        verify=str(container_webhook.ca.cert_path),
        timeout=10,
    )
    assert response.status_code == 200
    assert response.json() == ex.RESPONSE_V1
    assert [r["uid"] for r in container_webhook.records() if r.get("uid") == ex.UID] == [ex.UID]


def test_stopping_removes_the_container(webhook_image, tmp_path):
    server = ContainerWebhook(
        certs.CertificateAuthority(tmp_path), tmp_path, image=webhook_image
    ).start()
    name = server.container
    server.stop()
    assert images.docker("inspect", name, check=False).returncode != 0


def test_private_key_reaches_the_container_owner_only(container_webhook):
    """Like a Secret mounted with defaultMode 0400: only the container's user can read it."""
    user = images.docker("exec", container_webhook.container, "id", "-u").stdout.strip()
    mode, owner = (
        images.docker("exec", container_webhook.container, "stat", "-c", "%a %u", "/tls/tls.key")
        .stdout.strip()
        .split()
    )
    assert (mode, owner) == ("600", user)
