"""Fixes a CEL rule's failure proposes, read from the rule's text where it fails (the repair
search judges them with the API server's own validator, so a wrong guess costs one judgement):

- at an object: the optional fields the rule names dropped or drawn (exactly one of, at most
  one of, an implication), its scalars set to the rule's literals, each enum value, true and
  false, or numbers the rule names (a ternary on a discriminator), numbers one either side of
  another (``self.end > self.start``), fields the rule compares with literals set all at once,
  a scalar reached through objects below (``self.targetRef.group == '...'``);
- at a list: cut short, an item left out, the items' named fields set to the rule's literals
  (size, membership, ``all``/``exists``), each literal added;
- at a string: the prefix, suffix or substring the rule asks (``startsWith``, ``endsWith``,
  ``contains``), drawn from its ``matches`` pattern, its case changed.

Written here: reading a rule's literals by pattern is a guess the validator checks, not an
interpreter; no library proposes edits from CEL text.
"""

from __future__ import annotations

import re

from crdharness.gate.evidence import (
    body_paths,
    combinators,
    coverage,
    coverage_objects,
    drawn_bodies,
    item_chains,
    objects,
)
from crdharness.gate.evidence.rule_literals import field_name, string_literals, string_value

LITERAL = re.compile(r"'((?:[^'\\]|\\.)*)'|\"((?:[^\"\\]|\\.)*)\"")
NUMBER = re.compile(r"(?<![\w.'\"])-?\d+(?![\w.])")
SELECTED = re.compile(r"\bself\.([A-Za-z_][A-Za-z0-9_]*)")
CHAIN = re.compile(r"\bself((?:\.[A-Za-z_][A-Za-z0-9_]*){2,})")  # ``self.targetRef.group``
ITEM_FIELD = re.compile(r"\b[a-z]\w*\.([A-Za-z_][A-Za-z0-9_]*)")  # ``s.minutes`` in all()
STRING_CALL = re.compile(
    r"\bself\.(startsWith|endsWith|contains|matches)\(\s*(?:'((?:[^'\\]|\\.)*)'|\"((?:[^\"\\]|\\.)*)\")\s*\)"
)
COMPARED = re.compile(
    r"\bself\.([A-Za-z_][A-Za-z0-9_]*)\s*(?:==\s*('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")"
    r"|in\s*\[([^\]]*)\])"
)
DIGITS = re.compile(r"\d+")
CASE_CALL = re.compile(r"\.(lowerAscii|upperAscii|trim)\(\s*\)")


def filler(node: dict) -> list:
    """A few values ``node`` accepts that hold data: its required fields only for an
    object, one item's worth for a list."""
    node = combinators.alternatives(node)[0]
    if node.get("properties"):
        return [coverage_objects.Builder(node, {}).body()]
    if node.get("type") == "array":
        items = node.get("items") or {}
        return [[v] for v in filler(items)[:1]] if node.get("minItems", 0) <= 1 else []
    if node.get("type") == "object" or isinstance(node.get("additionalProperties"), dict):
        return [{}]
    values, _ = coverage.values_of(node)
    return values[:4]


def _literals(rule: str) -> tuple[list[str], list[int]]:
    strings = string_literals(rule)
    numbers = [int(n) for n in NUMBER.findall(LITERAL.sub("", rule))]
    return strings, list(dict.fromkeys(numbers))


def _compared(rule: str) -> dict[str, list[str]]:
    """The fields a rule compares with string literals (``self.kind in ['A', 'B']``,
    ``self.type == 'A'``) and those literals."""
    found: dict[str, list[str]] = {}
    for name, equal, listed in COMPARED.findall(rule):
        found.setdefault(field_name(name), []).extend(string_literals(equal or listed))
    return found


def _scalars(node: dict, rule: str) -> list:
    """Values to try at a scalar a rule compares: its enum, the rule's literals of its type."""
    node = combinators.alternatives(node)[0]
    strings, numbers = _literals(rule)
    kind = node.get("type")
    if "enum" in node:
        return list(node["enum"])[:8]
    if kind == "boolean":
        return [True, False]
    if kind == "string" or node.get("x-kubernetes-int-or-string"):
        # ``duration(self) > duration('0s')``: a literal's first number one more, too
        beyond = [DIGITS.sub(lambda m: str(int(m.group()) + 1), s, count=1) for s in strings[:3]]
        return list(dict.fromkeys([*strings[:6], *(b for b in beyond if b not in strings)]))
    if kind in ("integer", "number"):
        return [*numbers[:6], *[n + 1 for n in numbers[:3]]]
    return []


