"""Every difference between two structural schemas, node by node, the root included.

Each rule (``RULES``) is given copies of the two nodes at one path: it records a ``Row`` for what it
classifies and takes (removes) the keys it judged from both copies. Whatever still differs
after every rule is an **unclassified** row: nothing passes unseen. Documentation-only keys
(``description``, ``example``, ``externalDocs``, ``title``) are taken and counted, not rows.

Rows name the JSON paths of the CRD spec they account for (``keys``), so a test can hold
every difference between two releases to a row or to the documentation count.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

DOCUMENTATION = ("description", "example", "externalDocs", "title")
# Bounds that only ever allow less when they shrink, and those that allow less when they grow.
UPPER_BOUNDS = ("maxLength", "maxItems", "maxProperties", "maximum")
LOWER_BOUNDS = ("minLength", "minItems", "minProperties", "minimum")
EXCLUSIVE = {"maximum": "exclusiveMaximum", "minimum": "exclusiveMinimum"}
COMBINATORS = ("oneOf", "anyOf", "allOf", "not")
TOP_LEVEL = ("apiVersion", "kind", "metadata")
RULE_KEYS = ("message", "messageExpression", "reason", "fieldPath", "optionalOldSelf")
UNCLASSIFIED = "unclassified"
REPORTED = "reported"  # a decision: shown, not judged
SAME_MEANING = "same meaning"  # false for absent, a list reordered: reported, not judged

# Classes that can only let more in (or change what clients see, not what is accepted):
# decided on the old objects of the CRD written again under the new release, not on
# objects built for them.
LOOSENED = (
    "field added",
    "required removed",
    "enum widened",
    "enum removed",
    "bound loosened",
    "pattern removed",
    "format removed",
    "rule removed",
    "rule details changed",
    "nullable added",
    "unknown fields preserved",
    "field no longer declared",
    "list made atomic",
    "map type changed",
    "required changed at the root",
    *(f"{c} removed" for c in COMBINATORS),
)

_MISSING = object()


@dataclass
class Row:
    """One classified difference (``changes`` makes it a ``Change``)."""

    version: str  # "" for the CRD as a whole
    parts: tuple[str, ...]  # the schema path split ("" path for the CRD as a whole)
    kind: str
    detail: str
    old: dict = field(default_factory=dict)
    new: dict = field(default_factory=dict)
    values: tuple = ()
    keys: tuple[str, ...] = ()  # the spec's JSON paths it accounts for
    decision: str = ""  # decided from the manifests alone (``crd_diff``: reported)
    evidence: str = ""


class Node:
    """Copies of the two nodes at one schema path, which the rules take keys from."""

    def __init__(self, old: dict, new: dict, version: str, parts: tuple[str, ...], where: str):
        self.old, self.new = dict(old), dict(new)  # shallow: rules pop keys
        self.orig_old, self.orig_new = old, new
        self.version, self.parts, self.where = version, parts, where
        self.rows: list[Row] = []

    def take(self, key: str):
        return self.old.pop(key, _MISSING), self.new.pop(key, _MISSING)

    def add(self, kind: str, detail: str, *keys: str, values: tuple = ()) -> None:
        self.rows.append(
            Row(
                self.version,
                self.parts,
                kind,
                detail,
                self.orig_old,
                self.orig_new,
                values,
                tuple(f"{self.where}.{k}" for k in keys),
            )
        )


def _documentation(node: Node, docs: Counter) -> None:
    for key in DOCUMENTATION:
        before, after = node.take(key)
        if canon(before) != canon(after):
            docs[key] += 1


def _type(node: Node, _: Counter) -> None:
    t_old, t_new = node.take("type")
    f_old, f_new = node.take("x-kubernetes-int-or-string")
    before = "int-or-string" if f_old is True else (None if t_old is _MISSING else t_old)
    after = "int-or-string" if f_new is True else (None if t_new is _MISSING else t_new)
    if canon(t_old) != canon(t_new) or canon(f_old) != canon(f_new):
        kind = "type changed" if before != after else "int-or-string changed"
        node.add(
            kind, f"{before or 'none'} -> {after or 'none'}", "type", "x-kubernetes-int-or-string"
        )


def _enum(node: Node, _: Counter) -> None:
    before, after = node.take("enum")
    if canon(before) == canon(after):
        return
    if after is _MISSING:
        node.add("enum removed", "any value allowed now", "enum")
        return
    if before is _MISSING:
        node.add("enum added", f"only {short(after)} allowed now", "enum")
        return
    removed = [v for v in before if v not in after]
    added = [v for v in after if v not in before]
    if removed:
        node.add(
            "enum value removed",
            f"{short(removed)} no longer allowed",
            "enum",
            values=tuple(removed),
        )
    elif added:
        node.add("enum widened", f"{short(added)} allowed too", "enum")
    else:
        node.add(SAME_MEANING, "the same values, reordered", "enum")


def _bounds(node: Node, _: Counter) -> None:
    for bound in UPPER_BOUNDS + LOWER_BOUNDS:
        flag = EXCLUSIVE.get(bound)
        before, after = node.take(bound)
        x_old, x_new = node.take(flag) if flag else (_MISSING, _MISSING)
        if canon(before) == canon(after) and canon(x_old) == canon(x_new):
            continue
        keys = (bound, flag) if flag else (bound,)
        upper = bound in UPPER_BOUNDS
        tighter = after is not _MISSING and (
            before is _MISSING or (after < before if upper else after > before)
        )
        if after is not _MISSING and after == before and x_new is True and x_old is not True:
            node.add("bound tightened", f"{flag}: false -> true", *keys, values=(bound,))
        elif tighter:
            node.add(
                "bound tightened",
                f"{bound}: {shown(before, 'none')} -> {after}",
                *keys,
                values=(bound,),
            )
        else:
            what = f"{bound}: {shown(before, 'none')} -> {shown(after, 'none')}"
            if canon(x_old) != canon(x_new):
                what += f", {flag}: {shown(x_old, 'false')} -> {shown(x_new, 'false')}"
            node.add("bound loosened", what, *keys)
    # an exclusive flag left behind without its bound
    for flag in EXCLUSIVE.values():
        before, after = node.take(flag)
        if canon(before) != canon(after):
            node.add("bound loosened", f"{flag}: {shown(before)} -> {shown(after)}", flag)


def _multiple_of(node: Node, _: Counter) -> None:
    before, after = node.take("multipleOf")
    if canon(before) != canon(after):
        node.add(
            "multipleOf changed", f"{shown(before, 'none')} -> {shown(after, 'none')}", "multipleOf"
        )


def _pattern_and_format(node: Node, _: Counter) -> None:
    for key, changed, dropped in (
        ("pattern", "pattern changed", "pattern removed"),
        ("format", "format changed", "format removed"),
    ):
        before, after = node.take(key)
        if canon(before) == canon(after):
            continue
        if after is _MISSING or after == "":
            node.add(dropped, f"{key} {verbatim(before)} no longer checked", key)
        else:
            node.add(changed, f"{verbatim(before)} -> {verbatim(after)}", key)


def _validations(node: Node, _: Counter) -> None:
    """CEL rules, matched by their expression: added, removed, or the same rule with another
    message, messageExpression, reason, fieldPath or optionalOldSelf."""
    before, after = node.take("x-kubernetes-validations")
    if canon(before) == canon(after):
        return
    key = "x-kubernetes-validations"
    known = len(node.rows)
    old_rules = {r.get("rule"): r for r in _listed(before) if isinstance(r, dict)}
    new_rules = {r.get("rule"): r for r in _listed(after) if isinstance(r, dict)}
    for text, rule in new_rules.items():
        if text not in old_rules:
            node.add("rule added", f"{key}: {text}", key, values=(rule,))
            continue
        changed = [k for k in RULE_KEYS if canon(old_rules[text].get(k)) != canon(rule.get(k))]
        if "optionalOldSelf" in changed:  # a transition rule judged on creates too, or not
            node.add("rule added", f"{key}: {text} (optionalOldSelf changed)", key, values=(rule,))
        elif changed:
            node.add(
                "rule details changed",
                f"{text}: "
                + ", ".join(
                    f"{k}: {shown(old_rules[text].get(k), 'none')} -> {shown(rule.get(k), 'none')}"
                    for k in changed
                ),
                key,
            )
    for text in old_rules:
        if text not in new_rules:
            node.add("rule removed", f"{key}: {text} no longer checked", key)
    if len(node.rows) == known:
        node.add(SAME_MEANING, f"{key}: the same rules, reordered", key)


def _combinators(node: Node, _: Counter) -> None:
    for combinator in COMBINATORS:
        before, after = node.take(combinator)
        if canon(before) == canon(after):
            continue
        if after is _MISSING:
            node.add(f"{combinator} removed", f"{combinator} no longer checked", combinator)
        else:
            node.add(f"{combinator} added", f"{combinator}: {short(after)}", combinator)


def _default(node: Node, _: Counter) -> None:
    before, after = node.take("default")
    if canon(before) == canon(after):
        return
    if before is _MISSING:
        node.add("default added", f"default {short(after)}", "default", values=(after,))
    elif after is _MISSING:  # new objects lose it; stored ones keep it
        node.add("default removed", f"default {short(before)} no longer applied", "default")
    else:
        node.add(
            "default changed",
            f"default {short(before)} -> {short(after)}",
            "default",
            values=(after,),
        )


def _flags(node: Node, _: Counter) -> None:
    """nullable, preserve-unknown-fields, embedded resource: false and absent are one."""
    for key, dropped, added in (
        ("nullable", "nullable dropped", "nullable added"),
        (
            "x-kubernetes-preserve-unknown-fields",
            "unknown fields pruned",
            "unknown fields preserved",
        ),
        ("x-kubernetes-embedded-resource", "embedded resource dropped", "embedded resource added"),
    ):
        before, after = node.take(key)
        if canon(before) == canon(after):
            continue
        if before is True and after is not True:
            node.add(dropped, f"{key}: true -> {shown(after, 'absent')}", key)
        elif after is True and before is not True:
            node.add(added, f"{key}: {shown(before, 'absent')} -> true", key)
        else:  # false <-> absent: the same meaning
            node.add(
                SAME_MEANING, f"{key}: {shown(before, 'absent')} -> {shown(after, 'absent')}", key
            )


def _list_and_map_type(node: Node, _: Counter) -> None:
    t_old, t_new = node.take("x-kubernetes-list-type")
    k_old, k_new = node.take("x-kubernetes-list-map-keys")
    old_list = ("atomic" if t_old is _MISSING else t_old, tuple(() if k_old is _MISSING else k_old))
    new_list = ("atomic" if t_new is _MISSING else t_new, tuple(() if k_new is _MISSING else k_new))
    keys = ("x-kubernetes-list-type", "x-kubernetes-list-map-keys")
    if old_list != new_list:
        detail = (
            f"{old_list[0]} {list(old_list[1]) or ''} -> {new_list[0]} {list(new_list[1]) or ''}"
        )
        kind = "list made atomic" if new_list[0] == "atomic" else "list type changed"
        node.add(kind, " ".join(detail.split()), *keys)
    elif canon(t_old) != canon(t_new) or canon(k_old) != canon(k_new):
        node.add(SAME_MEANING, "x-kubernetes-list-type atomic spelt out or left out", *keys)
    m_old, m_new = node.take("x-kubernetes-map-type")
    if canon(m_old) != canon(m_new):
        node.add(
            "map type changed",
            f"x-kubernetes-map-type: {shown(m_old, 'granular')} -> {shown(m_new, 'granular')}",
            "x-kubernetes-map-type",
        )


RULES: tuple[Callable[[Node, Counter], None], ...] = (
    _documentation,
    _type,
    _enum,
    _bounds,
    _multiple_of,
    _pattern_and_format,
    _validations,
    _combinators,
    _default,
    _flags,
    _list_and_map_type,
)


def _listed(value) -> list:
    return value if isinstance(value, list) else []


def cover(found: list[Row], before, after, key: str, version: str = "") -> list[Row]:
    """Rows of a container (``properties``, ``subresources``, ...) that is absent on one
    side account for the key itself too; absent against empty is a row of its own, the
    same meaning spelt differently."""
    if (before is _MISSING or before is None) == (after is _MISSING or after is None):
        return found
    if not found:
        shown_old, shown_new = shown(before), shown(after)
        row = Row(version, (), SAME_MEANING, f"{key}: {shown_old} -> {shown_new}", keys=(key,))
        row.decision, row.evidence = (
            REPORTED,
            "the same meaning spelt differently: nothing to judge",
        )
        return [row]
    for row in found:
        row.keys += (key,)
    return found


def canon(value) -> str:
    return "<absent>" if value is _MISSING else json.dumps(value, sort_keys=True)


def shown(value, absent: str = "absent") -> str:
    return absent if value is _MISSING or value is None else short(value)


def verbatim(value) -> str:
    """A pattern or format as written, whole, between backquotes (escaped as JSON, a
    regular expression's backslashes double and no longer copy as the pattern)."""
    if value is _MISSING or value is None:
        return "none"
    return f"`{value}`" if isinstance(value, str) else short(value)


def short(value, limit: int = 80) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 3] + "..."
