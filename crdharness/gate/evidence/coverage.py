"""Every leaf path a version's schema declares, the values that exercise it, and which of
them an object holds: what the round trips' *schema path coverage* counts.

A path is spelt as the gate's reports spell schema paths: ``spec.receivers[].name`` for a
list item's field, ``spec.labels.*`` for a map's values. A leaf is a scalar (string,
number, integer, boolean, enum, int-or-string), or a subtree that declares no fields of
its own (``x-kubernetes-preserve-unknown-fields`` or an embedded resource with no
properties: the keys in it are the user's, not the schema's). Random draws stop adding
optional fields a few levels down (``objects.OPTIONAL_DEPTH``); the objects built from
these leaves (``coverage_objects``) reach every one, at any depth.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from hypothesis import HealthCheck, Phase, find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample, Unsatisfiable

from crdharness.gate import diff, go_regex
from crdharness.gate.evidence import combinators, forbidden, schema_memo
from crdharness.gate.evidence.characters import CHARACTERS

PATTERN_TRIES = 300  # strings drawn from a pattern in search of one the length bounds allow


def search_settings(tries: int) -> settings:
    """Hypothesis settings for finding one value that meets a condition: repeatable
    (derandomized), no database, no deadline (a loaded machine is no failure)."""
    return settings(
        database=None,
        deadline=None,
        max_examples=tries,
        phases=[Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
        derandomize=True,
    )


_FIND = search_settings(PATTERN_TRIES)
TEXT = "gate-value"  # a plain string: readable in a report, non-empty, no pattern to meet
# The second string of a leaf in a list or map: the characters a webhook may join items into
# one text with and split them back on (",", ";", "=", a space). An item holding one must
# come back whole: split in two it is a loss (never a re-spelling). A list takes its values
# as items, so the first coverage object holds it beside the plain one.
SEPARATED = "gate-value,b;c=d e"
# A duration's second value: a fraction of a second beside the whole ones (``FORMATS``), which
# a webhook converting to whole seconds (an integer field) loses. Go's own spelling, so a
# webhook's ``metav1.Duration`` writes it back as sent.
SUB_SECOND = "1h30m0.5s"
UNKNOWN = {"gateUnknown": "kept"}  # what a preserve-unknown subtree holds
EMBEDDED = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "gate"}}
# Strings the API server accepts for the formats it checks (its OpenAPI format registry).
FORMATS = {
    "date-time": "2024-01-02T03:04:05Z",
    "datetime": "2024-01-02T03:04:05Z",
    "date": "2024-01-02",
    "duration": "1h30m",
    "byte": "Z2F0ZQ==",
    "uri": "https://gate.example.com/path",
    "email": "gate@example.com",
    "hostname": "gate.example.com",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "cidr": "192.0.2.0/24",
    "mac": "00:00:5e:00:53:01",
    "uuid": "123e4567-e89b-42d3-a456-426614174000",
    "uuid3": "123e4567-e89b-32d3-a456-426614174000",
    "uuid4": "123e4567-e89b-42d3-a456-426614174000",
    "uuid5": "123e4567-e89b-52d3-a456-426614174000",
    "hexcolor": "#00ff00",
    "rgbcolor": "rgb(0,255,0)",
}


@dataclass
class Leaf:
    """One declared leaf: its path, its schema, the values that exercise it (a value that
    holds data first: a zero or empty one read back absent is only "normalised", so it
    could not show a loss), and why there are none, if there are none."""

    path: str
    schema: dict
    values: list = field(default_factory=list)
    reason: str = ""


def join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def is_leaf(node: dict) -> bool:
    """Whether ``node`` declares no fields, items or map values below itself."""
    if "enum" in node or node.get("x-kubernetes-int-or-string"):
        return True
    if node.get("properties"):
        return False
    if isinstance(node.get("additionalProperties"), dict):
        return False
    return not (node.get("type") == "array" and isinstance(node.get("items"), dict))


def walk(schema: dict, path: str = "", refused: frozenset[tuple[str, ...]] = frozenset()):
    """(path, node) of every leaf below ``schema`` (a body schema: ``objects.body_schema``),
    but those a rule forbids outright (``forbidden``: ``!has(self.claimNames)``, a field a
    version keeps declared but refuses) or keeps empty (``self.size() == 0``): no valid object
    holds data there, none is built."""
    if path and is_leaf(schema):
        if not forbidden.emptied(schema):
            yield path, schema
        return
    refused = refused | forbidden.below(schema)

    def under(step: str) -> frozenset[tuple[str, ...]]:
        return frozenset(r[1:] for r in refused if r[0] == step and len(r) > 1)

    for key, child in (schema.get("properties") or {}).items():
        if (key,) not in refused:
            yield from walk(child or {}, join(path, key), under(key))
    if isinstance(schema.get("additionalProperties"), dict) and ("*",) not in refused:
        yield from walk(schema["additionalProperties"], f"{path}.*", under("*"))
    items = schema.get("items")
    if schema.get("type") == "array" and isinstance(items, dict) and ("[]",) not in refused:
        yield from walk(items, f"{path}[]", under("[]"))


_LEAVES: dict[str, list[Leaf]] = {}  # a schema's content key -> its leaves (pattern searches cost)


def leaves(schema: dict) -> list[Leaf]:
    """Every declared leaf of ``schema`` with the values that exercise it."""
    key = schema_memo.content_key(schema)
    if key not in _LEAVES:
        found = []
        for path, node in walk(schema):
            values, reason = values_of(node)
            found.append(Leaf(path, node, values + _second_texts(path, node, values), reason))
        _LEAVES[key] = found
    return _LEAVES[key]


def _second_texts(path: str, node: dict, values: list) -> list[str]:
    """A string leaf's values beyond its first, each where the schema allows it (length,
    pattern): ``SUB_SECOND`` for a duration (``format: duration``, or a pattern it meets),
    ``SEPARATED`` for a plain string (or one whose pattern it meets) in a list or map (a list
    item, a map value, an item's field: ``a[]``, ``a.*``, ``a[].name``), where a webhook may
    keep several joined in one text (the names of several owners kept in one
    annotation). No enum: its own values are all there is."""
    if node.get("type") != "string" or "enum" in node or node.get("x-kubernetes-int-or-string"):
        return []
    if any(k in node for k in ("allOf", "oneOf", "anyOf", "not")):
        return []  # the combinators' other patterns and values: not weighed here
    low, high = node.get("minLength", 0), node.get("maxLength", float("inf"))

    def allowed(text: str) -> bool:
        if not low <= len(text) <= high or text in values:
            return False
        pattern = node.get("pattern")
        if pattern is None:
            return True
        try:  # the API server's RE2 search (unanchored unless the pattern says so)
            return go_regex.compile(pattern).search(text) is not None
        except re.error:
            return False

    fmt = node.get("format")
    durations = fmt == "duration" or (fmt is None and "pattern" in node)
    texts = [SUB_SECOND] if durations else []
    if fmt is None and ("[]" in path or ".*" in path):  # in a list or map: items joinable
        texts.append(SEPARATED)
    return [t for t in texts if allowed(t)]


def declared(schema: dict) -> list[str]:
    return [leaf.path for leaf in leaves(schema)]


def holds_data(node: dict, value) -> bool:
    """Whether ``value`` at a leaf of schema ``node`` is data a loss of would show: not
    absent, empty or a zero value (those read back absent are normalised); a field that
    can hold only ``{}`` (no fields declared, none preserved) holds it by being there."""
    if _fieldless(node):
        return isinstance(value, dict)
    return not diff.empty(value) and not diff.zero(value)


def held(schema: dict, value, path: str = "") -> set[str]:
    """The declared leaf paths ``value`` (a body, or the value at ``path``) holds data at."""
    return _paths(schema, value, path, leaves_only=True)


def present(schema: dict, value, path: str = "") -> set[str]:
    """Every declared node path (``spec.a``, ``spec.a[]``, ``spec.m.*``) ``value`` has,
    leaves too, whatever they hold."""
    return _paths(schema, value, path, leaves_only=False)


def _paths(schema: dict, value, path: str, leaves_only: bool) -> set[str]:
    if leaves_only and path and is_leaf(schema):
        return {path} if holds_data(schema, value) else set()
    found = {path} if path and not leaves_only else set()
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, child in value.items():
            if key in properties:
                found |= _paths(properties[key] or {}, child, join(path, key), leaves_only)
            elif isinstance(extra, dict):
                found |= _paths(extra, child, f"{path}.*", leaves_only)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            found |= _paths(schema["items"], item, f"{path}[]", leaves_only)
    return found


OPEN = "open"  # a key below x-kubernetes-preserve-unknown-fields or `additionalProperties: true`


def node_at(schema: dict, path: str) -> dict | str | None:
    """The schema node a path (``spec.a[0].b``, ``spec.a[].b``, a map's key as any name)
    names; ``OPEN`` for a key inside a subtree that keeps what it does not declare; None
    where the schema has nothing there (the API server would prune it)."""
    node: dict = schema
    for part in re.findall(r"[^.\[\]]+|\[\d*\]", path):
        if part.startswith("["):
            child = node.get("items")
        elif part in (node.get("properties") or {}):
            child = node["properties"][part]
        elif isinstance(node.get("additionalProperties"), dict):
            child = node["additionalProperties"]
        elif (
            node.get("x-kubernetes-preserve-unknown-fields")
            or node.get("additionalProperties") is True
        ):
            return OPEN
        else:
            return None
        if not isinstance(child, dict):
            return None
        node = child
    return node


def declared_path(schema: dict, path: str) -> bool:
    """Whether a concrete path (``spec.a[0].b``) names a field the schema declares, not a
    key inside a subtree that preserves unknown fields (or metadata)."""
    return isinstance(node_at(schema, path), dict)


def _fieldless(node: dict) -> bool:
    return (
        node.get("type") == "object"
        and not node.get("properties")
        and not node.get("x-kubernetes-preserve-unknown-fields")
        and not node.get("x-kubernetes-embedded-resource")
        and not isinstance(node.get("additionalProperties"), dict)
    )


def values_of(node: dict) -> tuple[list, str]:
    """The values that exercise a leaf (data first, then each other enum value, ``false``,
    ``0``), or none and why."""
    if any(k in node for k in ("allOf", "oneOf", "anyOf", "not")):  # enum ∩ enum, ...
        node = combinators.alternatives(node)[0]
    if "enum" in node:
        enum = [v for v in node["enum"] if v is not None]
        ordered = sorted(enum, key=lambda v: not holds_data(node, v))
        return ordered, "" if ordered else "its enum lists no value but null"
    if node.get("x-kubernetes-int-or-string"):
        number = _numbers(node, integer=True)
        text, why = _string(node)
        found = [v for v in (*number[:1], text) if v is not None]
        return found, "" if found else why
    kind = node.get("type")
    if kind == "boolean":
        return [True, False], ""
    if kind in ("integer", "number"):
        found = _numbers(node, integer=kind == "integer")
        return found, "" if found else f"no {kind} lies within its bounds"
    if kind == "string":
        text, why = _string(node)
        return ([text], "") if text is not None else ([], why)
    if kind == "array":  # no items schema (not structural): one item of any kind
        return [[TEXT]], ""
    if node.get("x-kubernetes-embedded-resource"):
        return [{**EMBEDDED, "data": dict(UNKNOWN)}], ""
    if node.get("x-kubernetes-preserve-unknown-fields"):
        if "type" not in node:
            # Any JSON (a Go ``apiextensionsv1.JSON``): a scalar first, then an object. The
            # API server's ratcheting cannot follow the unknown keys of an object there, so
            # an object holding one is judged changed on a write-back of what was read: an
            # error above it an old object keeps (a field the other version requires)
            # refuses it, and every path beside it goes unheld.
            return [TEXT, dict(UNKNOWN)], ""
        return [dict(UNKNOWN)], ""
    return [{}], ""  # an object declaring no fields: the API server prunes any others


# What the Go types behind a plain ``type: string`` field parse (``metav1.Duration``, a
# number or ``resource.Quantity``, ``metav1.Time``): a webhook decoding the object into them
# refuses TEXT ("time: invalid duration"), which the API server itself accepts.
GO_TEXTS = ("1h", "1", "2024-01-02T03:04:05Z")


def go_texts(node: dict) -> list[str]:
    """The ``GO_TEXTS`` a string leaf with no enum, pattern or format allows (its length
    bounds), to try where a webhook refused its object; none for any other leaf."""
    plain = node.get("type") == "string" and not node.get("x-kubernetes-int-or-string")
    if not plain or any(k in node for k in ("enum", "pattern", "format")):
        return []
    low, high = node.get("minLength", 0), node.get("maxLength", float("inf"))
    return [t for t in GO_TEXTS if low <= len(t) <= high]


def _numbers(node: dict, integer: bool) -> list:
    """A non-zero number within the bounds (and ``multipleOf``), then 0 if allowed."""
    low, high = float("-inf"), float("inf")
    step = 1 if integer else 0.5
    if "minimum" in node:
        low = node["minimum"] + (step if node.get("exclusiveMinimum") else 0)
    if "maximum" in node:
        high = node["maximum"] - (step if node.get("exclusiveMaximum") else 0)
    multiple = node.get("multipleOf")
    picks = [7, 1, 2, -1, low, high] if integer else [1.5, 7, 1, -1.5, low, high]
    if multiple:
        picks = [multiple * n for n in (7, 1, 2, -1)] + picks

    def fits(v) -> bool:
        if not isinstance(v, (int, float)) or v in (float("inf"), float("-inf")):
            return False
        whole = not integer or float(v).is_integer()
        return low <= v <= high and whole and (not multiple or (v / multiple).is_integer())

    data = next((v for v in picks if v != 0 and fits(v)), None)
    found = [int(data) if integer else data] if data is not None else []
    return found + ([0] if fits(0) else [])


def _string(node: dict) -> tuple[str | None, str]:
    """A non-empty string the schema accepts, or None and why."""
    low = node.get("minLength", 0)
    high = node.get("maxLength", max(low, len(TEXT)) + 40)
    if high < 1:
        return None, "only the empty string fits (maxLength 0): no value holds data"
    pattern = node.get("pattern")
    if pattern:  # and every other pattern an allOf adds, none a not forbids
        return _from_pattern(
            pattern,
            low,
            high,
            tuple(node.get(combinators.PATTERNS, ())),
            tuple(node.get(combinators.EXCLUDED_PATTERNS, ())),
        )
    text = FORMATS.get(node.get("format", "") or _rule_format(node), TEXT)
    if not low <= len(text) <= high:
        text = (TEXT * (1 + low // len(TEXT)))[: max(low, min(high, len(TEXT)))]
    return text, ""


# CEL functions whose argument must be a string of a format (Kubernetes' CEL libraries):
# ``url(self).getScheme() in ['http', 'https']`` refuses every other text.
RULE_FORMATS = {
    "url(self)": "uri",
    "isURL(self)": "uri",
    "ip(self)": "ipv4",
    "isIP(self)": "ipv4",
    "cidr(self)": "cidr",
    "isCIDR(self)": "cidr",
}


def _rule_format(node: dict) -> str:
    """The format a rule of ``node`` itself reads its text as ("" if none)."""
    rules = " ".join(str(r.get("rule", "")) for r in node.get("x-kubernetes-validations") or [])
    compact = rules.replace(" ", "")
    return next((fmt for call, fmt in RULE_FORMATS.items() if call in compact), "")


@functools.lru_cache(maxsize=4096)  # a derandomized search: the same answer every time
def _from_pattern(
    pattern: str, low: int, high: int, more: tuple[str, ...] = (), never: tuple[str, ...] = ()
) -> tuple[str | None, str]:
    try:  # the API server's RE2 syntax, as Python spells it
        python = go_regex.compile(pattern).pattern
        also = [go_regex.compile(p) for p in more]
        unlike = [go_regex.compile(p) for p in never]
    except re.error as exc:
        return None, f"no string found for pattern {pattern!r} (not translated to Python: {exc})"
    strings = st.from_regex(python, fullmatch=True, alphabet=CHARACTERS)

    def fits(s: str) -> bool:
        return (
            max(low, 1) <= len(s) <= high
            and all(r.search(s) for r in also)
            and not any(r.search(s) for r in unlike)
        )

    try:
        return find(strings, fits, settings=_FIND), ""
    except (NoSuchExample, Unsatisfiable):
        return None, (
            f"no string found for pattern {pattern!r} of length {max(low, 1)} to {high} "
            f"({PATTERN_TRIES} tried)"
        )


def headline_order(schema: dict, path: str) -> tuple[int, str]:
    """A finding's paths in the order a person reads them: declared fields first, then
    metadata, then keys inside subtrees that preserve unknown fields (random keys drawn
    there must not push a declared field's loss out of the headline)."""
    if path.startswith("metadata."):
        return 1, path
    return (0 if declared_path(schema, path) else 2), path
