"""What changed between two JSON objects, as paths a person can read: ``status.conditions``,
``spec.ports[1].name``. Used to report what a round trip through another version lost."""

from __future__ import annotations

import re
from dataclasses import dataclass

from crdharness.gate import json_values

# Written by the API server on every write, or by the gate itself: never a finding.
SERVER_METADATA = (
    "metadata.resourceVersion",
    "metadata.generation",
    "metadata.managedFields",
    "metadata.creationTimestamp",
    "metadata.uid",
    "metadata.selfLink",
)


def at_or_under(path: str, ancestor: str) -> bool:
    """Whether JSON path ``path`` is ``ancestor`` or inside it (``a.b`` and ``a[0]`` are in
    ``a``; ``ab`` is not)."""
    return path == ancestor or path.startswith((ancestor + ".", ancestor + "["))


@dataclass(frozen=True)
class Difference:
    path: str
    change: str  # "lost", "added" or "changed"
    before: object = None
    after: object = None

    @property
    def normalised(self) -> bool:
        """An empty string, object or list that came back absent, or the reverse: how
        servers and Go structs with ``omitempty`` normalise, no data lost. A zero number or
        ``false`` is ``zero_value``: whether it is data depends on the schema. A list item
        that appeared or went is never this: Go and the API server keep every item, even an
        empty one, so a list's length is data (seen: ``owners: []`` read back holding
        ``{kind: "", name: ""}``, an item its enum refuses)."""
        if self.path.endswith("]") and self.change != "changed":
            return False
        return all(empty(v) for v in (self.before, self.after))

    @property
    def zero_value(self) -> bool:
        """A Go zero value (``false``, ``0``, ``0.0``, ``""``) that came back absent, or the
        reverse: what ``omitempty`` does when a Go webhook re-encodes an object. Only where the
        schema gives the field no ``default`` is that the same value (``ctx.excused``); a
        value changed (``true`` -> absent, ``1`` -> ``0``) is never this, nor a list item."""
        if self.path.endswith("]"):
            return False
        if self.change == "lost":
            return zero_or_all_zero(self.before)
        if self.change == "added":
            return zero_or_all_zero(self.after)
        return False

    def zero_leaves(self) -> list[str]:
        """The paths of the zero values a ``zero_value`` difference holds: itself, or each
        leaf of an object whose every leaf is one (``{"targetCelsius": 0}``: a Go pointer
        to a struct the converter left nil because all its fields were zero)."""
        value = self.before if self.change == "lost" else self.after
        return list(leaves(value, self.path))

    def describe(self) -> str:
        if self.change == "lost":
            return f"{self.path}: lost (was {short(self.before)})"
        if self.change == "added":
            return f"{self.path}: appeared ({short(self.after)})"
        return f"{self.path}: {short(self.before)} -> {short(self.after)}"


def empty(value) -> bool:
    """No data: absent, "", [], or an object whose every field is empty (``status:
    {conditions: []}``). A list with items holds data even if the items are empty."""
    if isinstance(value, dict):
        return all(empty(v) for v in value.values())
    return value is None or (isinstance(value, (str, list)) and not value)


def zero(value) -> bool:
    """Go's zero value of a scalar: ``false``, ``0``, ``0.0`` or ``""`` (not ``null``)."""
    if isinstance(value, bool):
        return value is False
    return (isinstance(value, (int, float)) and value == 0) or value == ""


def zero_or_all_zero(value) -> bool:
    """A Go zero value, or an object holding some and nothing else (an empty one is
    ``empty``, not this): what ``omitempty`` on a pointer to a struct drops whole. A list,
    even of zero values, holds items: never this."""
    if isinstance(value, dict):
        found = leaves(value, "")
        return bool(found) and all(zero(v) and "[" not in p for p, v in found.items())
    return zero(value)


def short(value, limit: int = 60) -> str:
    import json

    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def join(path: str, key) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def differences(before, after, path: str = "") -> list[Difference]:
    """Every path where ``after`` differs from ``before``: the deepest one that explains it."""
    if isinstance(before, dict) and isinstance(after, dict):
        found = []
        for key in before:
            if key not in after:
                found.append(Difference(join(path, key), "lost", before[key]))
            else:
                found += differences(before[key], after[key], join(path, key))
        found += [
            Difference(join(path, k), "added", None, after[k]) for k in after if k not in before
        ]
        return found
    if isinstance(before, list) and isinstance(after, list):
        # Item by item, so the path names what differs (not the whole list); items beyond the
        # shorter list were lost or added.
        found = []
        for i, (b, a) in enumerate(zip(before, after, strict=False)):
            found += differences(b, a, join(path, i))
        found += [
            Difference(join(path, i), "lost", v) for i, v in enumerate(before) if i >= len(after)
        ]
        found += [
            Difference(join(path, i), "added", None, v)
            for i, v in enumerate(after)
            if i >= len(before)
        ]
        return found
    if same(before, after):
        return []
    return [Difference(path, "changed", before, after)]


def same(a, b) -> bool:
    # JSON has one number type: 1 and 1.0 are the same value (Go may decode either).
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return a == b


