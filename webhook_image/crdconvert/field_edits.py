"""Edits of a converted object that crdconvert's faults make at named paths (``a.b.c``,
``a.b[].c``): a field dropped, moved, swapped, filled, kept in an annotation, a list split.
Each is one bug a real converter has, reproduced on purpose."""

from __future__ import annotations

import copy
import json
import re


def parent(obj: dict, path: str) -> tuple[dict | None, str]:
    """The object holding the last key of ``a.b.c`` (None where the way there is not
    objects), and that key."""
    *parents, last = path.split(".")
    node: object = obj
    for part in parents:
        node = node.get(part) if isinstance(node, dict) else None
    return (node if isinstance(node, dict) else None), last


def metadata(obj: dict) -> dict:
    return obj.setdefault("metadata", {})


def drop(obj: dict, path: str) -> None:
    """Remove ``a.b.c`` from a converted object: the lossy converter of the gate's example.
    ``a.b[].c`` removes ``c`` from every item of the list ``a.b``."""
    part, _, rest = path.partition(".")
    nodes = obj.get(part[:-2]) if part.endswith("[]") else [obj.get(part)]
    if not rest:
        if not part.endswith("[]"):
            obj.pop(part, None)
        return
    for node in nodes if isinstance(nodes, list) else []:
        if isinstance(node, dict):
            drop(node, rest)


def holds(obj: object, path: str) -> bool:
    node = obj
    for part in path.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node is not None


def drop_empty_keys(obj: dict, spec: str) -> None:
    """Items of the list ``a.b`` whose ``key`` is empty dropped whole (``a.b[].key``): a
    converter that skips an entry it cannot name."""
    listed, _, key = spec.partition("[].")
    node, last = parent(obj, listed)
    if node is not None and isinstance(node.get(last), list):
        node[last] = [i for i in node[last] if not (isinstance(i, dict) and i.get(key) == "")]


def split_items(obj: dict, path: str) -> None:
    """The list of strings at ``a.b`` answered as a converter that keeps it joined with ","
    in one annotation answers it: an item holding a comma comes back as two."""
    node, last = parent(obj, path)
    if node is not None and isinstance(node.get(last), list):
        items = node[last]
        if all(isinstance(i, str) for i in items):
            node[last] = ",".join(items).split(",") if items else []


def stash(obj: dict, into_annotation: bool, path: str, key: str, mode: str) -> None:
    """A field the other version lacks kept in the annotation ``key`` on the way to the
    version that lacks it (``into_annotation``), and read back from it on the way up.

    Kept whole (``flag`` false), as a careful webhook does: the value's JSON, read back and
    the annotation removed only where it parses, so a user's own value of that key survives
    both ways. As a flag (``flag`` true), as a careless one does (capsule's ``cordon``): only
    ``true`` is written, and on the way up the annotation is always consumed, read as
    ``value == "true"``: a user's ``"false"`` (or any other value) is lost. Joined (``mode``
    "joined"), as capsule keeps a list of strings: its items joined with "," and split on ","
    on the way up, so an item holding a comma comes back as two. Restored only (``mode``
    "restore"): the fixed release of a "field" one, which keeps the field itself now and
    still reads back (and leaves) what the release before kept (objects that release stored
    read without the field at that version until written again). A copy (``mode`` "copy"):
    the value's JSON kept as it was sent, the field itself left as converted (with what the
    version holds of it, a duration as whole seconds), and put back from the copy on the way
    up, so a round trip is exact while a client of the version sees less (api-gateway)."""
    flag, joined = mode == "flag", mode == "joined"
    *parents, last = path.split(".")
    annotations = metadata(obj).get("annotations") or {}
    if into_annotation and mode == "restore":
        return
    if into_annotation:
        node, _ = parent(obj, path)
        if node is None or last not in node:
            return
        value = copy.deepcopy(node[last]) if mode == "copy" else node.pop(last)
        if flag and value is not True:
            return
        if joined:
            annotations[key] = ",".join(str(v) for v in value)
        else:
            annotations[key] = "true" if flag else json.dumps(value)
        metadata(obj)["annotations"] = annotations
        return
    if key not in annotations:
        return
    if flag:
        value = annotations.pop(key) == "true"
    elif joined:
        text = annotations.pop(key)
        value = text.split(",") if text else []
    else:
        try:
            value = json.loads(annotations[key])
        except ValueError:
            return  # not ours: the user's own value, kept as it is
        if mode != "restore":  # the fixed release leaves what it no longer writes
            del annotations[key]
    if not annotations:
        metadata(obj).pop("annotations", None)
    target = obj
    for part in parents:
        target = target.setdefault(part, {})
    target[last] = value


def move(obj: dict, source: str, target: str) -> None:
    """The value at ``source`` answered at ``target`` instead, where the object holds none
    there: a deprecated field converted into its successor (both one level deep or more)."""

    (a, a_key), (b, b_key) = parent(obj, source), parent(obj, target)
    if a is not None and b is not None and a_key in a and b_key not in b:
        b[b_key] = a.pop(a_key)


def fill(obj: dict, path: str, value: object) -> None:
    """``a.b.c`` answered as ``value`` where ``a.b`` exists without ``c``."""
    node, last = parent(obj, path)
    if node is not None and last not in node:
        node[last] = copy.deepcopy(value)


def swap(obj: dict, first: str, second: str) -> None:
    """Exchange the values at two paths (both present): a converter that maps each field to
    the other one, in both directions, so a round trip A->B->A looks exact."""

    (a, a_key), (b, b_key) = parent(obj, first), parent(obj, second)
    if a is not None and b is not None and a_key in a and b_key in b:
        a[a_key], b[b_key] = b[b_key], a[a_key]


# A Go duration (``time.ParseDuration``): a sign, then numbers each with a unit.
DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
NANOSECONDS = {"ns": 1, "us": 10**3, "µs": 10**3, "ms": 10**6, "s": 10**9, "m": 60 * 10**9}
NANOSECONDS["h"] = 3600 * 10**9


def whole_seconds(obj: dict, to_seconds: bool, path: str) -> None:
    """A duration kept as whole seconds at the other version (an integer field), as
    api-gateway keeps a CORS ``maxAge``: on the way there (``to_seconds``) a Go duration at
    ``a.b.c`` becomes its seconds, a fraction of a second dropped; on the way back, seconds
    become Go's spelling of them (``5400`` -> ``"1h30m0s"``)."""
    node, last = parent(obj, path)
    if node is None:
        return
    value = node.get(last)
    if to_seconds and isinstance(value, str):
        parts = list(DURATION_PART.finditer(value))
        if parts and "".join(p.group(0) for p in parts) == value:
            total = sum(float(p.group(1)) * NANOSECONDS[p.group(2)] for p in parts)
            node[last] = int(total // 10**9)
    elif not to_seconds and isinstance(value, int) and not isinstance(value, bool):
        hours, rest = divmod(value, 3600)
        minutes, seconds = divmod(rest, 60)
        spelt = f"{hours}h{minutes}m{seconds}s" if hours else f"{minutes}m{seconds}s"
        node[last] = spelt if hours or minutes else f"{seconds}s"
