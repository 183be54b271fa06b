"""What changed between two releases of a CRD, path by path: the classes a static schema
checker reports (an enum value removed, a field made required, a bound tightened, a new CEL
rule, a new default, ...). Computed from the manifests alone; each change then gets objects
built to hold it (``targeted``) and a decision from the real API server (``upgrade``).

A path is spelt as the schema names it: ``spec.priority``, ``status.conditions[].type``, and
``*`` for the values of a map (``spec.labels.*``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from crdharness.gate.evidence import schemas
from crdharness.gate.given.manifests import Release

# Bounds that only ever allow less when they shrink, and those that allow less when they grow.
UPPER_BOUNDS = ("maxLength", "maxItems", "maxProperties", "maximum")
LOWER_BOUNDS = ("minLength", "minItems", "minProperties", "minimum")
COMBINATORS = ("oneOf", "anyOf", "allOf", "not")
TOP_LEVEL = ("apiVersion", "kind", "metadata")

ONE_VERSION = "at one version only"  # a path two served versions of one release differ in

# The decisions a change ends with (``decide``), and the one it starts with.
PROVEN, CLEARED, ALLOWED, NOT_PROVEN = "proven", "cleared", "allowed", "not proven"
UNDECIDED = ""


@dataclass(eq=False)  # a change is one row of the table: compared by identity
class Change:
    crd: str
    transition: int  # index of the release upgraded to (i+1)
    version: str  # the version whose schema changed ("" for the CRD as a whole)
    path: str  # the schema path ("" for the CRD as a whole)
    kind: str  # the class: "enum value removed", "required added", ...
    detail: str  # old -> new, as a person reads it
    parts: tuple[str, ...] = ()  # the path split: keys, "[]" for items, "*" for map values
    old: dict = field(default_factory=dict)  # the old schema node at the path
    new: dict = field(default_factory=dict)  # the new one
    values: tuple = ()  # class-specific: removed enum values, the new bound, ...
    decision: str = UNDECIDED
    evidence: str = ""

    @property
    def subject(self) -> str:
        where = f" {self.version}" if self.version else ""
        return f"{self.crd}{where} {self.path}".rstrip()

    def decide(self, decision: str, evidence: str) -> None:
        self.decision, self.evidence = decision, evidence

    def as_json(self) -> dict:
        return {
            "transition": (
                "candidate"
                if self.kind == ONE_VERSION
                else f"release {self.transition}->{self.transition + 1}"
            ),
            "crd": self.crd,
            "version": self.version,
            "path": self.path,
            "change": self.kind,
            "detail": self.detail,
            "decision": self.decision or NOT_PROVEN,
            "evidence": self.evidence or "not decided by the run",
        }


def between(previous: Release, release: Release, crd: str) -> list[Change]:
    """Every change of ``crd`` from ``previous`` to ``release`` that can make an object the
    earlier release accepted unwritable or read differently."""
    if crd not in previous.crds or crd not in release.crds:
        return []
    found: list[Change] = []
    t = release.index
    old_spec, new_spec = previous.crds[crd]["spec"], release.crds[crd]["spec"]
    if old_spec.get("scope", "Namespaced") != new_spec.get("scope", "Namespaced"):
        found.append(
            Change(
                crd,
                t,
                "",
                "",
                "scope changed",
                f"{old_spec.get('scope')} -> {new_spec.get('scope')}",
            )
        )
    for key in ("kind", "listKind", "singular"):
        before, after = old_spec["names"].get(key), new_spec["names"].get(key)
        if before and after and before != after:
            found.append(
                Change(crd, t, "", "", "names changed", f"names.{key}: {before} -> {after}")
            )
    for version in previous.names(crd):
        if version not in release.names(crd):
            found.append(
                Change(crd, t, version, "", "version removed", f"{version} is no longer listed")
            )
    for version in previous.served(crd):
        entry = release.version(crd, version)
        if entry is None:
            continue
        old_root = _root(previous.entry(crd, version))
        new_root = _root(entry)
        found += _compare(crd, t, version, old_root, new_root, (), top=True)
    found += _storage_under_none(previous, release, crd)
    return found


def _root(entry: dict) -> dict:
    return (entry.get("schema") or {}).get("openAPIV3Schema") or {}


def spell(parts: tuple[str, ...]) -> str:
    text = ""
    for part in parts:
        text += part if part == "[]" else (f".{part}" if text else part)
    return text


def _compare(
    crd: str, t: int, version: str, old: dict, new: dict, parts: tuple[str, ...], top=False
) -> list[Change]:
    found: list[Change] = []

    def add(kind: str, detail: str, at: tuple[str, ...] = parts, **extra) -> None:
        found.append(Change(crd, t, version, spell(at), kind, detail, at, old, new, **extra))

    if not top:
        _node_changes(add, old, new)
    old_props = old.get("properties") or {}
    new_props = new.get("properties") or {}
    for name in sorted(set(new.get("required") or []) - set(old.get("required") or [])):
        if top and name in TOP_LEVEL:
            continue
        node = old_props.get(name) or new_props.get(name) or {}
        found.append(
            Change(
                crd,
                t,
                version,
                spell((*parts, name)),
                "required added",
                f"{spell((*parts, name))} is required",
                (*parts, name),
                node,
                new_props.get(name) or {},
            )
        )
    for name in sorted(set(new_props) - set(old_props)):
        if "default" in new_props[name] and not (top and name in TOP_LEVEL):
            here = (*parts, name)
            found.append(
                Change(
                    crd,
                    t,
                    version,
                    spell(here),
                    "default added",
                    f"new field with default {_short(new_props[name]['default'])}",
                    here,
                    {},
                    new_props[name],
                    (new_props[name]["default"],),
                )
            )
    for name, child in old_props.items():
        if top and name in TOP_LEVEL:
            continue
        here = (*parts, name)
        if name not in new_props:
            if not new.get("x-kubernetes-preserve-unknown-fields"):
                found.append(
                    Change(
                        crd,
                        t,
                        version,
                        spell(here),
                        "field removed",
                        "no longer in the schema: pruned",
                        here,
                        child,
                        {},
                    )
                )
            continue
        found += _compare(crd, t, version, child, new_props[name], here)
    if isinstance(old.get("items"), dict) and isinstance(new.get("items"), dict):
        found += _compare(crd, t, version, old["items"], new["items"], (*parts, "[]"))
    old_map, new_map = old.get("additionalProperties"), new.get("additionalProperties")
    if isinstance(old_map, dict) and isinstance(new_map, dict):
        found += _compare(crd, t, version, old_map, new_map, (*parts, "*"))
    return found


def _node_changes(add, old: dict, new: dict) -> None:
    old_type = "int-or-string" if old.get("x-kubernetes-int-or-string") else old.get("type")
    new_type = "int-or-string" if new.get("x-kubernetes-int-or-string") else new.get("type")
    if old_type and new_type and old_type != new_type:
        add("type changed", f"{old_type} -> {new_type}")
    if "enum" in new:
        removed = [v for v in old.get("enum", []) if v not in new["enum"]]
        if "enum" not in old:
            add("enum added", f"only {_short(new['enum'])} allowed now", values=())
        elif removed:
            add("enum value removed", f"{_short(removed)} no longer allowed", values=tuple(removed))
    for bound in UPPER_BOUNDS:
        if bound in new and (bound not in old or new[bound] < old[bound]):
            add(
                "bound tightened",
                f"{bound}: {old.get(bound, 'none')} -> {new[bound]}",
                values=(bound,),
            )
    for bound in LOWER_BOUNDS:
        if bound in new and new[bound] > old.get(
            bound, 0 if bound != "minimum" else new[bound] - 1
        ):
            add(
                "bound tightened",
                f"{bound}: {old.get(bound, 'none')} -> {new[bound]}",
                values=(bound,),
            )
    for flag, bound in (("exclusiveMaximum", "maximum"), ("exclusiveMinimum", "minimum")):
        if (
            new.get(flag)
            and not old.get(flag)
            and bound in new
            and new.get(bound) == old.get(bound)
        ):
            add("bound tightened", f"{flag}: false -> true", values=(bound,))
    if new.get("pattern") and new.get("pattern") != old.get("pattern"):
        add("pattern changed", f"{old.get('pattern', 'none')!s} -> {new['pattern']}")
    if new.get("format") and new.get("format") != old.get("format"):
        add("format changed", f"{old.get('format', 'none')} -> {new['format']}")
    old_rules = {r.get("rule") for r in old.get("x-kubernetes-validations") or []}
    for rule in new.get("x-kubernetes-validations") or []:
        if rule.get("rule") not in old_rules:
            add("rule added", f"x-kubernetes-validations: {rule.get('rule')}", values=(rule,))
    for combinator in COMBINATORS:
        if combinator in new and _canon(new[combinator]) != _canon(old.get(combinator)):
            add(f"{combinator} added", f"{combinator}: {_short(new[combinator])}")
    if "default" in new and "default" not in old:
        add("default added", f"default {_short(new['default'])}", values=(new["default"],))
    elif "default" in new and _canon(new["default"]) != _canon(old["default"]):
        add(
            "default changed",
            f"default {_short(old['default'])} -> {_short(new['default'])}",
            values=(new["default"],),
        )
    if "default" in old and "default" not in new:  # new objects lose it; stored ones keep it
        add("default removed", f"default {_short(old['default'])} no longer applied")
    if old.get("nullable") and not new.get("nullable"):
        add("nullable dropped", "null no longer allowed")
    if old.get("x-kubernetes-preserve-unknown-fields") and not new.get(
        "x-kubernetes-preserve-unknown-fields"
    ):
        add("unknown fields pruned", "x-kubernetes-preserve-unknown-fields dropped")
    old_list = (
        old.get("x-kubernetes-list-type") or "atomic",  # none is atomic
        tuple(old.get("x-kubernetes-list-map-keys") or ()),
    )
    new_list = (
        new.get("x-kubernetes-list-type") or "atomic",
        tuple(new.get("x-kubernetes-list-map-keys") or ()),
    )
    if new_list[0] != "atomic" and new_list != old_list:  # unique items or keys now
        add(
            "list type changed",
            f"{old_list[0]} -> {new_list[0]} {list(new_list[1]) or ''}".rstrip(),
        )


def between_versions(release: Release, crd: str, a: str, b: str) -> list[Change]:
    """The paths an object written at ``a`` holds that ``b``'s schema cannot hold as they
    are (absent there, or of another type): each one a webhook must carry across, and
    strategy None loses."""
    found = []
    for path, text in schemas.grouped_differences(release, crd, a, b):
        parts = _parts(path)
        found.append(
            Change(
                crd,
                release.index,
                f"{a}->{b}",
                path,
                ONE_VERSION,
                text,
                parts,
                _node_at(_root(release.entry(crd, a)), parts),
                {},
            )
        )
    return found


def _storage_under_none(previous: Release, release: Release, crd: str) -> list[Change]:
    """A new storage version under strategy None: objects stored at the old one are read
    and rewritten at the new one as they are, so they hold fields it cannot, and meet every
    rule it tightens (a field it requires, a narrower enum)."""
    before, after = previous.storage(crd), release.storage(crd)
    if before == after or release.strategy(crd) != "None" or before not in release.names(crd):
        return []
    if before not in previous.served(crd):
        return []
    found = []
    for path, text in schemas.grouped_differences(release, crd, before, after):
        parts = _parts(path)
        node = _node_at(_root(previous.entry(crd, before)), parts)
        found.append(
            Change(
                crd,
                release.index,
                before,
                path,
                "storage version changed under None",
                f"storage {before} -> {after}: {text}",
                parts,
                node,
                {},
            )
        )
    old_root = _root(previous.entry(crd, before))
    for change in _compare(
        crd, release.index, before, old_root, _root(release.entry(crd, after)), (), top=True
    ):
        if change.kind in ("field removed", "type changed"):
            continue  # the rows above: what the new storage version cannot hold
        change.detail = f"at {after}, the new storage version: {change.detail}"
        found.append(change)
    return found


def _parts(path: str) -> tuple[str, ...]:
    parts: list[str] = []
    for piece in path.split("."):
        while piece.endswith("[]"):
            piece = piece[:-2]
            if piece:
                parts.append(piece)
            parts.append("[]")
            piece = ""
        if piece:
            parts.append(piece)
    return tuple(parts)


def _node_at(root: dict, parts: tuple[str, ...]) -> dict:
    node = root
    for part in parts:
        if part == "[]":
            node = node.get("items") or {}
        elif part == "*":
            node = node.get("additionalProperties") or {}
        else:
            node = (node.get("properties") or {}).get(part) or {}
    return node


def node_at(entry: dict, parts: tuple[str, ...]) -> dict:
    """The schema node of a ``spec.versions`` entry at ``parts``."""
    return _node_at(_root(entry), parts)


def _canon(value) -> str:
    return json.dumps(value, sort_keys=True)


def _short(value, limit: int = 80) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 3] + "..."