def _string_fixes(value: str, rule: str) -> list[str]:
    # ``self == self.lowerAscii()``: the value in that case (or trimmed)
    cased = {"lowerAscii": value.lower(), "upperAscii": value.upper(), "trim": value.strip()}
    fixes = [cased[c] for c in CASE_CALL.findall(rule) if cased[c] != value]
    calls = [(name, string_value(a or b)) for name, a, b in STRING_CALL.findall(rule)]
    if not calls:
        return fixes
    core = value
    prefix = suffix = ""
    for name, argument in calls:
        if name == "startsWith":
            prefix = argument
        elif name == "endsWith":
            suffix = argument
        elif name == "contains" and argument not in core:
            core += argument
        elif name == "matches":
            try:
                drawn = drawn_bodies.values({"type": "string", "pattern": argument}, 3, 0)
            except Exception:  # a pattern Python cannot draw from: no fix
                drawn = []
            return [str(d) for d in drawn if isinstance(d, str)]
    fixes += [prefix + core + suffix, prefix + suffix, prefix + "a" + suffix]
    return list(dict.fromkeys(fixes))


def node_and_value(root: dict, body: dict, segments: list[str]):
    if not segments:
        return root, body
    chain = body_paths.resolve(body, root, segments)
    if not chain:
        return None, None
    container, key, node = chain[-1]
    return node, container[key]


def fixes(root: dict, body: dict, at: list[str], rule: str) -> list[dict | None]:
    """Bodies near ``body`` that may meet ``rule``, failing at ``at`` (its node's segments)."""
    node, value = node_and_value(root, body, at)
    if node is None:
        return []
    node = combinators.alternatives(node)[0]
    found: list[dict | None] = []
    if isinstance(value, dict):
        props = node.get("properties") or {}
        required = set(node.get("required") or [])
        selected = [field_name(n) for n in dict.fromkeys(SELECTED.findall(rule))]
        numbers = [
            value[n]
            for n in selected
            if isinstance(value.get(n), (int, float)) and not isinstance(value.get(n), bool)
        ]
        for name in selected:
            child = props.get(name)
            if child is None or (not at and name in objects.TOP_LEVEL):  # the gate's own
                continue
            if name in value:
                if name not in required:
                    found.append(body_paths.drop(body, [*at, name]))
                found += [body_paths.set(body, [*at, name], v) for v in _scalars(child, rule)]
                own = value[name]
                if isinstance(own, str):
                    found += [
                        body_paths.set(body, [*at, name], v) for v in _string_fixes(own, rule)
                    ]
                elif own in numbers:  # ``self.a <= self.b``, ``self.end > self.start``:
                    # each set to the other's value, or one either side of it
                    others = [n for n in numbers if n != own] or [own]
                    found += [
                        body_paths.set(body, [*at, name], n + step)
                        for n in others
                        for step in (0, 1, -1)
                        if n + step != own
                    ]
                elif isinstance(own, list):  # ``self.refs.all(r, r.kind == 'Dock')``
                    item_node = combinators.alternatives(child)[0]
                    found += _item_fixes(body, [*at, name], item_node, own, rule)
            else:  # drawn, or the rule's literals (``self.method in ['POST', 'PUT']``)
                drawn = [*filler(child)[:2], *_scalars(child, rule)[:2]]
                found += [body_paths.set(body, [*at, name], v) for v in drawn]
        # ``has(self.name) && has(self.namespace)``: every one the rule names, together
        absent = {
            n: filler(props[n])
            for n in selected
            if n in props and n not in value and (at or n not in objects.TOP_LEVEL)
        }
        if len(absent) > 1 and all(absent.values()):
            found.append(
                body_paths.set(body, at, {**value, **{n: v[0] for n, v in absent.items()}})
            )
        # ``self.kind in ['ConfigMap', 'Secret'] && self.group in ['', 'v1']``: each field
        # the rule compares with its own literals set to its first, all at once
        compared = {
            n: v
            for n, v in _compared(rule).items()
            if n in props and (at or n not in objects.TOP_LEVEL)
        }
        if len(compared) > 1:  # a literal that holds data first ('v1' rather than '')
            chosen = {n: next((x for x in v if x), v[0]) for n, v in compared.items()}
            found.append(body_paths.set(body, at, {**value, **chosen}))
        # exactly one of three or more (``[has(self.a), has(self.b), ...].filter(x, x).size()
        # == 1``): dropping one at a time leaves the rule failing; each kept alone
        present = [n for n in selected if n in value and n in props and n not in required]
        if len(present) > 2:
            for kept in present:
                found.append(
                    body_paths.set(
                        body, at, {k: v for k, v in value.items() if k == kept or k not in present}
                    )
                )
        found += _chained(props, body, value, at, rule)
    elif isinstance(value, list):
        found += [
            body_paths.set(body, at, value[:n]) for n in (0, 1, len(value) - 1) if n < len(value)
        ]
        found += [body_paths.drop(body, [*at, str(i)]) for i in range(min(len(value), 4))]
        found += _item_fixes(body, at, node, value, rule)
        items = node.get("items") or {}
        strings = _literals(rule)[0]
        if not isinstance(items.get("properties"), dict):  # a list of scalars: its literals
            found += [body_paths.set(body, at, [s]) for s in strings[:3]]
            # ``self.exists(e, e == 'Failure') == self.exists(e, e == 'Success')``: each added
            found += [body_paths.set(body, at, [*value, s]) for s in strings[:4] if s not in value]
    elif isinstance(value, str):
        found += [body_paths.set(body, at, s) for s in _string_fixes(value, rule)]
        found += [body_paths.set(body, at, v) for v in _scalars(node, rule)]
        # ``self != ''``, ``size(self) > 0``: a value the schema draws that holds data
        found += [body_paths.set(body, at, v) for v in filler(node)[:2] if v != value]
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        found += [body_paths.set(body, at, v) for v in _scalars(node, rule)]
        for divisor in _literals(rule)[1]:
            if divisor > 0 and isinstance(value, int):
                found.append(body_paths.set(body, at, value - value % divisor))
    elif isinstance(value, bool):
        found.append(body_paths.set(body, at, not value))
    return found


