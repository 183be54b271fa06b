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

from hypothesis import HealthCheck, Phase, find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample, Unsatisfiable

from crdharness.gate import diff, go_regex
from crdharness.gate.evidence import coverage, objects
from crdharness.gate.evidence.changes import ONE_VERSION, Change
from crdharness.gate.evidence.schema_memo import by_schema

VARIANTS = 3  # drawn values per rule or combinator change, beside the fewest and most fields
ENUM_VALUES = 5  # enumerated values tried per field below a rule's node
ENUMERATED = 12  # and at most this many in all
FILLED_DEPTH = 3  # levels of optional fields the "most fields" variant fills
PATTERN_TRIES = 500  # strings drawn from the old pattern in search of one the new refuses
_FIND = coverage.search_settings(PATTERN_TRIES)

RULE_KINDS = ("rule added", "oneOf added", "anyOf added", "allOf added", "not added")
LITERAL = re.compile(r"'([^'\\]*)'|\"([^\"\\]*)\"")  # a CEL string literal
FIELD = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)")  # a field a CEL expression selects
COMBINATIONS = 24  # at most this many objects of the rule's own literals and values


class NoObject(Exception):
    """No object that holds the change could be built (the reason is the message)."""


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
        return [put(_at_old_bound(old, new, change.values[0]))]
    if kind == "pattern changed":
        return [put(_old_not_new_pattern(old, new["pattern"]))]
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
        return [put(_duplicated_items(old))]
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


# Searched once per distinct schema (``schema_memo``): the search is repeatable (derandomized),
# and reads no description.
@by_schema(remembered=(NoObject,), descriptions_matter=False)
def minimal(schema: dict):
    """The smallest value ``schema`` accepts, as hypothesis shrinks it: required fields only,
    empty strings, zeros, the first enum value."""
    try:
        return find(objects.strategy(schema), lambda _: True, settings=_FIND)
    except (NoSuchExample, Unsatisfiable) as exc:
        raise NoObject(f"no value satisfies the old schema here ({exc})") from None


@by_schema(remembered=(NoObject,), descriptions_matter=False)
def present(schema: dict):
    """The smallest value ``schema`` accepts that holds data (not "", [] or {}, and no Go
    zero value ``false``, ``0`` anywhere in it): what is lost must be something, or losing
    it is only a normalisation."""

    def holds_data(value) -> bool:
        return not diff.empty(value) and not any(diff.zero(v) for v in diff.leaves(value).values())

    try:
        return find(objects.strategy(schema), holds_data, settings=_FIND)
    except (NoSuchExample, Unsatisfiable):
        return minimal(schema)


def _filled(schema: dict, depth: int = 0):
    """A value with every optional field present (to ``FILLED_DEPTH``), leaves minimal."""
    properties = schema.get("properties") or {}
    if schema.get("type") == "object" and properties and depth < FILLED_DEPTH:
        return {k: _filled(v, depth + 1) for k, v in properties.items()}
    one_item = schema.get("minItems", 0) <= 1 and schema.get("maxItems", 1) >= 1
    if schema.get("type") == "array" and isinstance(schema.get("items"), dict) and one_item:
        return [_filled(schema["items"], depth + 1)]
    return minimal(schema)


def _variants(old: dict, rule: str = "") -> list[Holding]:
    """For a rule the schema alone cannot judge: the base object's own value (a sample's
    passes the rules a schema cannot say), the same with each value the old schema
    enumerates, with the fields the rule names set to its own literals together, with
    every optional field filled in, the fewest fields, the most, and a few drawn values
    (the API server says which the new rule refuses)."""
    filled = _filled(old)
    fill = [Holding("fill", filled)] if isinstance(filled, dict) else []
    found = [KEEP, *_enumerated(old), *_literals(old, rule), *fill, put(minimal(old)), put(filled)]
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


