"""Editing a drawn body at a path as the validator names it (``spec.items[2].name``): the
repair search's one way of changing an object, always on a copy."""

from __future__ import annotations

import re

from crdharness.gate import json_values

SEGMENT = re.compile(r"\.?([^.\[\]]+)|\[([^\]]*)\]")


def segments(path: str) -> list[str]:
    return [a or b for a, b in SEGMENT.findall(path)]


def resolve(body: dict, root: dict, segments: list[str]):
    """[(container, key, schema)] along ``segments`` (a list index as int), or None where
    the body holds no such value."""
    chain = []
    value, node = body, root
    for part in segments:
        if isinstance(value, list):
            try:
                key: str | int = int(part)
            except ValueError:
                return None
            child_node = node.get("items") or {}
        elif isinstance(value, dict):
            key = part
            props = node.get("properties") or {}
            child_node = props.get(part) or (
                node["additionalProperties"]
                if isinstance(node.get("additionalProperties"), dict)
                else {}
            )
        else:
            return None
        try:
            child = value[key]
        except (KeyError, IndexError, TypeError):
            return None
        chain.append((value, key, child_node))
        value, node = child, child_node
    return chain


def at(body: dict, segments: list[str], change) -> dict | None:
    """A copy of ``body`` with ``change(container, key)`` done at ``segments``."""
    copied = json_values.copied(body)
    target = copied
    for part in segments[:-1]:
        try:
            target = target[int(part)] if isinstance(target, list) else target[part]
        except (KeyError, IndexError, ValueError, TypeError):
            return None
    last: str | int = segments[-1]
    if isinstance(target, list):
        try:
            last = int(last)
        except ValueError:
            return None
    change(target, last)
    return copied


def set(body: dict, segments: list[str], value) -> dict | None:
    def put(container, key):
        container[key] = json_values.copied(value)

    return at(body, segments, put) if segments else value


def drop(body: dict, segments: list[str]) -> dict | None:
    def remove(container, key):
        if isinstance(container, dict):
            container.pop(key, None)
        elif isinstance(container, list) and 0 <= key < len(container):
            del container[key]

    return at(body, segments, remove) if segments else None
