"""A source cluster's objects written straight into the replay's etcd: the bytes a cluster
holds, in transactions of a hundred, instead of one create through the API server each.

Faster (a cluster's tens of thousands of objects in seconds), and closer to the cluster: an
object the installed schema no longer admits — written under an earlier release of the CRD
and never since — is held as it is, where a create through the API server would refuse it.
Each is stored at the version its last writer used (what the API server would have stored
had the storage version been that one), with the metadata the API server writes on a create
(a new uid, a creation time, generation 1) and the managedFields the source holds; the API
server reads it, converts it and defaults it as it does any stored object.

Only a cluster whose etcd the harness writes (the local control plane) has this; elsewhere
the objects are created through the API server (``replay``).
"""

from __future__ import annotations

import json
import time
import uuid

from crdharness.etcd import custom_resource_key
from crdharness.gate.given.cluster_source import CapturedObject
from crdharness.gate.given.manifests import Release
from crdharness.gate.run.context import GateContext


def available(ctx: GateContext) -> bool:
    return callable(getattr(ctx.cluster.etcd, "put_many", None))


def stored_value(release: Release, obj: CapturedObject, created: str) -> dict:
    """What the API server would have stored for ``obj`` had it created it at its version."""
    manifest = release.crds[obj.crd]
    spec = manifest["spec"]
    metadata = {k: v for k, v in (obj.body.get("metadata") or {}).items()}
    metadata |= {"name": obj.name, "uid": str(uuid.uuid4()), "creationTimestamp": created}
    metadata["generation"] = 1
    if obj.namespace:
        metadata["namespace"] = obj.namespace
    if obj.managed_fields:
        metadata["managedFields"] = obj.managed_fields
    metadata.pop("resourceVersion", None)  # etcd's revision is the resourceVersion
    content = {k: v for k, v in obj.body.items() if k not in ("apiVersion", "kind", "metadata")}
    return {
        "apiVersion": f"{spec['group']}/{obj.version}",
        "kind": spec["names"]["kind"],
        "metadata": metadata,
        **content,
    }


def write(ctx: GateContext, release: Release, captured: list[CapturedObject]) -> None:
    """Each of ``captured`` stored in the replay's etcd under its own key."""
    created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    items = []
    for obj in captured:
        spec = release.crds[obj.crd]["spec"]
        key = custom_resource_key(spec["group"], spec["names"]["plural"], obj.name, obj.namespace)
        value = json.dumps(stored_value(release, obj, created), separators=(",", ":"))
        items.append((key, value.encode()))
    ctx.cluster.etcd.put_many(items)  # type: ignore[union-attr]  # ``available`` said so
