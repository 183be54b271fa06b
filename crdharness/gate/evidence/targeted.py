"""Objects built to hold what changed (``changes.Change``): valid under the earlier release's
schema at that version, and holding exactly the value, or the absence, the next release
judges differently — the removed enum value (inside ``status.conditions`` if that is where it
is), the field absent that becomes required or gets a default, a value at the old bound, a
string that matches the old pattern but not the new, the field a new rule may forbid.

The rest of each object is the smallest the old schema accepts (or a user's sample at that
version, which also passes rules a schema cannot say). Whether the earlier release accepts
it is the API server's to say: the history phase creates it there, and a change none of
whose objects could be created is "not proven" with the server's reason.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any, Literal

from hypothesis import HealthCheck, Phase, settings

from crdharness.gate.evidence import objects
from crdharness.gate.evidence.changes import ONE_VERSION, Change
from crdharness.gate.evidence.old_values import (
    FILLED_DEPTH,
    NoObject,
    at_old_bound,
    duplicated_items,
    filled,
    minimal,
    old_not_new_pattern,
    present,
)

VARIANTS = 3  # drawn values per rule or combinator change, beside the fewest and most fields
ENUM_VALUES = 5  # enumerated values tried per field below a rule's node
ENUMERATED = 12  # and at most this many in all

RULE_KINDS = ("rule added", "oneOf added", "anyOf added", "allOf added", "not added")
LITERAL = re.compile(r"'([^'\\]*)'|\"([^\"\\]*)\"")  # a CEL string literal
FIELD = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)")  # a field a CEL expression selects
COMBINATIONS = 24  # at most this many objects of the rule's own literals and values


def bases(entry: dict, samples: list[dict]) -> list[dict]:
    """What ``bodies`` builds on: the first two samples, or the smallest object."""
    return [copy.deepcopy(b) for b in (samples or [minimal(objects.body_schema(entry))])[:2]]


def bodies(change: Change, entry: dict, samples: list[dict]) -> list[dict]:
    """Bodies (``objects`` conventions) valid under ``entry``, the earlier release's version,
    that hold ``change``; ``samples`` are the user's at that version (``sample_body``), the
    first two of which serve as the rest of the object. Raises ``NoObject`` when the change
    has no such object."""
    base_schema = objects.body_schema(entry)
    holdings = _holdings(change)
    bases = samples or [minimal(base_schema)]
    built = []
    for holding in holdings:
        for base in bases[:2]:
            body = copy.deepcopy(base)
            _place(body, base_schema, change.parts, holding)
            if body not in built:
                built.append(body)
    if samples and change.kind not in RULE_KINDS:
        # And once on the smallest object: a sample's other fields can break a rule the
        # change's value then meets (gateway-api's filter of another type beside it), and
        # samples must never leave a change with less evidence than none. Not for a rule
        # (its first holding is the base as it is: too thin to clear a rule on).
        try:
            body = copy.deepcopy(minimal(base_schema))
        except NoObject:
            return built
        _place(body, base_schema, change.parts, holdings[0])
        if body not in built:
            built.append(body)
    return built


# Kinds whose objects only need a value present at the path (the same three variants each):
# one version's such changes at paths apart share objects (``shared``). upjet's releases
# change three paths for each field a new storage version reshapes (forProvider,
# initProvider, atProvider): 893 objects in one shard of 88 CRDs, each written some 50 times.
PRESENT_KINDS = ("type changed", "field removed", "storage version changed under None", ONE_VERSION)


def groups(found: list[Change]) -> list[list[Change]]:
    """``found`` in groups whose objects can be shared: ``PRESENT_KINDS`` changes of one CRD
    version, no path at or under another's; any other change alone. In ``found``'s order."""
    grouped: list[list[Change]] = []
    for change in found:
        home = next(
            (
                group
                for group in grouped
                if change.kind in PRESENT_KINDS and all(_apart(change, other) for other in group)
            ),
            None,
        )
        if home is None:
            grouped.append([change])
        else:
            home.append(change)
    return grouped


def _apart(change: Change, other: Change) -> bool:
    """Whether ``other`` may share ``change``'s objects: same CRD, version and top field
    (``status`` is written through its own endpoint: a status the release already refuses
    would leave a spec change unjudged), a kind of ``PRESENT_KINDS``, neither path at or
    under the other."""
    shorter = min(len(change.parts), len(other.parts))
    return (
        other.kind in PRESENT_KINDS
        and (other.crd, other.version) == (change.crd, change.version)
        and change.parts[:1] == other.parts[:1]
        and change.parts[:shorter] != other.parts[:shorter]
    )


def shared(group: list[Change], entry: dict, samples: list[dict]) -> list[tuple[dict, list[dict]]]:
    """For a group of ``groups`` with more than one change: each body holding all of them
    (the same variant of each), with the bodies holding each alone that it stands for —
    written instead where the API server refuses the shared one (one change's value may be
    what it refuses). The variant "beside every other field" is not shared
    (``beside_filled``)."""
    base_schema = objects.body_schema(entry)
    bases = samples or [minimal(base_schema)]
    built: list[tuple[dict, list[dict]]] = []
    variants = [h for h in _holdings(group[0]) if not h.among_filled]
    for variant in range(len(variants)):
        for base in bases[:2]:
            body, alone = copy.deepcopy(base), []
            for change in group:
                holding = [h for h in _holdings(change) if not h.among_filled][variant]
                _place(body, base_schema, change.parts, holding)
                single = copy.deepcopy(base)
                _place(single, base_schema, change.parts, holding)
                alone.append(single)
            if all(body != b for b, _ in built):
                built.append((body, alone))
    return built


def beside_filled(change: Change, entry: dict, samples: list[dict]) -> list[dict]:
    """The bodies of ``bodies`` holding ``change`` beside every other field, which stay one
    per change where the others are ``shared``: the siblings they fill are the other
    changes' paths, deep (an item with every field), where shared objects hold their
    least (``[{}]``); on upjet's CRDs those deep values were what the upgrade lost."""
    base_schema = objects.body_schema(entry)
    built: list[dict] = []
    for holding in (h for h in _holdings(change) if h.among_filled):
        for base in (samples or [minimal(base_schema)])[:2]:
            body = copy.deepcopy(base)
            _place(body, base_schema, change.parts, holding)
            if body not in built:
                built.append(body)
    return built


