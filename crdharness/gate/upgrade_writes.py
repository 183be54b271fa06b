"""Part of check *upgrade*: an object stored under release i is written again under release
i+1, at each served version, the ways its clients write it.

Reading old objects is not enough: a release that adds a ``required`` field, narrows an enum,
a length or a pattern, or changes a field's type still reads them, while every controller's
update and every ``kubectl apply`` of them is refused. The writes, in the order clients make
them: an update with what was read (a controller's Update), one with a changed annotation,
a server-side apply of the same content by another field manager, and a status update
through ``/status`` where the subresource exists. Where the API server ratchets validation
(unchanged values of an object are not judged again), these are what it really accepts.
"""

from __future__ import annotations

from crdharness.cluster import Cluster
from crdharness.gate.api import Answer, apply, call, write_with_retry

TOUCHED = "gate.crdharness.io/written-again"
MANAGER = "crdharness-gate"
SERVER_FIELDS = ("resourceVersion", "managedFields", "uid", "creationTimestamp", "generation")


def write_again(cluster: Cluster, path: str, version: str, has_status: bool) -> list[str]:
    """Write the object at ``path`` (at ``version``) again; one line per write refused."""
    refused: list[str] = []

    def judge(what: str, answer: Answer) -> None:
        if not answer.ok:
            refused.append(f"{what} at {version}: {answer.status} {answer.message}")

    judge("update with what was read", write_with_retry(cluster, path, lambda current: current))

    def annotate(current: dict) -> dict:
        current.setdefault("metadata", {}).setdefault("annotations", {})[TOUCHED] = version
        return current

    judge("update with a changed annotation", write_with_retry(cluster, path, annotate))
    current = call(cluster, "GET", path)
    if current.ok:
        judge(
            "server-side apply of the same content",
            apply(cluster, path, _applied(current.body), MANAGER),
        )
    if has_status:
        judge(
            "status update through /status",
            write_with_retry(cluster, f"{path}/status", lambda c: c, read_path=path),
        )
    return refused


def _applied(obj: dict) -> dict:
    """What ``kubectl apply --server-side`` would send for the object as read: its content,
    without what only the server writes."""
    body = {k: v for k, v in obj.items() if k != "status"}
    metadata = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in SERVER_FIELDS}
    return {**body, "metadata": metadata}
