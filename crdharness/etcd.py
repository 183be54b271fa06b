"""Read what etcd stores for an object: the proof of which version it is persisted at.

Uses etcd's JSON gateway (``POST /v3/kv/range``), so no etcdctl is needed. Custom resources
are stored as JSON (unless encryption at rest or CBOR storage is on), so the ``apiVersion``
inside the bytes is the persisted version.
"""

from __future__ import annotations

import base64
import builtins
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import requests


def _b64(text: str | bytes) -> str:
    raw = text.encode() if isinstance(text, str) else text
    return base64.b64encode(raw).decode()


def _prefix_end(prefix: str) -> str:
    """etcd's range end for "every key starting with prefix"."""
    raw = bytearray(prefix.encode())
    raw[-1] += 1
    return _b64(bytes(raw))


def custom_resource_key(group: str, plural: str, name: str, namespace: str | None = None) -> str:
    if namespace:
        return f"/registry/{group}/{plural}/{namespace}/{name}"
    return f"/registry/{group}/{plural}/{name}"


@dataclass(frozen=True)
class StoredObject:
    key: str
    raw: bytes
    mod_revision: int
    create_revision: int
    version: int  # how many times the key was written since it was created

    @property
    def json(self) -> dict:
        return json.loads(self.raw)

    @property
    def api_version(self) -> str:
        return self.json["apiVersion"]


def parse_range(answer: dict) -> list[StoredObject]:
    """The ``kvs`` of an etcd range answer: the JSON gateway's, or ``etcdctl get -w json``'s."""
    return [
        StoredObject(
            key=base64.b64decode(kv["key"]).decode(),
            raw=base64.b64decode(kv.get("value", "")),
            mod_revision=int(kv["mod_revision"]),
            create_revision=int(kv["create_revision"]),
            version=int(kv.get("version", 0)),
        )
        for kv in answer.get("kvs", [])
    ]


class EtcdReader(Protocol):
    """What a cluster's ``etcd`` answers, whichever way it reaches etcd: its gRPC gateway on
    loopback (``EtcdInspector``) or etcdctl inside a kind node (``KindEtcd``)."""

    def get(self, key: str) -> StoredObject | None: ...

    def list(self, prefix: str) -> list[StoredObject]: ...

    def custom_resource(
        self, group: str, plural: str, name: str, namespace: str | None = None
    ) -> StoredObject | None: ...


class EtcdInspector:
    """etcd read through its gRPC gateway (the local backend)."""

    def __init__(self, client_url: str):
        self.client_url = client_url.rstrip("/")
        self._http = requests.Session()
        self._http.trust_env = False  # loopback: no proxies, no machine CA bundle

    def _range(self, body: dict) -> list[StoredObject]:
        response = self._http.post(f"{self.client_url}/v3/kv/range", json=body, timeout=10)
        response.raise_for_status()
        return parse_range(response.json())

    def get(self, key: str) -> StoredObject | None:
        found = self._range({"key": _b64(key)})
        return found[0] if found else None

    def list(self, prefix: str) -> list[StoredObject]:
        return self._range({"key": _b64(prefix), "range_end": _prefix_end(prefix)})

    def custom_resource(
        self, group: str, plural: str, name: str, namespace: str | None = None
    ) -> StoredObject | None:
        return self.get(custom_resource_key(group, plural, name, namespace))

    def put_many(self, items: Sequence[tuple[str, bytes]]) -> None:
        """Write each (key, value) in transactions of at most ``TXN_OPS`` puts and
        ``TXN_BYTES`` (etcd's own limits are 128 operations and 1.5 MiB a request)."""
        batch: builtins.list[dict] = []  # ``list`` is this class's method
        size = 0
        for key, value in items:
            if batch and (len(batch) >= TXN_OPS or size + len(value) > TXN_BYTES):
                self._txn(batch)
                batch, size = [], 0
            batch.append({"request_put": {"key": _b64(key), "value": _b64(value)}})
            size += len(key) + len(value)
        if batch:
            self._txn(batch)

    def _txn(self, puts: Sequence[dict]) -> None:
        response = self._http.post(
            f"{self.client_url}/v3/kv/txn", json={"success": puts}, timeout=60
        )
        response.raise_for_status()
        if not response.json().get("succeeded", False):
            raise RuntimeError(
                f"etcd refused a transaction of {len(puts)} puts: {response.text[:300]}"
            )


TXN_OPS = 100
TXN_BYTES = 1_000_000


if TYPE_CHECKING:  # mypy checks it against the protocol clusters are typed with
    _checked: type[EtcdReader] = EtcdInspector