def _at_old_bound(old: dict, new: dict, bound: str):
    """A value the old schema accepts and the new bound refuses."""
    forced = dict(old)
    if bound in ("maximum", "minimum"):
        step = 1 if old.get("type") == "integer" else 0.5
        exclusive = new.get("exclusive" + bound.title())
        beyond = step if bound == "maximum" else -step
        value = new[bound] if exclusive else new[bound] + beyond
        forced.update(minimum=value, maximum=value, exclusiveMinimum=False, exclusiveMaximum=False)
    else:  # a size: maxLength, minItems, ... forced to one just past the new bound
        measure = bound[3:]  # Length, Items, Properties
        lowest = old.get(f"min{measure}", 0)
        n = new[bound] + 1 if bound.startswith("max") else max(new[bound] - 1, lowest)
        forced.update({f"min{measure}": n, f"max{measure}": n})
    if bound.endswith("Properties") and not isinstance(old.get("additionalProperties"), dict):
        raise NoObject(f"{bound} is built for maps only (this object declares its fields)")
    if not _within_old(old, forced):
        raise NoObject(f"the old schema allows no value beyond the new {bound} ({new[bound]})")
    value = minimal(forced)
    if not _beyond(value, new, bound):
        raise NoObject(f"no value valid under the old schema breaks the new {bound} was built")
    return value


def _beyond(value, new: dict, bound: str) -> bool:
    """Whether ``value`` breaks the new schema's ``bound`` (so a pass is worth something)."""
    if bound in ("maximum", "minimum"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        limit, exclusive = new[bound], new.get("exclusive" + bound.title())
        if bound == "maximum":
            return value > limit or (bool(exclusive) and value == limit)
        return value < limit or (bool(exclusive) and value == limit)
    size = len(value) if isinstance(value, (str, list, dict)) else None
    if size is None:
        return False
    return size > new[bound] if bound.startswith("max") else size < new[bound]


def _within_old(old: dict, forced: dict) -> bool:
    """Whether the forced bounds still lie inside the old schema's own."""
    for upper, lower in (
        ("maxLength", "minLength"),
        ("maxItems", "minItems"),
        ("maxProperties", "minProperties"),
        ("maximum", "minimum"),
    ):
        if upper in old and forced.get(lower, float("-inf")) > old[upper]:
            return False
        if lower in old and forced.get(upper, float("inf")) < old[lower]:
            return False
    return True


def _old_not_new_pattern(old: dict, pattern: str) -> str:
    """A string valid under the old schema that the new pattern does not match (patterns
    are searched for, not anchored, as the API server applies them)."""
    try:
        compiled = go_regex.compile(pattern)  # the API server's RE2 syntax
    except re.error as exc:
        raise NoObject(f"the new pattern {pattern!r} has no Python spelling ({exc})") from None
    strings = objects.strategy({k: v for k, v in old.items() if k != "enum"})
    if "enum" in old:
        strings = st.sampled_from(old["enum"])
    try:
        return find(
            strings, lambda s: isinstance(s, str) and not compiled.search(s), settings=_FIND
        )
    except (NoSuchExample, Unsatisfiable):
        raise NoObject(
            f"no string valid under the old schema and not matching {pattern!r} was found "
            f"({PATTERN_TRIES} tried)"
        ) from None


def _duplicated_items(old: dict) -> list:
    item = minimal(old.get("items") or {})
    return [item, copy.deepcopy(item)]


def _place(body: dict, schema: dict, parts: tuple[str, ...], holding: Holding) -> None:
    """Put ``holding`` at ``parts`` of ``body``, building what lies on the way (the
    smallest each node accepts: an object's required fields, one item of a list)."""
    least = present if holding.data else minimal
    target: Any = body
    node = schema
    for i, part in enumerate(parts):
        parent = node
        last = i == len(parts) - 1
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


def _hold(target, key, node: dict, parent: dict, holding: Holding) -> None:
    """Put ``holding`` at ``target[key]``; ``node`` is its schema, ``parent`` the target's."""
    if holding.among_filled and isinstance(target, dict):
        filled = _filled(parent)
        if isinstance(filled, dict):
            target.update(_under(filled, dict(target)))
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
