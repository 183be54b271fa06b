"""Coverage objects: bodies (``objects`` conventions) built so that together they hold every
value ``coverage.leaves`` lists — each leaf path with data, each enum value, ``true`` and
``false``, ``0`` — as few bodies as reasonable: each body takes the next pending value of
every leaf at once, and a list or map takes several (one per item, up to its bounds).

What the schema requires is always filled in; ``oneOf``/``anyOf`` branches that name
fields (``required``, ``properties``) are picked so each branch's fields get their turn,
and the fields of the branches not picked are left out. The API server may still refuse a
body (a CEL rule): ``single`` builds one value at one path on its own, on a base (one of
the user's samples), to try alternatives.
"""

from __future__ import annotations

import copy
import json
import re

from crdharness.gate.evidence import coverage, objects, schema_memo
from crdharness.gate.evidence.packed import Packed

ITEMS = 4  # items per list (and values per map) a coverage object fills, bounds allowing
MAX_OBJECTS = 12  # coverage objects per version for every value (each enum value, ...)
# and beyond that for paths no object holds yet: a node with maxProperties 1 (one provider
# of many at a time) needs an object per field
MAX_PATH_OBJECTS = 48
MARK = {
    "labels": {"gate.example.com/coverage": "true"},
    "annotations": {"gate.example.com/coverage": "every declared path"},
}


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING = _Missing()


join = coverage.join


class Builder:
    """One pass over the schema per body, taking pending values as it goes."""

    def __init__(self, schema: dict, pending: dict[str, list]) -> None:
        self.schema = schema
        self.pending = pending
        self.filler = {leaf.path: leaf.values[:1] for leaf in coverage.leaves(schema)}
        self.taken = 0

    def waiting(self, prefix: str) -> bool:
        """Whether a value is pending at or below ``prefix`` (the whole body: "")."""
        return any(
            queue and (not prefix or p == prefix or p.startswith((prefix + ".", prefix + "[")))
            for p, queue in self.pending.items()
        )

    def body(self) -> dict:
        built = self.build(self.schema, "", True)
        return built if isinstance(built, dict) else {}

    def build(self, node: dict, path: str, forced: bool):
        """A value at ``path``, taking pending values below it; MISSING when nothing is
        pending there and nothing requires it."""
        if not forced and not self.waiting(path):
            return MISSING
        if path and coverage.is_leaf(node):
            queue = self.pending.get(path)
            if queue:
                self.taken += 1
                return copy.deepcopy(queue.pop(0))
            filler = self.filler.get(path) or coverage.values_of(node)[0][:1]
            return copy.deepcopy(filler[0]) if filler else ""
        if node.get("properties"):
            return self._object(node, path)
        if isinstance(node.get("additionalProperties"), dict):
            return self._map(node, path)
        return self._list(node, path)

    def _object(self, node: dict, path: str) -> dict:
        required = set(node.get("required") or [])
        for part in node.get("allOf") or []:
            required |= set(part.get("required") or [])
        excluded: set[str] = set()
        for combinator, exclusive in (("oneOf", True), ("anyOf", False)):
            branches = [_named(b) for b in node.get(combinator) or [] if isinstance(b, dict)]
            if not any(names for names, _ in branches):
                continue
            chosen = next(
                (
                    i
                    for i, (names, _) in enumerate(branches)
                    if any(self.waiting(coverage.join(path, k)) for k in names)
                ),
                0,
            )
            required |= branches[chosen][1]
            if exclusive:
                excluded |= set().union(*(n for n, _ in branches)) - branches[chosen][0]
        keys = [k for k in node["properties"] if k not in excluded]
        # maxProperties: the required fields first, then those waiting, while there is
        # room (the others' values wait for the next object); minProperties: fields
        # built whole, in order, until there are enough (the API server refuses fewer).
        most = node.get("maxProperties", len(keys))
        keys.sort(key=lambda k: k not in required)
        out: dict = {}
        for key in keys:
            if len(out) >= most and key not in required:
                break
            built = self.build(node["properties"][key] or {}, join(path, key), key in required)
            if built is not MISSING:
                out[key] = built
        for key in keys:
            if len(out) >= min(node.get("minProperties", 0), most):
                break
            if key not in out:
                out[key] = self.build(node["properties"][key] or {}, join(path, key), True)
        out = {k: out[k] for k in node["properties"] if k in out}  # the schema's order
        if node.get("x-kubernetes-embedded-resource"):
            for key in ("apiVersion", "kind"):
                out.setdefault(key, coverage.EMBEDDED[key])
        return out

    def _map(self, node: dict, path: str) -> dict:
        low = node.get("minProperties", 0)
        cap = max(min(node.get("maxProperties", ITEMS), ITEMS), low)
        out: dict = {}
        while len(out) < cap and (len(out) < low or self.waiting(f"{path}.*")):
            out[map_key(node, len(out))] = self.build(
                node["additionalProperties"], f"{path}.*", True
            )
        return out

    def _list(self, node: dict, path: str) -> list:
        items_node = node.get("items") or {}
        low = node.get("minItems", 0)
        cap = max(min(node.get("maxItems", ITEMS), ITEMS), low)
        keys = node.get("x-kubernetes-list-map-keys") or []
        unique = node.get("x-kubernetes-list-type") == "set" or bool(keys)
        items: list = []
        while len(items) < cap and (len(items) < low or self.waiting(f"{path}[]")):
            before = {p: list(q) for p, q in self.pending.items()}, self.taken
            item = self.build(items_node, f"{path}[]", True)
            clash = unique and not _distinct(item, items, keys, len(items))
            if clash and len(items) >= low:  # its values wait for the next object
                self.pending, self.taken = before
                break
            items.append(item)
        return items