def _holdings(change: Change) -> list[Holding]:
    """What to put at the change's path."""
    old, new = change.old, change.new
    kind = change.kind
    if kind in ("required added", "default added", "default changed", "default removed"):
        # Absent, beside the fewest other fields and beside every other field (a status
        # that holds something else, as real ones do).
        return [ABSENT, ABSENT_AMONG_FILLED]
    if kind == "enum value removed":
        return [put(v) for v in change.values[:3]]
    if kind == "enum added":
        outside = [v for v in (minimal(old), "gate-unlisted") if v not in new["enum"]]
        return [put(v) for v in outside[:1]] or _fail(
            "every value the old schema allows is in the new enum"
        )
    if kind == "bound tightened":
        return [put(at_old_bound(old, new, change.values[0]))]
    if kind == "pattern changed":
        return [put(old_not_new_pattern(old, new["pattern"]))]
    if kind in ("type changed", "field removed", "storage version changed under None", ONE_VERSION):
        # Beside the fewest other fields, and beside all of them (a rule that wants two
        # fields together, such as host and port).
        # Then with data on the way to it (a webhook may drop an item whose key is empty).
        value = present(old)
        return [
            put(value),
            Holding("put", value, data=True),
            Holding("put", value, among_filled=True),
        ]
    if kind == "format changed":
        return [put(minimal(old))]
    if kind == "nullable dropped":
        return [put(None)]
    if kind == "unknown fields pruned":
        return [Holding("merge", {"gateUnknownField": "kept-by-the-old-release"})]
    if kind in RULE_KINDS:
        rules = [str(r.get("rule", "")) for r in change.values if isinstance(r, dict)]
        return _variants(old, " ".join(rules))
    if kind == "list type changed":
        return [put(duplicated_items(old))]
    raise NoObject(f"no object is built for a change of class {kind!r}")


How = Literal["put", "absent", "keep", "merge", "fill"]


