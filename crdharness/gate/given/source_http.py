"""The connection to a ``--from-cluster`` source: read-only, and every way it can fail said
in one line (a HarnessError: the gate exits 3 with it) — a kubeconfig or context that does
not exist, a server that does not answer, TLS, 401 or 403, a request that fails midway.

Nothing here can write: the connection refuses every method but GET before a request leaves
(``ReadOnlyHttp``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import requests
import yaml
from kubernetes import client, config

from crdharness.cluster import ApiHttp
from crdharness.errors import HarnessError
from crdharness.reachability import check_reachable

PAGE = 500  # objects per LIST page
WHO = "--from-cluster"
RBAC_HINT = (
    "the gate needs get on its CRDs and get and list on their objects "
    "(`crdharness gate GATE.yaml --print-rbac` prints that ClusterRole)"
)


class ReadOnlyHttp(ApiHttp):
    """The source cluster's connection: GET only, refused here before anything is sent."""

    def request(self, method, url, *args, **kwargs):
        if method.upper() != "GET":
            raise HarnessError(f"the gate never writes to the source cluster (refused: {method})")
        return super().request(method, url, *args, **kwargs)

    def exchange(self, method, path, *args, **kwargs):
        if method.upper() != "GET":
            raise HarnessError(f"the gate never writes to the source cluster (refused: {method})")
        return super().exchange(method, path, *args, **kwargs)


def _kubeconfig(path: Path) -> dict:
    if not path.is_file():
        raise HarnessError(f"{WHO}: {path} does not exist (a kubeconfig file)")
    try:
        loaded = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise HarnessError(f"{WHO}: cannot read {path} as a kubeconfig: {exc}") from None
    if not isinstance(loaded, dict):
        raise HarnessError(f"{WHO}: {path} is not a kubeconfig (no mapping)")
    return loaded


def contexts(loaded: dict) -> list[str]:
    """The contexts a kubeconfig holds, by name."""
    return [str(c.get("name")) for c in loaded.get("contexts") or [] if isinstance(c, dict)]


def context_name(kubeconfig: Path, context: str | None) -> str:
    if context:
        return context
    return str(_kubeconfig(kubeconfig).get("current-context") or "(none)")


def connect(kubeconfig: Path, context: str | None, credentials_dir: Path) -> ReadOnlyHttp:
    """A read-only connection to the cluster ``kubeconfig`` (and ``context``) names; a
    context it does not hold is refused here, listing those it does."""
    loaded = _kubeconfig(kubeconfig)
    present = contexts(loaded)
    wanted = context or loaded.get("current-context")
    if wanted not in present:
        said = f"has no context {wanted!r}" if wanted else "names no current-context"
        raise HarnessError(
            f"{WHO}: {kubeconfig} {said}; its contexts: {', '.join(present) or 'none'} "
            "(choose one with --context)"
        )
    configuration = client.Configuration()
    credentials_dir.mkdir(parents=True, exist_ok=True)
    try:
        config.load_kube_config(
            config_file=str(kubeconfig),
            context=context,
            client_configuration=configuration,
            temp_file_path=str(credentials_dir),
        )
    except (config.ConfigException, OSError, ValueError, KeyError, TypeError) as exc:
        raise HarnessError(f"{WHO}: cannot use {kubeconfig}: {exc}") from None
    return ReadOnlyHttp(configuration)


def reach(http: ReadOnlyHttp) -> str:
    """The source's Kubernetes version (one GET of /version); a HarnessError saying why it
    cannot be read otherwise (nothing listening, TLS, expired or refused credentials)."""
    return check_reachable(http, http.base_url, WHO, RBAC_HINT)


def get_json(http: ReadOnlyHttp, path: str) -> dict | None:
    """A GET's JSON; None for 404; a HarnessError that says what went wrong otherwise (what
    to grant, for 401 and 403)."""
    try:
        answer = http.get(path, timeout=60)
    except requests.RequestException as exc:  # the cluster went away midway, a timeout
        raise HarnessError(f"{WHO}: GET {path} failed: {_reason(exc)}") from None
    if answer.status_code == 404:
        return None
    if answer.status_code in (401, 403):
        raise HarnessError(
            f"{WHO}: the source cluster refused GET {path} ({answer.status_code}): {RBAC_HINT}"
        )
    if answer.status_code != 200:
        text = answer.text[:300].replace("\n", " ")
        raise HarnessError(f"{WHO}: GET {path}: {answer.status_code} {text}")
    try:
        found = answer.json()
    except ValueError:
        raise HarnessError(f"{WHO}: GET {path} did not answer JSON") from None
    if not isinstance(found, dict):
        raise HarnessError(f"{WHO}: GET {path} did not answer a JSON object")
    return found


def pages(http: ReadOnlyHttp, path: str) -> Iterator[dict]:
    """Every item of a LIST, page by page."""
    token = ""
    while True:
        page = get_json(
            http, f"{path}?limit={PAGE}" + (f"&continue={quote(token)}" if token else "")
        )
        if page is None:
            return
        yield from page.get("items") or []
        token = (page.get("metadata") or {}).get("continue") or ""
        if not token:
            return


def _reason(exc: Exception) -> str:
    """The innermost cause, in one line (urllib3 nests it in reprs)."""
    text = " ".join(str(exc).split())
    for marker in ("[Errno", "certificate verify failed", "Read timed out", "Name or service"):
        if marker in text:
            return text[text.index(marker) :].split("'")[0].split('"')[0].rstrip(")( ,")
    return f"{type(exc).__name__}: {text[:200]}"
