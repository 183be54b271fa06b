"""Objects as the gate shows them (terminal, report.md, ``objects/``, pytest's failures): without
the annotations the gate puts on its own copies, and in files named by the object.

The annotations (``gate.crdharness.io/written-again`` on an object the upgrade check writes
again, ``gate.crdharness.io/round-trip`` on a round trip's) and the managedFields entries of
the gate's own server-side apply are the gate's doing: an operator comparing the shown object
with theirs would look for a difference that is not there. They are taken out of copies for
showing only; what the gate writes to a cluster keeps them.
"""

from __future__ import annotations

import hashlib
import re

from crdharness.gate.api import MANAGER

OWN_ANNOTATIONS = "gate.crdharness.io/"  # the prefix of every annotation the gate sets
UNSAFE = re.compile(r"[^A-Za-z0-9.-]+")
STEM = 120  # characters of a file name's object part (names run to 253)


def as_shown(obj):
    """``obj`` without the gate's own annotations, nor its own traces of them in
    ``metadata.managedFields`` (its server-side apply's entries, the annotation's key in
    others'): a copy where it had any, ``obj`` itself otherwise; never changes ``obj``."""
    metadata = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(metadata, dict):
        return obj
    annotations = metadata.get("annotations")
    managed = metadata.get("managedFields")
    own = isinstance(annotations, dict) and any(map(_own, annotations))
    entries = [_without_own(e) for e in managed] if isinstance(managed, list) else None
    if not own and entries == managed:
        return obj
    shown = {**obj, "metadata": dict(metadata)}
    if own:
        kept = {k: v for k, v in annotations.items() if not _own(k)}
        if kept:
            shown["metadata"]["annotations"] = kept
        else:
            del shown["metadata"]["annotations"]
    if entries is not None:
        shown["metadata"]["managedFields"] = [e for e in entries if e is not None]
    return shown


def brief(obj):
    """``obj`` as report.md shows it: each managedFields entry by who wrote it, how, and at
    which version (what a stale entry's finding needs), without its ``fieldsV1`` tree, which
    made a real CRD's report a megabyte of repeated blocks. ``objects/`` keeps them whole."""
    metadata = obj.get("metadata") if isinstance(obj, dict) else None
    managed = metadata.get("managedFields") if isinstance(metadata, dict) else None
    if not isinstance(managed, list):
        return obj
    entries = [
        {k: v for k, v in e.items() if k in ("manager", "operation", "apiVersion", "subresource")}
        if isinstance(e, dict)
        else e
        for e in managed
    ]
    return {**obj, "metadata": {**metadata, "managedFields": entries}}


def _own(key) -> bool:
    return str(key).startswith(OWN_ANNOTATIONS)


def _without_own(entry):
    """A managedFields entry without the gate's annotations in it; None for one that is
    the gate's alone (its own field manager, or nothing left but them)."""
    if not isinstance(entry, dict) or entry.get("manager") == MANAGER:
        return None if isinstance(entry, dict) else entry
    fields = entry.get("fieldsV1")
    owned = (fields or {}).get("f:metadata", {}) if isinstance(fields, dict) else {}
    annotations = owned.get("f:annotations") if isinstance(owned, dict) else None
    if not isinstance(annotations, dict) or not any(_own(k[2:]) for k in annotations):
        return entry
    kept = {k: v for k, v in annotations.items() if not _own(k[2:])}
    metadata = {k: v for k, v in owned.items() if k != "f:annotations"}
    metadata |= {"f:annotations": kept} if kept else {}
    rest = {k: v for k, v in fields.items() if k != "f:metadata"}
    rest |= {"f:metadata": metadata} if metadata else {}
    return {**entry, "fieldsV1": rest} if rest else None


def object_stem(obj, fallback: str) -> str:
    """What names a shown object's file: its kind, namespace and name (``Gateway_team-b_
    status-bad-ip``; ``_`` is in no Kubernetes name), else ``fallback``; safe as a file name."""
    metadata = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(metadata, dict) or not metadata.get("name"):
        return _safe(fallback)
    parts = [obj.get("kind") or "object", metadata.get("namespace"), metadata["name"]]
    return _safe("_".join(str(p) for p in parts if p))


def _safe(text: str) -> str:
    safe = UNSAFE.sub("_", text).strip("._") or "object"
    if len(safe) <= STEM:
        return safe
    digest = hashlib.sha256(text.encode()).hexdigest()[:8]  # still unique when cut
    return f"{safe[: STEM - 9]}-{digest}"


def file_names(stems: list[str]) -> list[str]:
    """A unique ``.yaml`` file name for each stem, in order: an object shown more than once
    (before and after its writes, in two checks) numbered from its second file on."""
    taken: set[str] = set()
    names = []
    for stem in stems:
        name, n = f"{stem}.yaml", 1
        while name.lower() in taken:  # unique on case-insensitive file systems too
            n += 1
            name = f"{stem}.{n}.yaml"
        taken.add(name.lower())
        names.append(name)
    return names