def _item_fixes(body: dict, at: list[str], node: dict, value: list, rule: str) -> list[dict | None]:
    """The fields of a list's items a rule names (``self.refs.all(r, r.kind in [...])``) set
    to the rule's literals, in the first item and in every item, or left out of every item."""
    found: list[dict | None] = []
    items = node.get("items") or {}
    for name in dict.fromkeys(map(field_name, ITEM_FIELD.findall(rule.replace("self.", "")))):
        child = (items.get("properties") or {}).get(name)
        if child is None or not value or not isinstance(value[0], dict):
            continue
        for v in _scalars(child, rule)[:4]:
            found.append(body_paths.set(body, [*at, "0", name], v))
            every = [{**i, name: v} if isinstance(i, dict) else i for i in value]
            found.append(body_paths.set(body, at, every))
        if name not in (items.get("required") or []):  # every item without it
            found.append(
                body_paths.set(body, at, [{k: x for k, x in i.items() if k != name} for i in value])
            )
    return found + item_chains.dropped_in_every_item(body, at, node, value, rule)


def _chained(props: dict, body: dict, value: dict, at: list[str], rule: str) -> list[dict | None]:
    """A scalar a rule reaches through objects below its node (``self.targetRef.group ==
    'gateway.networking.k8s.io'``) set to the rule's literals, where those objects exist."""
    found: list[dict | None] = []
    for chain in dict.fromkeys(CHAIN.findall(rule)):
        names = [field_name(n) for n in chain.strip(".").split(".")]
        node: dict | None = {"properties": props}
        held: object = value
        parent: object = None
        absent_from = len(names)  # the first object on the way the body does not have
        for i, name in enumerate(names):
            child = ((node or {}).get("properties") or {}).get(name)
            node = combinators.alternatives(child)[0] if isinstance(child, dict) else None
            parent, held = held, held.get(name) if isinstance(held, dict) else None
            if held is None and isinstance(parent, dict):
                absent_from = min(absent_from, i)
        if node is not None and held is None and isinstance(parent, dict):
            # ``has(self.forProvider.valueSecretRef)``: drawn where the object above it is
            found += [body_paths.set(body, [*at, *names], v) for v in filler(node)[:1]]
        elif node is not None and held is None and absent_from < len(names) - 1:
            # ``self.loadBalancer.type in ['Random']`` without a loadBalancer: one made, with
            # a value the rule names and one it does not (the rule may name what it refuses)
            values = _scalars(node, rule)
            named = [v for v in values if v in _literals(rule)[0]]
            for v in [*named[:1], *[v for v in values if v not in named][:1]]:
                for name in reversed(names[absent_from + 1 :]):
                    v = {name: v}
                found.append(body_paths.set(body, [*at, *names[: absent_from + 1]], v))
        if node is None or held is None or node.get("type") in ("object", "array"):
            continue
        found += [body_paths.set(body, [*at, *names], v) for v in _scalars(node, rule) if v != held]
    return found
