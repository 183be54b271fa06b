"""The one interface of every conversion webhook the harness runs or reaches."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Protocol, TypeVar


class ConversionWebhook(Protocol):
    """A conversion webhook as tests and the gate use it, whichever form runs it: the
    reference webhook as a local process (``reference.LocalWebhook``), a container from its
    image (``reference.ContainerWebhook``) or a Deployment behind a Service on kind
    (``backends.kind_cluster.KindWebhook``); the user's own webhook in the gate, from a
    command, an image or a URL (``gate.user_webhook.UserWebhook``; on kind
    ``gate.kind_webhook.KindUserWebhook``). ``start`` is ``launch`` then ``wait_ready``, and
    stops what it launched if that fails; each form is cleaned up after a killed run (a
    guardian, or the cluster). A form that cannot do something (fault control in a user's
    webhook, records where nothing sits in front of it) raises ``HarnessError`` saying so."""

    def client_config(self) -> dict: ...  # the CRD's conversion.webhook.clientConfig

    def records(self) -> list[dict]: ...

    def reviews_for(self, name: str, desired_api_version: str | None = None) -> list[dict]: ...

    def set_faults(self, *faults: str) -> None: ...  # HarnessError where it cannot

    def launch(self) -> ConversionWebhook: ...

    def wait_ready(self) -> None: ...

    def start(self) -> ConversionWebhook: ...

    def stop(self) -> None: ...


class Launchable(Protocol):
    def launch(self) -> object: ...

    def wait_ready(self) -> None: ...

    def stop(self) -> None: ...


W = TypeVar("W", bound=Launchable)


def started(webhook: W, wait_ready: Callable[[], None] | None = None) -> W:
    """``webhook.launch()``, then wait until it is ready (``wait_ready``, by default its
    own); a webhook that never became ready is stopped, so it cannot outlive the attempt."""
    webhook.launch()
    try:
        (wait_ready or webhook.wait_ready)()
    except BaseException:
        webhook.stop()
        raise
    return webhook


class ReviewRecords:
    """Reading a webhook's review records; the forms differ only in where the lines are."""

    def _record_lines(self) -> list[str]:
        raise NotImplementedError

    def records(self) -> list[dict]:
        """Every review (and rejected request) the webhook answered so far, oldest first."""
        return [json.loads(line) for line in self._record_lines() if line.startswith("{")]

    def reviews_for(self, name: str, desired_api_version: str | None = None) -> list[dict]:
        """Reviews that carried object ``name`` (optionally converting it to a version)."""
        return [
            r
            for r in self.records()
            if any(o.get("name") == name for o in r.get("objects", []))
            and (desired_api_version is None or r.get("desiredAPIVersion") == desired_api_version)
        ]