@dataclass(frozen=True)
class Holding:
    """What goes at a change's path. ``how``: ``put`` places ``value`` there; ``absent``
    leaves nothing there (an empty object in a list); ``keep`` keeps the base object's own
    value (built if it has none) and sets each ``below`` field (parts, value) in it; ``merge``
    adds ``value``'s fields over the object's own, ``fill`` beneath them (its own win).
    ``among_filled``: every sibling field is present too (a rule wanting two together)."""

    how: How = "put"
    value: Any = None
    below: tuple[tuple[tuple[str, ...], Any], ...] = ()
    among_filled: bool = False
    data: bool = False  # what is built on the way holds data ("key: x", not the least: "")


def put(value) -> Holding:
    return Holding("put", value)


ABSENT = Holding("absent")
ABSENT_AMONG_FILLED = Holding("absent", among_filled=True)
KEEP = Holding("keep")


def _same(a: Holding, b: Holding) -> bool:
    """Whether two variants count as one. A ``fill`` of a dict counts as that dict ``put``
    whole, as the marker types this replaces compared them, so the objects built stay the
    same (the "most fields" variant put whole is dropped after its fill)."""

    def plain(h: Holding) -> Holding:
        return put(h.value) if h.how == "fill" else h

    return plain(a) == plain(b)


def _fail(why: str):
    raise NoObject(why)


def _variants(old: dict, rule: str = "") -> list[Holding]:
    """For a rule the schema alone cannot judge: the base object's own value (a sample's
    passes the rules a schema cannot say), the same with each value the old schema
    enumerates, with the fields the rule names set to its own literals together, with
    every optional field filled in, the fewest fields, the most, and a few drawn values
    (the API server says which the new rule refuses)."""
    most = filled(old)
    fill = [Holding("fill", most)] if isinstance(most, dict) else []
    found = [
        KEEP,
        *_enumerated(old),
        *_literals(old, rule),
        *_listed_literals(old, rule),
        *fill,
        put(minimal(old)),
        put(most),
    ]
    drawn: list = []  # draw's own text seeds hypothesis (derandomize): kept as it was

    @settings(
        database=None,
        deadline=None,
        max_examples=VARIANTS * 3,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
        derandomize=True,
    )
    def draw(value):
        if len(drawn) < VARIANTS and value not in drawn:
            drawn.append(value)

    from hypothesis import given

    given(objects.strategy(old))(draw)()
    every = found + [put(v) for v in drawn]
    return [v for i, v in enumerate(every) if not any(_same(v, w) for w in every[:i])]


def _literals(node: dict, rule: str) -> list[Holding]:
    """The fields ``rule`` names, set together: strings to each of its literals, enums to
    each of their values, booleans both ways (``self.protocol == 'HTTPS' ?
    self.tls.mode == 'Terminate'`` needs both fields at once)."""
    named = set(FIELD.findall(rule))
    texts = [a or b for a, b in LITERAL.findall(rule)][:ENUM_VALUES]
    choices: list[list[tuple[tuple[str, ...], object]]] = []
    for parts, leaf in _leaves(node):
        if parts[-1] not in named:
            continue
        if "enum" in leaf:
            values = list(leaf["enum"][:ENUM_VALUES])
        elif leaf.get("type") == "boolean":
            values = [True, False]
        elif leaf.get("type") == "string" and texts:
            values = texts
        else:
            continue
        choices.append([(parts, v) for v in values])
    if not choices:
        return []
    import itertools

    combined = itertools.islice(itertools.product(*choices), COMBINATIONS)
    return [Holding("keep", below=tuple(assignment)) for assignment in combined]


def _listed_literals(node: dict, rule: str) -> list[Holding]:
    """For a rule on a list of strings: each of its literals alone in the list, and beside
    another item, first and last. ``!('*' in self && self.size() > 1)`` refuses only a
    ``*`` with company, which an old list may well hold (gateway-api's CORS headers)."""
    items = node.get("items")
    if node.get("type") != "array" or not isinstance(items, dict):
        return []
    if items.get("type") != "string":
        return []
    literals = [a or b for a, b in LITERAL.findall(rule)][:ENUM_VALUES]
    try:
        others = [present(items), minimal(items), "gate-value"]
    except NoObject:
        others = ["gate-value"]
    found: list[Holding] = []
    for literal in literals:
        found.append(put([literal]))
        other = next((o for o in others if isinstance(o, str) and o != literal), None)
        if other is not None:  # the API server says whether the old schema takes it
            found += [put([literal, other]), put([other, literal])]
    return found


