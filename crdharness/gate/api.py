"""The gate's requests to the API server, as raw HTTP.

Raw, not the generated client: the gate needs the server's own status codes, messages and
``Warning`` headers verbatim, and must send CRDs and objects the client's models would
refuse to build.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import orjson

from crdharness.cluster import Cluster, Exchange
from crdharness.scenarios import crds

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
WARNING = re.compile(r'\d{3} [^ ]+ "((?:[^"\\]|\\.)*)"')


@dataclass
class Answer:
    status: int
    body: dict  # the JSON object answered; empty if the answer was not one
    warnings: list[str]
    text: str

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def message(self) -> str:
        if isinstance(self.body, dict) and self.body.get("message"):
            return str(self.body["message"])
        return self.text.strip()[:500]


def _answer(exchange: Exchange) -> Answer:
    body = parsed(exchange.data)
    if not isinstance(body, dict):
        body = {}
    # The text only where ``message`` may need it: an object, or the server's own Status,
    # says what it has to say in JSON (decoding each object twice cost the gate's CPU).
    said = body and (200 <= exchange.status < 300 or body.get("message"))
    text = "" if said else exchange.data.decode("utf-8", "replace")
    header = exchange.headers.get("Warning", "")
    return Answer(exchange.status, body, WARNING.findall(header), text)


def encoded(body: dict) -> bytes:
    """``body`` as the JSON sent (``orjson``: the gate sends hundreds of thousands of
    objects); ``json`` for what orjson refuses (an integer beyond 64 bits, drawn on purpose
    for a bound)."""
    try:
        return orjson.dumps(body, option=orjson.OPT_NON_STR_KEYS)
    except orjson.JSONEncodeError:
        return json.dumps(body, allow_nan=False).encode()


def parsed(data: bytes):
    """An answer's JSON; None where it is none."""
    if not data:
        return None
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        try:
            return json.loads(data)
        except ValueError:
            return None


# Longer than kube-apiserver's own 30 s limit on a conversion webhook call, so a request
# that waits on a hanging webhook gets the server's answer rather than the client's timeout.
REQUEST_TIMEOUT = 60.0


def call(cluster: Cluster, method: str, path: str, body: dict | None = None) -> Answer:
    data = None if body is None else encoded(body)
    return _answer(cluster.http.exchange(method, path, data, timeout=REQUEST_TIMEOUT))


# The field manager of the gate's own server-side applies (shown objects leave its entries out).
MANAGER = "crdharness-gate"


def apply(cluster: Cluster, path: str, body: dict, manager: str) -> Answer:
    """Server-side apply of ``body`` (as ``kubectl apply --server-side`` sends it)."""
    return _answer(
        cluster.http.exchange(
            "PATCH",
            f"{path}?fieldManager={manager}",
            yaml_safe_json(body).encode(),
            "application/apply-patch+yaml",
            REQUEST_TIMEOUT,
        )
    )


# What YAML lets stand unescaped (its printable set, which the API server's decoder enforces
# on apply patches even when they are JSON; JSON escapes tabs and newlines itself).
# Line breaks to YAML (NEL, U+2028, U+2029) are folded in a quoted scalar: escaped too.
_NOT_PRINTABLE = re.compile(
    "[^\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]"
)


def yaml_safe_json(body: dict) -> str:
    """JSON the API server's YAML decoder reads as it is: characters outside the BMP written
    out (YAML refuses the surrogate pairs JSON would escape them as), the rest of what YAML
    cannot carry unescaped written as ``\\uXXXX``."""
    text = json.dumps(body, ensure_ascii=False)
    return _NOT_PRINTABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def write_with_retry(
    cluster: Cluster,
    path: str,
    change,
    read_path: str | None = None,
    current: dict | None = None,
) -> Answer:
    """PUT ``change(current)``, reading the object again after a conflict: the user's
    controllers (a manager's reconcilers run beside its webhook) may write it meanwhile.
    ``current``, the object as the caller last read or wrote it, saves the first read."""
    answer = Answer(409, {}, [], "no attempt")
    for _ in range(5):
        if current is None:
            read = call(cluster, "GET", read_path or path)
            if not read.ok:
                return read
            current = read.body
        answer = call(cluster, "PUT", path, change(current))
        if answer.status != 409:
            return answer
        current = None
    return answer


@dataclass(frozen=True)
class Resource:
    """Where one CRD's objects live, at any version."""

    group: str
    plural: str
    kind: str
    namespaced: bool

    @classmethod
    def of(cls, crd: dict) -> Resource:
        spec = crd["spec"]
        return cls(
            spec["group"],
            spec["names"]["plural"],
            spec["names"]["kind"],
            spec.get("scope", "Namespaced") == "Namespaced",
        )

    def path(self, version: str, namespace: str | None, name: str | None = None) -> str:
        base = f"/apis/{self.group}/{version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        return f"{base}/{name}" if name else base


def apply_crd(cluster: Cluster, manifest: dict) -> Answer:
    """Create the CRD, or replace the one there (the way ``kubectl apply`` ends up)."""
    name = manifest["metadata"]["name"]
    current = call(cluster, "GET", f"{CRDS}/{name}")
    if current.status == 404:
        return call(cluster, "POST", CRDS, manifest)
    body = {**manifest, "metadata": {**manifest["metadata"]}}
    body["metadata"]["resourceVersion"] = current.body["metadata"]["resourceVersion"]
    return call(cluster, "PUT", f"{CRDS}/{name}", body)


def read_crd(cluster: Cluster, name: str) -> dict | None:
    answer = call(cluster, "GET", f"{CRDS}/{name}")
    return answer.body if answer.ok else None


def condition(crd: dict, kind: str) -> dict:
    for entry in (crd.get("status") or {}).get("conditions") or []:
        if entry.get("type") == kind:
            return entry
    return {}


def delete_crd(cluster: Cluster, name: str) -> None:
    crds.delete_and_wait(cluster.api_client, name)


def ensure_namespace(cluster: Cluster, name: str) -> None:
    answer = call(cluster, "POST", "/api/v1/namespaces", {"metadata": {"name": name}})
    if not answer.ok and answer.status != 409:
        raise AssertionError(f"cannot create namespace {name}: {answer.message}")