def _named(branch: dict) -> tuple[set[str], set[str]]:
    """The fields a ``oneOf``/``anyOf`` branch names, and those it requires."""
    required = set(branch.get("required") or [])
    return required | set(branch.get("properties") or {}), required


def _distinct(item, items: list, keys: list[str], index: int) -> bool:
    """Whether ``item`` can join ``items`` of a set or map list; a map list's string keys
    are made distinct (``-1``, ``-2``) where that is all that clashes."""

    def key_of(value):
        return tuple(json.dumps(value.get(k)) for k in keys) if keys else json.dumps(value)

    if key_of(item) not in {key_of(i) for i in items}:
        return True
    if keys and isinstance(item, dict):
        for k in keys:
            if isinstance(item.get(k), str):
                item[k] = f"{item[k]}-{index}"
        return key_of(item) not in {key_of(i) for i in items}
    return False


# a schema's content key -> its coverage bodies (compressed: a provider's are large)
_BODIES: dict[str, Packed] = {}


def bodies(version: dict) -> list[dict]:
    """The coverage bodies of a ``spec.versions`` entry, labelled and annotated (every
    object carries both), the same ones for the same schema."""
    schema = objects.body_schema(version)
    key = schema_memo.content_key(schema)
    if key not in _BODIES:
        made = [{**b, objects.METADATA: copy.deepcopy(MARK)} for b in packed(schema)]
        _BODIES[key] = Packed.of(made)
    return _BODIES[key].value()


def packed(schema: dict, only: set[str] | None = None) -> list[dict]:
    """Bodies that together hold every value of every leaf of ``schema`` (a body schema);
    given ``only``, the first value that holds data of each of those leaves."""
    pending = {leaf.path: list(leaf.values) for leaf in coverage.leaves(schema) if leaf.values}
    if only is not None:
        pending = {
            p: [v for v in q if coverage.holds_data(leaf.schema, v)][:1]
            for leaf in coverage.leaves(schema)
            if (p := leaf.path) in only and (q := pending.get(p))
        }
    builder = Builder(schema, pending)
    built: list[dict] = []
    while builder.waiting("") and len(built) < MAX_PATH_OBJECTS:
        if len(built) >= MAX_OBJECTS:  # from here on, only paths no object holds yet
            holding = set().union(*(coverage.held(schema, b) for b in built))
            builder.pending = {p: q for p, q in builder.pending.items() if p not in holding}
            if not builder.waiting(""):
                break
        taken = builder.taken
        body = builder.body()
        if builder.taken == taken:
            break  # what is left can be placed in no object (a clash of unique items)
        built.append(body)
    return built


# A rule over a map's keys that reads each as a number: ``self.all(key, 0 < int(key) && ...)``.
NUMBERED_KEYS = re.compile(r"\ball\(\s*(\w+)\s*,.*\bint\(\s*\1\s*\)")


def map_key(node: dict, index: int) -> str:
    """The key of the ``index``-th entry the gate builds in a map (``node``'s schema):
    ``gate-N``, or a number where a rule of the map reads its keys as numbers (istio's
    ``portLevelMtls``: ports 1 to 65535)."""
    for rule in node.get("x-kubernetes-validations") or []:
        if NUMBERED_KEYS.search(str(rule.get("rule", ""))):
            return str(index + 1)
    return f"gate-{index}"


def single(schema: dict, path: str, value, base: dict | None = None) -> dict:
    """A body holding ``value`` at ``path`` and otherwise what the schema requires, laid
    under ``base`` (a sample body: its own values kept, what it lacks filled in), with
    ``value`` at ``path`` (a list's first item, a map's first key: ``map_key``)."""
    body = Builder(schema, {path: [value]}).body()
    if base is None:
        return body
    merged = _under(copy.deepcopy(base), body)
    target, node = merged, schema
    parts = re.findall(r"[^.\[\]]+|\[\]", path)
    for i, part in enumerate(parts):
        key = 0 if part == "[]" else map_key(node, 0) if part == "*" else part
        if isinstance(target, dict) and "maxProperties" in node:
            _room_for(target, node, key)
        if i == len(parts) - 1:
            target[key] = copy.deepcopy(value)
        else:
            target = target[key]
            node = _child(node, part)
    return merged


def _child(node: dict, part: str) -> dict:
    if part == "[]":
        return node.get("items") or {}
    if part == "*":
        extra = node.get("additionalProperties")
        return extra if isinstance(extra, dict) else {}
    return (node.get("properties") or {}).get(part) or {}


def _room_for(target: dict, node: dict, key) -> None:
    """The sample's own fields beside ``key`` dropped (the last first, none required) until
    ``target`` is within its ``maxProperties``: a sample's provider gives way to the one
    the path is in, where only one may be set."""
    required = set(node.get("required") or [])
    others = [k for k in target if k != key and k not in required]
    while len(target) > node["maxProperties"] and others:
        target.pop(others.pop())


def _under(base, built):
    """``base`` with what ``built`` has and it lacks: objects merged, a list's first item
    merged with the built one's first; any other value ``base``'s own."""
    if isinstance(base, dict) and isinstance(built, dict):
        return {**built, **{k: _under(v, built[k]) if k in built else v for k, v in base.items()}}
    if isinstance(base, list) and isinstance(built, list) and base and built:
        return [_under(base[0], built[0]), *base[1:]]
    if base == [] and isinstance(built, list) and built:  # an empty list holds nothing
        return built
    return built if base is None else base
