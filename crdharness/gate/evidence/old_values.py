"""Values the earlier release's schema accepts, built to order: the smallest (``minimal``),
the smallest holding data (``present``), every optional field filled in (``filled``), and
those a new constraint refuses — beyond a tightened bound, outside a new pattern, items a
list type now forbids. ``targeted`` places them at what changed."""

from __future__ import annotations

import copy
import re

from hypothesis import find
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample, Unsatisfiable

from crdharness.gate import diff, go_regex
from crdharness.gate.evidence import coverage, objects, pattern_inclusion
from crdharness.gate.evidence.schema_memo import by_schema

FILLED_DEPTH = 3  # levels of optional fields the "most fields" variant fills
PATTERN_TRIES = 500  # strings drawn from the old pattern in search of one the new refuses
_FIND = coverage.search_settings(PATTERN_TRIES)


class NoObject(Exception):
    """No object that holds the change could be built (the reason is the message)."""


class Harmless(NoObject):
    """No object can hold the change: it refuses no value the old schema allows, proven
    (the message says how). The change is cleared without one."""


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


def filled(schema: dict, depth: int = 0):
    """A value with every optional field present (to ``FILLED_DEPTH``), leaves minimal."""
    properties = schema.get("properties") or {}
    if schema.get("type") == "object" and properties and depth < FILLED_DEPTH:
        return {k: filled(v, depth + 1) for k, v in properties.items()}
    one_item = schema.get("minItems", 0) <= 1 and schema.get("maxItems", 1) >= 1
    if schema.get("type") == "array" and isinstance(schema.get("items"), dict) and one_item:
        return [filled(schema["items"], depth + 1)]
    return minimal(schema)


def at_old_bound(old: dict, new: dict, bound: str):
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


def old_not_new_pattern(old: dict, pattern: str) -> str:
    """A string valid under the old schema that the new pattern does not match (patterns
    are searched for, not anchored, as the API server applies them). Raises ``Harmless``
    where the new pattern matches every string the old one does (``pattern_inclusion``):
    no search could find one then, and "not proven" would hold back a relaxed pattern."""
    before = str(old.get("pattern", ""))  # none: every string
    inclusion = pattern_inclusion.compare(before, pattern)
    if inclusion.included:
        raise Harmless(
            f"every string the old pattern `{before}` matches, the new `{pattern}` matches "
            f"too (the two decided as automata with Go's RE2 meaning, {inclusion.why}): no "
            "value the old schema allows is refused by it"
        )
    if inclusion.witness is not None and _within_lengths(old, inclusion.witness):
        return inclusion.witness  # a shortest such string; the server judges the rest
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
            f"no string valid under the old schema and not matching `{pattern}` was found "
            f"({PATTERN_TRIES} tried; {inclusion.why})"
        ) from None


def _within_lengths(old: dict, value: str) -> bool:
    """Whether ``value`` meets what else the old schema says of a string that a witness of
    the patterns alone may not: its lengths; with an enum or a format, the search decides."""
    if "enum" in old or "format" in old:
        return False
    return old.get("minLength", 0) <= len(value) <= old.get("maxLength", len(value))


def duplicated_items(old: dict) -> list:
    item = minimal(old.get("items") or {})
    return [item, copy.deepcopy(item)]
