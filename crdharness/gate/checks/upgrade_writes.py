"""Part of check *upgrade*: an object stored under release i is written again under release
i+1, at each served version, the ways its clients write it.

Reading old objects is not enough: a release that adds a ``required`` field, narrows an enum,
a length or a pattern, or changes a field's type still reads them, while every controller's
update and every ``kubectl apply`` of them is refused. The writes, in the order clients make
them: an update with what was read (a controller's Update), one with a changed annotation,
a server-side apply of the same content by another field manager, and a status update
through ``/status`` where the subresource exists. The API server ratchets validation (from
1.33: values an update leaves unchanged are not judged again by the new schema), so these
writes may all be accepted while the object is no longer valid: last, the same content is
created again as a dry run, as a restore from backup or a GitOps re-apply would, and a
refusal there says which writes still fail (any that changes the offending fields, and every
re-create); and its status is written through ``/status`` to a new copy, as a controller
setting the same conditions anew would (``status`` is never judged on a create).
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass

from crdharness.cluster import Cluster
from crdharness.gate.api import MANAGER, Answer, apply, call, write_with_retry
from crdharness.gate.evidence.names import NameRule

TOUCHED = "gate.crdharness.io/written-again"
# What server-side apply answers for an object whose metadata.managedFields name a version the
# CRD no longer lists (kubernetes/kubernetes#111937): migrating storage does not rewrite them.
STALE_MANAGED_FIELDS = "request to convert CR to an invalid group/version"
MANAGED_FIELDS_ADVICE = (
    "the object's metadata.managedFields still name a version this release removed (any "
    "write at that version leaves an entry: here its creation or the gate's earlier writes, "
    "on clusters any client still using it; kubernetes/kubernetes#111937): every "
    "server-side apply of it fails, whatever was migrated; keep that version in "
    "spec.versions with served: false, or have the migration also drop those managedFields "
    "entries"
)
SERVER_FIELDS = ("resourceVersion", "managedFields", "uid", "creationTimestamp", "generation")


@dataclass(frozen=True)
class Refusal:
    """One write the server refused."""

    write: str  # which write: "update with what was read", ...
    version: str  # written at
    status: int
    message: str
    alone: bool = True  # a re-create: the object's own writes before it all passed

    @property
    def key(self) -> tuple[str, str]:
        """The same write at the same version: how a refusal under the earlier release is
        matched with one under the next."""
        return self.write, self.version

    @property
    def line(self) -> str:
        text = f"{self.write} at {self.version}: {self.status} {self.message}"
        if self.write == RECREATE and self.alone:
            text += (
                " — the writes above pass only because the API server ratchets validation "
                "of unchanged values; a write that changes these fields, and every "
                "re-create, is refused"
            )
        elif self.write == RECREATE_STATUS:
            text += (
                " — the object's own status update passes only because the API server "
                "ratchets validation of unchanged values; a status written anew (changed, or "
                "on a new object) is refused"
            )
        if STALE_MANAGED_FIELDS in self.message:
            text += f" ({MANAGED_FIELDS_ADVICE})"
        return text


# What a second try of the same write cannot change: kube-apiserver's own validation of the
# content (422 naming no webhook) and server-side apply's typed patch of it against the schema
# (500). A 429, a timeout or a webhook's failure may pass the next time: those are tried again.
TYPED_PATCH = "failed to create typed patch object"


def settled(refusals: list[Refusal], webhooks: bool) -> bool:
    """Whether every one of ``refusals`` is the API server's own answer to the content, with no
    webhook (``webhooks``: conversion or admission) taking part in the writes: the same
    writes would be refused the same way again, so trying them again proves nothing more."""
    if webhooks:
        return False
    return all(
        (r.status == 422 and "webhook" not in r.message.lower())
        or (r.status == 500 and r.message.startswith(TYPED_PATCH))
        for r in refusals
    )


UPDATE = "update with what was read"
CONFLICT = 409  # another client wrote the object between the gate's read and its write
RECREATE = "the same content created again (dry run, as a restore or re-apply would)"
RECREATE_STATUS = (
    "the same status written through /status to a new copy (as a controller setting it anew would)"
)


@dataclass(frozen=True)
class Rewrite:
    """What writing an object again did: the writes refused, and the object as the last
    write answered (None if that write was refused)."""

    refused: list[Refusal]
    now: dict | None


def rewrite(
    cluster: Cluster,
    path: str,
    version: str,
    has_status: bool,
    names: NameRule | None = None,
    read: dict | None = None,
) -> Rewrite:
    """Write the object at ``path`` (at ``version``) again. ``names``: what the schema at
    ``version`` requires of names (the re-create's must meet it). ``read``: the object as the
    caller read it there since its last write, under the CRDs installed now (the first update
    starts from it: one read fewer; if the object moved on since, the server answers 409 and
    it is read again). The last write's answer is the object as stored and read back at
    ``version`` (the server decodes what it wrote, defaults and converts it, as for a GET):
    the caller's read after the writes, at that version, is that answer."""
    refused: list[Refusal] = []

    # Each write's answer is the object as it now is: the next write starts from it.
    latest: dict | None = None

    def judge(what: str, answer: Answer) -> None:
        nonlocal latest
        latest = answer.body if answer.ok else None
        if not answer.ok:
            refused.append(Refusal(what, version, answer.status, answer.message))

    judge(UPDATE, write_with_retry(cluster, path, lambda current: current, current=read))

    def annotate(current: dict) -> dict:
        current.setdefault("metadata", {}).setdefault("annotations", {})[TOUCHED] = version
        return current

    judge(
        "update with a changed annotation",
        write_with_retry(cluster, path, annotate, current=latest),
    )
    content = latest
    if content is None:
        current = call(cluster, "GET", path)
        content = current.body if current.ok else None
    if content is not None:
        judge(
            "server-side apply of the same content",
            apply(cluster, path, _applied(content), MANAGER),
        )
    if has_status:
        judge(
            "status update through /status",
            write_with_retry(
                cluster, f"{path}/status", lambda c: c, read_path=path, current=latest
            ),
        )
    # Always made, even after a refusal above: that refusal may be the earlier release's own
    # hazard, and the re-create is what judges the new schema on unchanged values.
    if content is not None:
        collection = path.rsplit("/", 1)[0]
        again, recreated, taken = recreate_dry_run(cluster, collection, content, names)
        if recreated is not None:
            alone = not refused  # the object's own writes above all passed
            message = as_named(recreated.message, content)
            refused.append(Refusal(RECREATE, version, recreated.status, message, alone))
        elif has_status and "status" in content and not taken:
            refusal = status_written_anew(cluster, collection, again, content["status"])
            if refusal is not None and refusal[0] != CONFLICT:
                refused.append(Refusal(RECREATE_STATUS, version, *refusal))
    return Rewrite(refused, latest)


def recreate_dry_run(
    cluster: Cluster, collection: str, content: dict, names: NameRule | None = None
) -> tuple[dict, Answer | None, bool]:
    """``content`` (an object as read) created again in ``collection`` as a dry run: (the
    body sent, the server's refusal or None, whether it answered "already exists" for the
    object's own name, which comes only after validation accepted the content)."""
    again = recreated_body(content, names)
    answer = call(cluster, "POST", f"{collection}?dryRun=All", again)
    taken = already_exists(content, again, answer)
    # An admission webhook with side effects refuses every dry run: that says nothing here.
    if answer.ok or taken or "dry run" in answer.message.lower():
        return again, None, taken
    return again, answer, taken


def recreated_body(content: dict, names: NameRule | None = None) -> dict:
    """What a restore or re-apply would create from the object as read: its content under a
    name ``_recreated_name`` chooses, without what only the server writes."""
    again = _applied(content)
    own = str((content.get("metadata") or {}).get("name", ""))
    again["metadata"] = {
        **_recreated_name(names or NameRule(), own),
        **{k: v for k, v in again["metadata"].items() if k not in ("name", "annotations")},
    }
    return again


GENERATED = re.compile(r'"gate-recreated-[a-z0-9]+"')


def as_named(message: str, content: dict) -> str:
    """The server's message about a re-created copy, naming the object it copies: the name
    the gate generated means nothing to whoever reads the answer."""
    own = (content.get("metadata") or {}).get("name", "")
    return GENERATED.sub(f'"{own}"', message) if own else message


def already_exists(content: dict, again: dict, answer: Answer) -> bool:
    """A re-create under the object's own name answered "already exists": that comes only
    once validation and admission accepted the content (the storage's answer, after them)."""
    own = (content.get("metadata") or {}).get("name")
    return answer.status == 409 and again["metadata"].get("name") == own


def _recreated_name(rule: NameRule, own: str) -> dict:
    """The re-create's name: any (generated) where the schema says nothing of names; the
    object's own where the schema fixes it (a singleton) or refuses it (a restore keeps it:
    the refusal is the finding); else a new one that meets the schema."""
    if rule == NameRule():
        return {"generateName": "gate-recreated-"}
    if rule.single is not None or not rule.allows(own):
        return {"name": own}
    return {"name": rule.name(f"gate-recreated-{secrets.token_hex(3)}")}


def status_written_anew(
    cluster: Cluster, collection: str, obj: dict, status: dict
) -> tuple[int, str] | None:
    """The object's status written through ``/status`` to a new copy of it (deleted after):
    ratcheting lets an unchanged status through on the object itself, while a controller
    that sets the same conditions anew, on any object, is refused. The server's answer if
    refused."""
    created = call(cluster, "POST", collection, obj)
    if not created.ok:
        return None  # the dry run above judged the content; this is only for its status
    path = f"{collection}/{created.body['metadata']['name']}"
    try:
        # The project's controllers may reconcile the new copy at once (kueue's set its status
        # between the create and this write): read it again and write the status over theirs.
        put = write_with_retry(
            cluster,
            f"{path}/status",
            lambda current: {**current, "status": status},
            read_path=path,
            current=created.body,
        )
        # (A conflict every time is returned too: the server never judged the status, which
        # each caller says as "not known", never as refused or accepted.)
        return None if put.ok else (put.status, put.message)
    finally:
        call(cluster, "DELETE", path)


def _applied(obj: dict) -> dict:
    """What ``kubectl apply --server-side`` would send for the object as read: its content,
    without what only the server writes."""
    body = {k: v for k, v in obj.items() if k != "status"}
    metadata = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in SERVER_FIELDS}
    return {**body, "metadata": metadata}
