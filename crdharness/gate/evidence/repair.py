"""Generated objects made acceptable before they are sent: a bounded search, judged at each
step by the local validator (the API server's own code), for an object near the drawn one
that every rule holds for.

Each round takes the first errors the validator gave and proposes fixes where they point:

- a CEL rule's node: the optional fields the rule names dropped or drawn (exactly one of, at
  most one of, an implication), its scalars set to the rule's literals, each enum value,
  true and false, or numbers the rule names (a ternary on a discriminator); a list cut
  short, an item left out, the items' named fields set to the rule's literals (size,
  membership, ``all``/``exists``); a string given the prefix, suffix or substring the rule
  asks (``startsWith``, ``endsWith``, ``contains``) or drawn from its ``matches`` pattern;
- a schema error: the field drawn again, added where required, left out where optional; a
  ``oneOf`` node kept to one branch's fields; a set's duplicates removed;
- the failing node itself left out where its parent does not require it.

All proposals of a round are judged in one batch and the best kept (schema errors, which
stop CEL rules from running, count most); the search ends when nothing is left, when no
proposal does better, or after ``ROUNDS``. Written here: no library searches JSON objects
against CEL rules; the checks are the API server's, the search is ours.
"""

from __future__ import annotations

import json
import re

from crdharness.gate.evidence import (
    body_paths,
    combinators,
    coverage,
    coverage_objects,
    drawn_bodies,
    objects,
)
from crdharness.gate.evidence.local_validation import CEL, FieldError, LocalValidator
from crdharness.gate.evidence.rule_literals import field_name, string_literals, string_value

ROUNDS = 16  # each keeps the best proposal; an object with many failing items needs many
PROPOSALS = 40  # judged per round at most
ERRORS_PER_ROUND = 3
BLOCKING = 100  # a schema error hides every CEL rule: fixing it first is worth more
LOSS = 1.5  # a drawn leaf path a proposal no longer holds, against one error it fixes
# A field a rule asks for often brings rules of its own (``has(self.ref)`` beside
# ``self.ref.kind == 'Gateway'``): a proposal that meets the rule in hand for at most this many
# other rules' errors is taken when none does better, a few times an object.
SIDEWAYS_ERRORS = 2
SIDEWAYS_STEPS = 4
PASSES = 2  # searches, each followed by pruning
PRUNES = 3  # rounds of leaving out every failing node at once, after the search

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
COMBINATOR_PATH = re.compile(r'"([^"]+)" must validate')


def score(errors: list[FieldError]) -> int:
    return sum(1 if e.source == CEL else BLOCKING for e in errors)


def repaired(
    validator: LocalValidator,
    crd: dict,
    entry: dict,
    body: dict,
    name: str = "gate-repair",
    namespace: str | None = "gate",
) -> tuple[dict | None, list[FieldError]]:
    """``body`` (an object's fields, as ``objects`` draws them), or one near it the local
    validator accepts at ``entry``'s version, as object ``name`` (a schema may constrain
    names); None and the last errors when none was found."""
    version = entry["name"]
    root = (entry.get("schema") or {}).get("openAPIV3Schema") or {}
    # a status is written after the create, through its subresource: judged too
    keep_status = "status" in body and objects.has_status(entry)

    def judged(bodies: list[dict]) -> list[list[FieldError]]:
        sent = [objects.manifest(crd, version, name, namespace, b) for b in bodies]
        return validator.validate(crd, version, sent, keep_status)

    schema = objects.body_schema(entry)
    current = body
    [errors] = judged([current])
    seen = {_key(current)}  # every object judged: a sideways step never goes back
    # The search, then what it left pruned; searched again where pruning let rules run
    # that a schema error had hidden.
    for _ in range(PASSES):
        sideways = SIDEWAYS_STEPS
        for _ in range(ROUNDS):
            if not errors:
                return current, []
            held = coverage.held(schema, objects.intent(current))
            proposed: dict[str, dict] = {}
            for error in errors[:ERRORS_PER_ROUND]:
                for proposal in _proposals(root, current, error):
                    if _key(proposal) not in seen:
                        proposed.setdefault(_key(proposal), proposal)
            if not proposed:
                break
            seen.update(list(proposed)[:PROPOSALS])
            proposals = list(proposed.values())[:PROPOSALS]
            results = judged(proposals)
            better = [i for i in range(len(proposals)) if score(results[i]) < score(errors)]
            if not better and sideways:
                sideways -= 1
                targeted = {(e.field, e.rule, e.message) for e in errors[:ERRORS_PER_ROUND]}
                better = [
                    i
                    for i in range(len(proposals))
                    if score(results[i]) <= score(errors) + SIDEWAYS_ERRORS
                    and targeted - {(e.field, e.rule, e.message) for e in results[i]}
                ]
            if not better:
                break
            # Of those with fewer errors, the one that keeps most of what was drawn: a list cut
            # to nothing meets every rule over it but holds none of its paths any more.
            best = min(
                better,
                key=lambda i: (
                    score(results[i])
                    + LOSS * len(held - coverage.held(schema, objects.intent(proposals[i])))
                ),
            )
            current, errors = proposals[best], results[best]
        # What the search left (an object holding every declared path breaks a hundred rules):
        # every failing node left out at once, or its nearest ancestor its parent does not
        # require, a few times (a schema error hid the rules below it).
        pruned_any = False
        for _ in range(PRUNES):
            if not errors:
                break
            pruned = current
            for error in errors:
                pruned = _pruned(root, pruned, error) or pruned
            [left] = judged([pruned])
            if pruned is current or score(left) >= score(errors):
                break
            current, errors, pruned_any = pruned, left, True
        if not errors or not pruned_any:
            break
    return (current, []) if not errors else (None, errors)


