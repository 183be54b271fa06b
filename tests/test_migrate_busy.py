"""The migrator repeats a request the API server answers with 429: it does so while it
(re)builds a CRD's storage right after the CRD changed, which is when migrations start (seen
as a failed MG-04 in a reliability run)."""

from __future__ import annotations

import pytest
from kubernetes.client.rest import ApiException

from crdharness.scenarios import migrate


def busy() -> ApiException:
    return ApiException(status=429, reason="storage is (re)initializing")


class BusyAtFirst:
    """CustomObjectsApi whose every call answers 429 the first time."""

    def __init__(self, items: list[dict]):
        self.items = items
        self.calls: list[str] = []
        self.written: list[str] = []

    def _once_busy(self, call: str) -> None:
        self.calls.append(call)
        if self.calls.count(call) == 1:
            raise busy()

    def list_cluster_custom_object(self, group, version, plural):
        self._once_busy("list")
        return {"items": self.items}

    def replace_namespaced_custom_object(self, group, version, namespace, plural, name, body):
        self._once_busy(f"replace {name}")
        self.written.append(name)
        return body


def test_429_answers_are_repeated_until_answered(monkeypatch):
    api = BusyAtFirst([{"metadata": {"name": n, "namespace": "ns"}} for n in ("a", "b")])
    monkeypatch.setattr(migrate.client, "CustomObjectsApi", lambda api_client: api)
    result = migrate.migrate(None, "g.example.com", "v1", "things")
    assert sorted(result.rewritten) == ["ns/a", "ns/b"]
    assert api.written == ["a", "b"]
    assert api.calls.count("list") == 2


def test_other_errors_still_end_the_migration(monkeypatch):
    class Forbidden(BusyAtFirst):
        def list_cluster_custom_object(self, group, version, plural):
            raise ApiException(status=403, reason="Forbidden")

    monkeypatch.setattr(migrate.client, "CustomObjectsApi", lambda api_client: Forbidden([]))
    with pytest.raises(ApiException, match="Forbidden"):
        migrate.migrate(None, "g.example.com", "v1", "things")
