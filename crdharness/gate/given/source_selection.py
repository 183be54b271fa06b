"""Which of a source cluster's objects the gate replays, and at which version: every object
by default; under ``max_objects``, one of each shape first (the versions its writers used,
the fields present), then the others in the order listed."""

from __future__ import annotations

import json

from crdharness.gate import diff


def written_at(item: dict, served: list[str]) -> str:
    """The version an object was last written at: its newest managedFields entry's, where
    that version is served; else the version it was listed at."""
    group_version = item["apiVersion"]
    entries = [e for e in (item["metadata"].get("managedFields") or []) if e.get("apiVersion")]
    entries.sort(key=lambda e: e.get("time") or "")
    for entry in reversed(entries):
        version = entry["apiVersion"].rpartition("/")[2]
        if version in served:
            return version
    return group_version.rpartition("/")[2]


def present(obj, path: str = "") -> set[str]:
    """Every field path ``obj`` holds, for telling shapes apart: its scalars, and its empty
    values marked as such (``spec.route={}``, ``spec.ports=[]``, ``spec.mode=""``). A field
    present but empty is present — a schema may refuse ``route: {}`` — and neither absent
    nor the same as one holding a value."""
    if isinstance(obj, dict) and obj:
        return {p for key, value in obj.items() for p in present(value, diff.join(path, key))}
    if isinstance(obj, list) and obj:
        return {p for i, value in enumerate(obj) for p in present(value, diff.join(path, i))}
    if obj in ({}, [], "") and path:
        return {f"{path}={json.dumps(obj)}"}
    return {path} if path else set()


def shape(item: dict) -> tuple:
    """What an object is, for choosing: the versions its writers used and the fields set."""
    writers = {e.get("apiVersion", "") for e in item["metadata"].get("managedFields") or []}
    content = {k: v for k, v in item.items() if k != "metadata"}
    return tuple(sorted(writers)), frozenset(diff.schema_path(p) for p in present(content))


def choose(items: list[dict], most: int | None) -> list[dict]:
    """Every item, or at most ``most`` of them: first one of each shape (the versions written
    at and the set of fields present), then the others in the order listed."""
    if most is None or len(items) <= most:
        return items
    first: dict[tuple, dict] = {}
    for item in items:
        first.setdefault(shape(item), item)
    chosen = list(first.values())[:most]
    taken = {id(item) for item in chosen}
    chosen += [item for item in items if id(item) not in taken][: most - len(chosen)]
    return chosen
