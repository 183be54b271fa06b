"""The walk of two structural schemas, node by node from the root: at each node the rules of
``schema_rules`` take what they classify, the children (``required``, ``properties``,
``items``, ``additionalProperties``) are walked in turn, and every key still differing is an
**unclassified** row.
"""

from __future__ import annotations

from collections import Counter

from crdharness.gate.evidence.schema_rules import (
    _MISSING,
    RULES,
    SAME_MEANING,
    TOP_LEVEL,
    UNCLASSIFIED,
    Node,
    Row,
    canon,
    cover,
    short,
    shown,
)


def walk(
    old: dict, new: dict, version: str, where: str, docs: Counter, parts: tuple[str, ...] = ()
) -> list[Row]:
    """Every difference from ``old`` to ``new`` (schema nodes at ``parts``, at spec path
    ``where``) and below them, as rows; documentation-only differences counted in ``docs``."""
    node = Node(old, new, version, parts, where)
    for rule in RULES:
        rule(node, docs)
    rows = node.rows + _children(node, docs)
    rows += unclassified(node.old, node.new, version, parts, where)
    return rows


def unclassified(
    old: dict, new: dict, version: str, parts: tuple[str, ...], where: str
) -> list[Row]:
    """What no rule took: one row per key that still differs."""
    rows = []
    for key in sorted(set(old) | set(new)):
        before, after = old.get(key, _MISSING), new.get(key, _MISSING)
        if canon(before) != canon(after):
            rows.append(
                Row(
                    version,
                    parts,
                    UNCLASSIFIED,
                    f"{key}: {shown(before)} -> {shown(after)} (no rule of the gate judges it)",
                    keys=(f"{where}.{key}",),
                )
            )
    return rows


def _children(node: Node, docs: Counter) -> list[Row]:
    """``required``, ``properties``, ``items`` and ``additionalProperties``: taken here,
    the nodes below walked in turn."""
    rows: list[Row] = []
    parts, where, version = node.parts, node.where, node.version
    top = not parts
    r_old, r_new = node.take("required")
    p_old, p_new = node.take("properties")
    old_props = p_old if isinstance(p_old, dict) else {}
    new_props = p_new if isinstance(p_new, dict) else {}
    old_req = set(r_old) if isinstance(r_old, list) else set()
    new_req = set(r_new) if isinstance(r_new, list) else set()

    def row(kind: str, detail: str, at: tuple[str, ...], o: dict, n: dict, *keys, values=()):
        rows.append(Row(version, at, kind, detail, o, n, values, tuple(keys)))

    for name in sorted(new_req - old_req):
        at = (*parts, name)
        if top and name in TOP_LEVEL:
            row(
                "required changed at the root",
                f"{name} required",
                parts,
                {},
                {},
                f"{where}.required",
            )
            continue
        row(
            "required added",
            f"{_spell(at)} is required",
            at,
            old_props.get(name) or new_props.get(name) or {},
            new_props.get(name) or {},
            f"{where}.required",
        )
    for name in sorted(old_req - new_req):
        at = (*parts, name)
        row("required removed", f"{_spell(at)} no longer required", at, {}, {}, f"{where}.required")
    if canon(r_old) != canon(r_new) and old_req == new_req:
        row(
            SAME_MEANING, "required: the same fields, reordered", parts, {}, {}, f"{where}.required"
        )
    before = len(rows)
    for name in sorted(set(new_props) - set(old_props)):
        at, child = (*parts, name), new_props[name]
        key = f"{where}.properties.{name}"
        if "default" in child:
            row(
                "default added",
                f"new field with default {short(child['default'])}",
                at,
                {},
                child,
                key,
                values=(child["default"],),
            )
        else:
            row("field added", f"{_spell(at)} is new", at, {}, child, key)
    for name, child in old_props.items():
        at, key = (*parts, name), f"{where}.properties.{name}"
        if name not in new_props:
            if node.orig_new.get("x-kubernetes-preserve-unknown-fields") is True:
                row("field no longer declared", "kept as an unknown field", at, child, {}, key)
            else:
                row("field removed", "no longer in the schema: pruned", at, child, {}, key)
            continue
        if isinstance(child, dict) and isinstance(new_props[name], dict):
            rows += walk(child, new_props[name], version, docs=docs, where=key, parts=at)
    rows[before:] = cover(rows[before:], p_old, p_new, f"{where}.properties", version)
    for key, step in (("items", "[]"), ("additionalProperties", "*")):
        before, after = node.take(key)
        if isinstance(before, dict) and isinstance(after, dict):
            rows += walk(before, after, version, f"{where}.{key}", docs, (*parts, step))
        elif canon(before) != canon(after):
            node.old[key], node.new[key] = before, after  # left to ``unclassified``
            if before is _MISSING:
                del node.old[key]
            if after is _MISSING:
                del node.new[key]
    return rows


def _spell(parts: tuple[str, ...]) -> str:
    text = ""
    for part in parts:
        text += part if part == "[]" else (f".{part}" if text else part)
    return text
