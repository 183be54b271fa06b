"""A structural schema's ``allOf``, ``oneOf``, ``anyOf`` and ``not``, turned into plain nodes
the object generator draws from.

A structural schema keeps its types, properties and items outside the combinators: inside
them are only value validations (enum, bounds, pattern, required, ...). So

- ``allOf`` folds into the node: enum ∩ enum, the tighter of two bounds, every ``required``,
  each branch's constraints on a property folded into that property;
- ``oneOf`` gives one node per branch: that branch folded in, and each other branch that only
  requires fields made false by leaving one of its fields out;
- ``anyOf`` gives one node per branch, that branch folded in;
- ``not`` is avoided where it says something simple: the fields of ``not: {required: ...}``
  (or of an ``anyOf`` of those) are left out, the values of ``not: {enum: ...}`` and the
  strings of ``not: {pattern: ...}`` are never drawn (``EXCLUDED``, ``EXCLUDED_PATTERNS``).

What is not understood here is drawn as if absent; the local validator (the API server's own
code) still judges every object before it is sent. Written here: JSON Schema libraries
resolve these for whole documents, not for the structural nodes hypothesis draws from.
"""

from __future__ import annotations

import copy

LOWER = ("minimum", "minLength", "minItems", "minProperties")
UPPER = ("maximum", "maxLength", "maxItems", "maxProperties")
EXCLUSIVE = {"minimum": "exclusiveMinimum", "maximum": "exclusiveMaximum"}
EXCLUDED = "x-gate-excluded"  # values a ``not`` forbids
EXCLUDED_PATTERNS = "x-gate-excluded-patterns"  # patterns a ``not`` forbids
PATTERNS = "x-gate-patterns"  # more patterns every string must match (allOf)
MOST_ALTERNATIVES = 8


def folded(schema: dict) -> dict:
    """``schema`` with its ``allOf`` folded in and its simple ``not`` turned into what to
    avoid (a copy; ``schema`` itself is left as it is)."""
    if not any(k in schema for k in ("allOf", "not")):
        return schema
    node = {k: v for k, v in schema.items() if k not in ("allOf", "not")}
    for branch in schema.get("allOf") or []:
        if isinstance(branch, dict):
            node = merged(node, folded(branch))
    if isinstance(schema.get("not"), dict):
        node = _avoiding(node, schema["not"])
    return node


def merged(node: dict, branch: dict) -> dict:
    """Both ``node``'s and ``branch``'s constraints (``branch`` holds value validations)."""
    out = dict(node)
    for key, value in branch.items():
        if key not in out:
            out[key] = copy.deepcopy(value)
        elif key == "enum":
            out[key] = [v for v in out[key] if v in value]
        elif key == "required":
            out[key] = list(dict.fromkeys([*out[key], *value]))
        elif key in LOWER or key in UPPER:
            tighter = value > out[key] if key in LOWER else value < out[key]
            if tighter or (value == out[key] and branch.get(EXCLUSIVE.get(key, ""))):
                out[key] = value
                if key in EXCLUSIVE:
                    out.pop(EXCLUSIVE[key], None)
                    if branch.get(EXCLUSIVE[key]):
                        out[EXCLUSIVE[key]] = True
        elif key == "pattern" and value != out[key]:
            out[PATTERNS] = [*out.get(PATTERNS, []), value]
        elif key == "properties" and isinstance(value, dict):
            children = dict(out[key])
            for name, child in value.items():
                if isinstance(child, dict):
                    children[name] = merged(children.get(name, {}), folded(child))
            out[key] = children
        elif key == "items" and isinstance(value, dict) and isinstance(out[key], dict):
            out[key] = merged(out[key], folded(value))
        elif key in ("oneOf", "anyOf") and isinstance(value, list):
            out[key] = [*out[key], *value]  # judged on the whole node: both sets of branches
    return out


def _required_only(branch) -> list[str] | None:
    """The fields a branch requires, when requiring them is all it says."""
    if isinstance(branch, dict) and set(branch) == {"required"}:
        return list(branch["required"])
    return None


def _without(node: dict, fields: set[str]) -> dict:
    """``node`` whose ``fields`` are never drawn (nor required)."""
    out = dict(node)
    if out.get("properties"):
        out["properties"] = {k: v for k, v in out["properties"].items() if k not in fields}
    if out.get("required"):
        out["required"] = [k for k in out["required"] if k not in fields]
    return out


def _avoiding(node: dict, negated: dict) -> dict:
    required = _required_only(negated)
    if required:  # not all of them: one left out is enough
        return _without(node, {required[-1]})
    branches = negated.get("anyOf") or negated.get("oneOf") or []
    fields = [_required_only(b) for b in branches]
    if branches and all(fields):
        return _without(node, {f for group in fields if group for f in group})
    out = dict(node)
    if "enum" in negated:
        out[EXCLUDED] = [*out.get(EXCLUDED, []), *negated["enum"]]
    if "pattern" in negated:
        out[EXCLUDED_PATTERNS] = [*out.get(EXCLUDED_PATTERNS, []), negated["pattern"]]
    return out


def alternatives(schema: dict) -> list[dict]:
    """The plain nodes (no combinator left) that together draw what ``schema`` allows: one
    per ``oneOf`` branch times one per ``anyOf`` branch (at most ``MOST_ALTERNATIVES``)."""
    node = dict(folded(schema))  # a copy: the user's schema keeps its combinators
    one_of = [b for b in node.pop("oneOf", None) or [] if isinstance(b, dict)]
    any_of = [b for b in node.pop("anyOf", None) or [] if isinstance(b, dict)]
    found = [node]
    if one_of:
        found = []
        for i, branch in enumerate(one_of):
            chosen = merged(node, folded(branch))
            mine = set(branch.get("required") or [])
            for j, other in enumerate(one_of):
                fields = _required_only(other)
                if j != i and fields and not set(fields) <= mine:
                    chosen = _without(chosen, {next(f for f in fields if f not in mine)})
            found.append(chosen)
    if any_of:
        found = [merged(n, folded(b)) for n in found for b in any_of]
    return [n for n in found if n.get("enum", [None])][:MOST_ALTERNATIVES] or [node]
