"""Whether a cluster answers at all, said in one line a user can act on.

The first request to a cluster the harness did not start (``--cluster=existing``, the gate's
``--from-cluster``) is a GET of ``/version``; what can go wrong there — nothing listening,
a CA that does not match, expired or refused credentials — is a cluster that cannot be
used, not a finding, and its message names the server and the likely fix instead of a
urllib3 traceback.
"""

from __future__ import annotations

import re

import requests

from crdharness.errors import HarnessError


def check_reachable(http: requests.Session, server: str, who: str, rbac_hint: str = "") -> str:
    """The server's ``gitVersion``; a HarnessError saying why it cannot be used otherwise.
    ``who`` names the cluster in messages ("--cluster=existing"); ``rbac_hint`` says where
    the permissions it needs are listed."""
    try:
        answer = http.get(f"{server.rstrip('/')}/version", timeout=30)
    except requests.exceptions.SSLError as exc:
        raise HarnessError(
            f"{who}: TLS to {server} failed ({_reason(exc)}): the kubeconfig's "
            "certificate-authority does not match the server's certificate"
        ) from None
    except requests.exceptions.ConnectionError as exc:
        raise HarnessError(
            f"{who}: nothing answers at {server} ({_reason(exc)}): is the cluster running, "
            "and is this the right kubeconfig and context?"
        ) from None
    except requests.exceptions.Timeout:
        raise HarnessError(f"{who}: {server} did not answer in 30 s") from None
    if answer.status_code == 401:
        raise HarnessError(
            f"{who}: {server} refused the credentials (401): they may have expired; log in "
            "again (or refresh the kubeconfig)"
        )
    if answer.status_code == 403:
        raise HarnessError(
            f"{who}: {server} forbids these credentials (403){rbac_hint and ': ' + rbac_hint}"
        )
    if answer.status_code != 200:
        raise HarnessError(f"{who}: GET {server}/version answered {answer.status_code}")
    try:
        return str(answer.json()["gitVersion"])
    except (ValueError, KeyError, TypeError):
        raise HarnessError(f"{who}: {server}/version is not a Kubernetes API server's") from None


def _reason(exc: Exception) -> str:
    """The innermost cause's words ("[Errno 111] Connection refused"), not urllib3's chain."""
    text = str(exc)
    for marker in ("[Errno", "certificate verify failed", "alert", "Name or service"):
        if marker in text:
            words = text[text.index(marker) :].split("'")[0].split('"')[0]
            # OpenSSL's source location ("(_ssl.c:1006)") says nothing to the reader.
            return re.sub(r"\s*\(_ssl\.c:\d+\)?", "", words).rstrip(")( ,")
    return text[:200]
