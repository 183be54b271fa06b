"""Where a schema makes one object choose among fields: the nodes whose fields may not all
be set together, and which of their fields take part.

- CEL rules on a node that ask the presence of two or more of its fields (``[has(self.a),
  has(self.b)].filter(x, x).size() == 1``, ``!has(self.a) || !has(self.b)``, a
  discriminator's ternaries ``self.type == 'HTTP' ? has(self.http) : !has(self.http)`` and
  the same for ``tcp``), or of fields of one node below it (``has(self.z.x)``, ``has(self.z.y)``);
- a ``oneOf`` (or ``not``) naming fields, and ``maxProperties`` below the fields declared.

No CEL is evaluated: a rule naming two fields may well allow both (``!has(self.a) ||
has(self.b)``; one made only of ``has``, ``||`` and ``&&`` is known to, and is no choice).
Taken as a choice it only costs an object more (``branch_objects`` puts the
two in different objects); a real choice missed would cost every path of one branch.
"""

from __future__ import annotations

import re

from crdharness.gate.evidence import coverage
from crdharness.gate.evidence.rule_literals import field_name

HAS = re.compile(r"\bhas\(\s*self((?:\.[A-Za-z_][A-Za-z0-9_]*)+)\s*\)")  # has(self.a.b)
# what is left of a rule that only asks some of its fields be there (no negation, no
# comparison) once its ``has`` are taken out: more fields never break it
MONOTONE = re.compile(r"[\s|&()]*")


def named(node: dict) -> dict[str, set[str]]:
    """The choices of ``node``: a node at or below it (its path from ``node``, "" for
    ``node`` itself) -> the fields there that may not all be set together."""
    properties = node.get("properties") or {}
    # the fields the node's rules ask the presence of, by the node above them: ``has(self.a)``
    # and ``has(self.b)`` (a choice at ``node``), ``has(self.z.x)`` and ``has(self.z.y)`` (at z)
    by_node: dict[tuple[str, ...], set[str]] = {}
    for rule in node.get("x-kubernetes-validations") or []:
        text = str(rule.get("rule", ""))
        if MONOTONE.fullmatch(HAS.sub("", text)):
            continue  # ``has(self.a) || has(self.b)``: holds with every field set too
        for chain in HAS.findall(text):
            steps = tuple(field_name(s) for s in chain.split(".")[1:])
            for depth in range(len(steps)):
                by_node.setdefault(steps[:depth], set()).add(steps[depth])
    found = {".".join(where): names for where, names in by_node.items() if len(names) >= 2}
    fields: set[str] = set()
    for combinator in ("oneOf", "not"):
        value = node.get(combinator)
        for branch in value if isinstance(value, list) else [value]:
            if isinstance(branch, dict):
                fields |= set(branch.get("required") or []) | set(branch.get("properties") or {})
    if node.get("maxProperties", len(properties)) < len(properties):
        fields |= set(properties)
    if fields & set(properties):
        found.setdefault("", set()).update(fields & set(properties))
    return found


def of(schema: dict, path: str = "") -> dict[str, set[str]]:
    """Every choice below ``schema`` (a body schema): its node's path (as ``coverage``
    spells paths) -> the fields it names."""
    found: dict[str, set[str]] = {}
    for below, fields in named(schema).items():
        found.setdefault(coverage.join(path, below) if below else path, set()).update(fields)
    for key, child in (schema.get("properties") or {}).items():
        _merge(found, of(child or {}, coverage.join(path, key)))
    if isinstance(schema.get("additionalProperties"), dict):
        _merge(found, of(schema["additionalProperties"], f"{path}.*"))
    if isinstance(schema.get("items"), dict):
        _merge(found, of(schema["items"], f"{path}[]"))
    return found


def _merge(into: dict[str, set[str]], more: dict[str, set[str]]) -> None:
    for path, fields in more.items():
        into.setdefault(path, set()).update(fields)
