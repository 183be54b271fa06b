"""The paths below a node that a CEL rule forbids outright: no valid object holds them, so
none is built for them and they are not counted among the paths to hold.

Only shapes that forbid a path whatever else the object holds are read (anything else is
left to the objects, which try):

- ``!has(self.a.b)``;
- such a rule behind guards on the path itself or an object above it: ``has(self.a) ?
  !has(self.a.b) : true``, ``!has(self.a) || !has(self.a.b)`` (nested as deep as wanted);
- a list's items emptied: ``!has(self.a) || size(self.a) == 0`` (``self.a.size() == 0``);
- the same for every item of a list: ``self.all(r, !has(r.cost) || !has(r.cost.response))``;
- a field that asks for a value another rule forbids: ``self.type == 'ReplaceFullPath'``
  beside ``has(self.x) ? self.type == 'ReplacePrefixMatch' : true``;
- a leaf whose own rule keeps it empty: ``self.size() == 0`` (``emptied``).

Written here: a handful of regular shapes, not a CEL evaluator (the local validator judges
objects; this only says which paths no object needs to be tried for).
"""

from __future__ import annotations

import re

from crdharness.gate.evidence.rule_literals import field_name

Path = tuple[str, ...]  # property names below the node; "[]" for a list's items

CHAIN = r"([A-Za-z_][A-Za-z0-9_]*)((?:\.[A-Za-z_][A-Za-z0-9_]*)+)"  # var.a.b
HAS = re.compile(rf"!\s*has\(\s*{CHAIN}\s*\)")
EMPTY = re.compile(rf"(?:size\(\s*{CHAIN}\s*\)|{CHAIN}\.size\(\s*\))\s*==\s*0")
GUARD = re.compile(rf"has\(\s*{CHAIN}\s*\)")
ALL = re.compile(r"self\.all\(\s*([A-Za-z_]\w*)\s*,(.*)\)")
PINNED = re.compile(r"self\.([A-Za-z_]\w*)\s*==\s*'([^'\\]*)'")


def below(node: dict) -> set[Path]:
    """Every path below ``node`` (relative to it) one of its rules forbids outright."""
    found: set[Path] = set()
    pinned: dict[str, str] = {}
    rules = [str(r.get("rule", "")) for r in node.get("x-kubernetes-validations") or []]
    for rule in rules:
        found |= _forbids(rule, "self")
        each = ALL.fullmatch(_bare(rule))
        if each:
            found |= {("[]", *path) for path in _forbids(each.group(2), each.group(1))}
        pin = PINNED.fullmatch(_bare(rule))
        if pin:
            pinned[pin.group(1)] = pin.group(2)
    for rule in rules:  # ``has(self.x) ? self.type == 'B' : true`` with type pinned to 'A'
        ternary = _split_ternary(_bare(rule))
        if not ternary or _bare(ternary[2]) != "true":
            continue
        on, asks = _guarded(ternary[0], "self", negated=False), PINNED.fullmatch(_bare(ternary[1]))
        if (
            on
            and len(on) == 1
            and asks
            and pinned.get(asks.group(1), asks.group(2)) != asks.group(2)
        ):
            found.add(on)
    return found


SELF_EMPTY = re.compile(
    r"(?:size\(\s*self\s*\)|self\.size\(\s*\))\s*==\s*0|self\s*==\s*(?:''|\"\")"
)


def emptied(node: dict) -> bool:
    """Whether a rule of ``node`` itself lets it hold nothing but an empty value
    (``self.size() == 0``: istio keeps a targetRef's ``namespace`` declared and refuses any
    other, "cross namespace referencing is not currently supported")."""
    rules = [str(r.get("rule", "")) for r in node.get("x-kubernetes-validations") or []]
    return any(SELF_EMPTY.fullmatch(_bare(rule)) for rule in rules)


def _forbids(rule: str, var: str) -> set[Path]:
    rule = _bare(rule)
    match = HAS.fullmatch(rule)
    if match and match.group(1) == var:
        return {_steps(match.group(2))}
    # ``has(self.a) ? <forbids self.a.b> : true`` and ``!has(self.a) || <forbids self.a.b>``:
    # with ``a`` absent, ``a.b`` is too
    ternary = _split_ternary(rule)
    terms = _split(rule, "||")
    if ternary and _bare(ternary[2]) == "true":
        on, rest = _guarded(ternary[0], var, negated=False), ternary[1]
    elif len(terms) == 2:
        on, rest = _guarded(terms[0], var, negated=True), terms[1]
    else:
        return set()
    if on is None:
        return set()
    emptied = EMPTY.fullmatch(_bare(rest))
    if emptied:  # ``!has(self.a) || size(self.a) == 0``: no item of ``a``
        name, chain = emptied.group(1) or emptied.group(3), emptied.group(2) or emptied.group(4)
        return {(*on, "[]")} if name == var and _steps(chain) == on else set()
    return {path for path in _forbids(rest, var) if path[: len(on)] == on}


def _guarded(guard: str, var: str, negated: bool) -> Path | None:
    """The path ``guard`` asks the presence (``has(self.a)``) or, ``negated``, the absence
    of (``!has(self.a)``)."""
    guard = _bare(guard)
    if guard.startswith("!") != negated:
        return None
    match = GUARD.fullmatch(_bare(guard.lstrip("!")))
    return _steps(match.group(2)) if match and match.group(1) == var else None


def _split_ternary(rule: str) -> tuple[str, str, str] | None:
    depth, question = 0, -1
    for i, char in enumerate(rule):
        depth += (char in "([") - (char in ")]")
        if depth == 0 and char == "?" and question < 0:
            question = i
        elif depth == 0 and char == ":" and question >= 0:
            return rule[:question], rule[question + 1 : i], rule[i + 1 :]
    return None


def _split(rule: str, operator: str) -> list[str]:
    """``rule``'s terms joined by ``operator`` outside any brackets."""
    terms, depth, start, i = [], 0, 0, 0
    while i < len(rule):
        char = rule[i]
        depth += (char in "([") - (char in ")]")
        if depth == 0 and rule.startswith(operator, i):
            terms.append(rule[start:i])
            start = i = i + len(operator)
            continue
        i += 1
    return [*terms, rule[start:]]


def _bare(rule: str) -> str:
    """``rule`` without the brackets around all of it."""
    rule = rule.strip()
    while rule.startswith("(") and rule.endswith(")") and _closes_at_end(rule):
        rule = rule[1:-1].strip()
    return rule


def _closes_at_end(rule: str) -> bool:
    depth = 0
    for i, char in enumerate(rule):
        depth += (char == "(") - (char == ")")
        if depth == 0 and i < len(rule) - 1:
            return False
    return True


def _steps(chain: str) -> Path:
    return tuple(field_name(name) for name in chain.strip(".").split("."))