def _pruned(root: dict, body: dict, error: FieldError) -> dict | None:
    """``body`` without the node ``error`` names, or its nearest optional ancestor."""
    where = error.field or next(iter(COMBINATOR_PATH.findall(error.message)), "")
    segments = body_paths.segments(where)
    if error.source == CEL:
        segments = segments[: len(body_paths.segments(error.rule_at))]
    while len(segments) > 1:
        dropped = _optional_dropped(root, body, segments)
        if dropped is not None:
            return dropped
        segments = segments[:-1]
    return None


def _key(body: dict) -> str:
    return json.dumps(body, sort_keys=True, default=str)


# -- values ------------------------------------------------------------------------------


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


# -- proposals ---------------------------------------------------------------------------


def _proposals(root: dict, body: dict, error: FieldError) -> list[dict]:
    if error.source == CEL:
        segments = body_paths.segments(error.field)[: len(body_paths.segments(error.rule_at))]
        found = _rule_fixes(root, body, segments, error.rule)
    else:
        where = error.field or next(iter(COMBINATOR_PATH.findall(error.message)), "")
        segments = body_paths.segments(where)
        found = _schema_fixes(root, body, segments, error)
    found.append(_optional_dropped(root, body, segments))
    return [b for b in found if isinstance(b, dict)]


def _optional_dropped(root: dict, body: dict, segments: list[str]) -> dict | None:
    """``body`` without the value at ``segments``, where its parent does not require it."""
    chain = body_paths.resolve(body, root, segments)
    if not chain:
        return None
    parent_node = chain[-2][2] if len(chain) > 1 else root
    container, key, _ = chain[-1]
    if isinstance(container, dict) and key in (parent_node.get("required") or []):
        return None
    if isinstance(container, list) and len(container) <= parent_node.get("minItems", 0):
        return None
    return body_paths.drop(body, segments)


def _node_and_value(root: dict, body: dict, segments: list[str]):
    if not segments:
        return root, body
    chain = body_paths.resolve(body, root, segments)
    if not chain:
        return None, None
    container, key, node = chain[-1]
    return node, container[key]


def _rule_fixes(root: dict, body: dict, at: list[str], rule: str) -> list[dict | None]:
    node, value = _node_and_value(root, body, at)
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
    return found


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


def _schema_fixes(root: dict, body: dict, at: list[str], error: FieldError) -> list[dict | None]:
    found: list[dict | None] = []
    if error.type == "FieldValueRequired" and at:
        parent_node, _ = _node_and_value(root, body, at[:-1])
        child = ((parent_node or {}).get("properties") or {}).get(at[-1])
        if child is not None:
            found += [body_paths.set(body, at, v) for v in filler(child)[:2]]
        return found
    node, value = _node_and_value(root, body, at)
    if node is None:
        return found
    if error.type == "FieldValueDuplicate" and isinstance(value, list):
        unique: list = []
        for item in value:
            if item not in unique:
                unique.append(item)
        found.append(body_paths.set(body, at, unique))
    if isinstance(value, dict):  # a oneOf / anyOf / not at an object: each branch's fields
        for alternative in combinators.alternatives(node):
            allowed = set(alternative.get("properties") or {})
            kept = {k: v for k, v in value.items() if k in allowed}
            for key in alternative.get("required") or []:
                if key not in kept and key in allowed:
                    kept[key] = next(iter(filler(alternative["properties"][key])), None)
            found.append(body_paths.set(body, at, kept))
    found += [body_paths.set(body, at, v) for v in filler(node)[:3] if v != value]
    return found