def _leaves(node: dict, parts: tuple[str, ...] = (), depth: int = 0):
    """(parts, schema) of every scalar field below ``node``, to ``FILLED_DEPTH``."""
    if parts and node.get("type") not in ("object", "array"):
        yield parts, node
    if depth < FILLED_DEPTH:
        for key, child in (node.get("properties") or {}).items():
            yield from _leaves(child, (*parts, key), depth + 1)
        if isinstance(node.get("items"), dict):
            yield from _leaves(node["items"], (*parts, "[]"), depth + 1)


def _enumerated(node: dict, parts: tuple[str, ...] = (), depth: int = 0) -> list[Holding]:
    """Each value the old schema enumerates below ``node`` (enums, booleans), one at a
    time in the base object: a rule that forbids an old value or flag is met by it."""
    found: list[Holding] = []
    if parts and "enum" in node:
        found += [Holding("keep", below=((parts, v),)) for v in node["enum"][:ENUM_VALUES]]
    elif parts and node.get("type") == "boolean":
        found += [Holding("keep", below=((parts, b),)) for b in (True, False)]
    if depth < FILLED_DEPTH:
        for key, child in (node.get("properties") or {}).items():
            found += _enumerated(child, (*parts, key), depth + 1)
        if isinstance(node.get("items"), dict):
            found += _enumerated(node["items"], (*parts, "[]"), depth + 1)
    return found[:ENUMERATED]


def _place(body: dict, schema: dict, parts: tuple[str, ...], holding: Holding) -> None:
    """Put ``holding`` at ``parts`` of ``body``, building what lies on the way (the
    smallest each node accepts: an object's required fields, one item of a list)."""
    least = present if holding.data else minimal
    target: Any = body
    node = schema
    for i, part in enumerate(parts):
        parent = node
        last = i == len(parts) - 1
        if not _fits(target, part):
            # The path is another version's spelling (a list here, an object there): no
            # object of this version holds it.
            where = ".".join(parts[:i]) or "the object"
            shape = type(target).__name__.replace("dict", "an object").replace("list", "a list")
            raise NoObject(f"{where} is {shape} at this version: no object of it holds this path")
        if part == "[]":
            node = node.get("items") or {}
            key: object = 0
            if not target:
                target.append(least(node))
        else:
            node = (
                node.get("additionalProperties")
                if part == "*"
                else (node.get("properties") or {}).get(part)
            ) or {}
            key = "gate" if part == "*" else part
            if not last and not isinstance(target.get(key), (dict, list)):
                target[key] = least(node)
        if last:
            _hold(target, key, node, parent, holding)
            return
        target = target[key]


def _fits(target: Any, part: str) -> bool:
    """Whether ``target`` is what ``part`` walks into: a list for ``[]``, else an object."""
    return isinstance(target, list if part == "[]" else dict)


def _hold(target, key, node: dict, parent: dict, holding: Holding) -> None:
    """Put ``holding`` at ``target[key]``; ``node`` is its schema, ``parent`` the target's."""
    if holding.among_filled and isinstance(target, dict):
        siblings = filled(parent)
        if isinstance(siblings, dict):
            target.update(_under(siblings, dict(target)))
    if holding.how == "absent":
        if isinstance(target, dict):
            target.pop(key, None)
        else:
            target[key] = {}
    elif holding.how == "keep":
        if not _has(target, key):
            target[key] = minimal(node)
        for sub_parts, value in holding.below:
            _place(target[key], node, sub_parts, put(value))
    elif holding.how in ("merge", "fill"):
        current = target[key] if _has(target, key) and isinstance(target[key], dict) else {}
        merged = holding.how == "merge"
        target[key] = {**current, **holding.value} if merged else _under(holding.value, current)
    else:
        target[key] = copy.deepcopy(holding.value)


def _under(filled, own):
    """``own`` with what ``filled`` has and it lacks (its own values win)."""
    if isinstance(filled, dict) and isinstance(own, dict):
        return {**filled, **{k: _under(filled.get(k), v) for k, v in own.items()}}
    return own if own is not None else filled


def _has(target, key) -> bool:
    return key in target if isinstance(target, dict) else key < len(target)