def leaves(obj, path: str = "") -> dict[str, object]:
    """Every scalar in ``obj`` by its path (``spec.ports[1].name``)."""
    if isinstance(obj, dict):
        found: dict[str, object] = {}
        for key, value in obj.items():
            found |= leaves(value, join(path, key))
        return found
    if isinstance(obj, list):
        found = {}
        for i, value in enumerate(obj):
            found |= leaves(value, join(path, i))
        return found
    return {path: obj}


# A field path a message names: "spec.owner: Required value", "status.conditions[0].type".
# Not the word "status" of prose or of a URL ("status update through /status"): a bare
# ``spec``/``status`` is a path only where a colon follows it.
NAMED_PATH = re.compile(
    r"(?<![/\w.-])((?:spec|status)(?:(?:\.[A-Za-z0-9_-]+|\[\d*\])+(?![A-Za-z0-9_])|(?=:)))"
)
# Any other field (a top-level ``data``, ``metadata.labels``) where it is said as the API
# server and the gate say it: the path, a colon, then what is wrong with it. Never a version
# ("cannot be read at v1alpha1: Internal error occurred").
SAID_PATH = re.compile(
    r"(?<![/\w.-])(?!v\d+(?:(?:alpha|beta)\d+)?: )"
    r"([A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+|\[\d*\])*): (?=Invalid value|"
    r"Unsupported value|Required value|Duplicate value|Forbidden|Too long|Too many|"
    r"Not found|Internal error|lost \(was|appeared \("
    r'|(?:<value>|"[^"]*"|-?\d[\d.eE+-]*|true|false|null|[\[{][^:]*?[\]}]) -> )'
)


PATHS_SAID = 8  # paths a line names before it says how many more there are
_ITEM = re.compile(r"(.*)\[(\d+)\]")


def said(found: list[Difference], limit: int = PATHS_SAID) -> str:
    """The paths of ``found`` as a person reads them: items appended to one list (or cut from
    its end) said as that list growing from n to m items (shrinking), not as every index, and
    its items that changed on the way counted there; at most ``limit`` said, then how many
    more (never silently dropped)."""
    lists: dict[tuple[str, str], list[int]] = {}
    for d in found:
        item = _ITEM.fullmatch(d.path)
        if item and d.change in ("added", "lost"):
            lists.setdefault((item[1], d.change), []).append(int(item[2]))
    resized = {at for at, _ in lists}
    changed: dict[str, set[int]] = {}  # a resized list -> its items that changed
    said_in_order: list[tuple[str, str] | str] = []
    for d in found:
        item = _ITEM.fullmatch(d.path)
        if item and d.change in ("added", "lost"):
            entry: tuple[str, str] | str = (item[1], d.change)
        else:
            # In a list that grew or shrank: one of its items changed on the way.
            within = sorted((a for a in resized if d.path.startswith(a + "[")), key=len)
            if within:
                at = within[-1]
                changed.setdefault(at, set()).add(int(d.path[len(at) + 1 :].split("]", 1)[0]))
                continue
            entry = d.path
        if entry not in said_in_order:
            said_in_order.append(entry)
    parts = []
    for entry in said_in_order:
        if isinstance(entry, str):
            parts.append(entry)
            continue
        at, indexes = entry[0], lists[entry]
        low, high = min(indexes), max(indexes) + 1
        if entry[1] == "added":
            part = f"{at} grew from {low} to {high} items"
        else:
            part = f"{at} shrank from {high} to {low} items"
        moved = changed.pop(at, set())
        parts.append(part + (f" ({len(moved)} of the items kept changed)" if moved else ""))
    more = len(parts) - limit
    return ", ".join(parts[:limit]) + (f", and {more} more paths" if more > 0 else "")


def grown_lists(found: list[Difference]) -> set[str]:
    """The schema paths of the lists ``found`` appends items to (``spec.owners[].ops``)."""
    return {
        schema_path(item[1])
        for d in found
        if d.change == "added" and (item := _ITEM.fullmatch(d.path)) is not None
    }


def loses_or_changes(found: list[Difference]) -> str:
    """The verb for ``found``: "loses" only where every difference is a loss."""
    return "loses" if all(d.change == "lost" for d in found) else "changes"


def named_paths(text: str) -> list[str]:
    """The field paths ``text`` names (the API server's messages, the gate's evidence), in
    the order named."""
    found = {m.start(1): m.group(1) for m in NAMED_PATH.finditer(text)}
    found |= {m.start(1): m.group(1) for m in SAID_PATH.finditer(text)}
    return [found[at] for at in sorted(found)]


def schema_path(path: str) -> str:
    """A concrete path as its schema names it: list indexes become ``[]``."""
    return re.sub(r"\[\d+\]", "[]", path)


def comparable(obj: dict, ignore_annotations: tuple[str, ...] = ()) -> dict:
    """``obj`` without what the server changes on any write (resourceVersion, managedFields,
    ...) and without annotations the gate set itself."""
    result = json_values.copied(obj)
    metadata = result.get("metadata") or {}
    for path in SERVER_METADATA:
        metadata.pop(path.split(".", 1)[1], None)
    annotations = metadata.get("annotations") or {}
    for key in ignore_annotations:
        annotations.pop(key, None)
    if "annotations" in metadata and not annotations:
        del metadata["annotations"]
    result.pop("apiVersion", None)  # read at the same version on both sides anyway
    return result
