"""What a version's structural schema says, field by field: the paths it declares and their
types, and where two versions of one release differ (what strategy ``None`` cannot carry)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from crdharness.gate import diff, go_values
from crdharness.gate.evidence import coverage
from crdharness.gate.given.manifests import Release

TOP_LEVEL = ("apiVersion", "kind", "metadata")


def schema_fields(version: dict) -> dict[str, str]:
    """Every field path of a version's schema (``spec.items[].name``), with its type."""
    root = (version.get("schema") or {}).get("openAPIV3Schema") or {}
    found: dict[str, str] = {}

    def walk(node: dict, path: str) -> None:
        for key, child in (node.get("properties") or {}).items():
            if not path and key in TOP_LEVEL:
                continue
            here = f"{path}.{key}" if path else key
            found[here] = str(child.get("type", "any"))
            walk(child, here)
        if isinstance(node.get("items"), dict):
            walk(node["items"], f"{path}[]")

    walk(root, "")
    return found


def fields_of(release: Release, crd: str, version: str) -> dict[str, str]:
    entry = release.version(crd, version) or {}
    return schema_fields(entry)


def schema_differences(release: Release, crd: str, a: str, b: str) -> list[str]:
    """Fields written at ``a`` that ``b`` cannot hold as they are: absent, or of another type;
    one line per subtree (a field missing at ``b`` stands for every field under it)."""
    return [text for _, text in grouped_differences(release, crd, a, b)]


def grouped_differences(release: Release, crd: str, a: str, b: str) -> list[tuple[str, str]]:
    """(path, what differs) per subtree, as ``schema_differences`` describes them."""
    at_a, at_b = fields_of(release, crd, a), fields_of(release, crd, b)
    differing = {
        path: kind for path, kind in at_a.items() if path not in at_b or at_b[path] != kind
    }
    tops = sorted(
        p for p in differing if not any(diff.at_or_under(p, q) for q in differing if q != p)
    )
    found = []
    for path in tops:
        below = sum(1 for q in differing if q != path and diff.at_or_under(q, path))
        more = f" (and {below} fields under it)" if below else ""
        if path not in at_b:
            found.append(
                (path, f"{path}{more} exists at {a} but not at {b}: lost when read at {b}")
            )
        else:
            found.append(
                (
                    path,
                    f"{path}{more} is {at_a[path]} at {a} but {at_b[path]} at {b}: invalid at {b}",
                )
            )
    return found


def shared_fields(release: Release, crd: str, a: str, b: str) -> set[str]:
    """Paths with one schema type at both versions (``any`` excluded: it says nothing)."""
    at_a, at_b = fields_of(release, crd, a), fields_of(release, crd, b)
    return {p for p, kind in at_a.items() if kind != "any" and at_b.get(p) == kind}


def defaulted(version: dict, path: str) -> bool:
    """Whether the schema gives ``path`` (``status.conditions[0].type``) or an object above
    it a ``default``: a value the API server fills in on every read where it is absent."""
    node = (version.get("schema") or {}).get("openAPIV3Schema") or {}
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        node = (
            node.get("items") if part.startswith("[") else (node.get("properties") or {}).get(part)
        ) or {}
        if "default" in node:
            return True
    return False


def default_of(version: dict, path: str) -> tuple[bool, object]:
    """(whether the schema gives ``path`` itself a ``default``, that default)."""
    node = (version.get("schema") or {}).get("openAPIV3Schema") or {}
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        node = (
            node.get("items") if part.startswith("[") else (node.get("properties") or {}).get(part)
        ) or {}
    return ("default" in node, node.get("default"))


MISSING = _MISSING = object()  # no value there (``None`` may be one: a JSON null)


def _walk(obj, path: str):
    """The value at ``path`` of ``obj``, or ``_MISSING``."""
    return walk(obj, re.findall(r"[^.\[\]]+|\[\d+\]", path))


def walk(obj, parts: Iterable[str]):
    """The value at ``parts`` of ``obj`` (keys, and ``[N]`` for list items), or ``MISSING``:
    for a path already split, whose keys may hold dots."""
    for part in parts:
        if part.startswith("[") and part.endswith("]") and part[1:-1].isdigit():
            index = int(part[1:-1])
            if not isinstance(obj, list) or index >= len(obj):
                return _MISSING
            obj = obj[index]
        elif isinstance(obj, dict) and part in obj:
            obj = obj[part]
        else:
            return _MISSING
    return obj


def value_at(obj, path: str):
    """The value at ``path`` of ``obj`` (None where it has none)."""
    found = _walk(obj, path)
    return None if found is _MISSING else found


def present(obj, path: str) -> bool:
    """Whether ``obj`` has a value at ``path``."""
    return _walk(obj, path) is not _MISSING


def zero_field(version: dict, path: str) -> str | None:
    """What the schema makes of the field at ``path`` (through ``properties``, list
    ``items`` and map ``additionalProperties``), for a zero value read back absent:
    "plain" (a property by name with no ``default``: a Go struct field, whose zero value
    ``omitempty`` drops and a Go reader takes for absent), "defaulted" (the API server
    fills in the default where it is absent), "entry" (a list item or map value: Go keeps
    those), or None (not declared here: nothing says how it is read)."""
    node = (version.get("schema") or {}).get("openAPIV3Schema") or {}
    kind = None
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        if part.startswith("["):
            child, kind = node.get("items"), "entry"
        elif part in (node.get("properties") or {}):
            child, kind = node["properties"][part], "plain"
        else:
            child, kind = node.get("additionalProperties"), "entry"
        if not isinstance(child, dict):
            return None
        node = child
    if kind == "plain" and "default" in node:
        return "defaulted"
    return kind


def defaults_to_zero(version: dict, path: str) -> bool:
    """Whether the field at ``path`` is plain or has a zero ``default`` (``false``, ``0``,
    ``""``): absent and its zero value then read the same wherever the default fills in."""
    kind = zero_field(version, path)
    if kind != "defaulted":
        return kind in ("plain", None)
    return diff.zero(default_of(version, path)[1])


def defaults_only(versions: list[dict], path: str, value) -> bool:
    """Whether ``value`` (an object at ``path``) holds data at all, by the ``versions``'
    schemas: every leaf is the ``default`` the schema gives it there, or a zero value of a
    plain field with none (a Go struct without ``omitempty`` answers one for every field,
    and the API server then fills in the defaults), and there is at least one leaf."""
    if not isinstance(value, dict) or path.endswith("]"):
        return False  # a list item is data however empty: nothing defaults one into a list
    found = {leaf: v for leaf, v in _leaves(value, path)}
    if not found:
        return False
    for leaf, v in found.items():
        # A default as the webhook's Go types write it back (``1h`` read as ``1h0m0s``).
        if any(_defaults_to(version, leaf, v) for version in versions):
            continue
        # An empty list, as a Go slice without omitempty answers it, where no default would
        # read otherwise: normalised on its own (``diff.Difference.normalised``), so here too.
        if v == [] and not any(default_of(version, leaf)[0] for version in versions):
            continue
        kinds = {zero_field(version, leaf) for version in versions} - {None}
        if not (kinds == {"plain"} and diff.zero(v)):
            return False
    return True


def _defaults_to(version: dict, path: str, value) -> bool:
    declared, default = default_of(version, path)
    return declared and go_values.same(default, value)


def _leaves(value, path: str):
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _leaves(child, f"{path}.{key}" if path else str(key))
    else:
        yield path, value  # a list is a leaf here: Go keeps a list's items, never a zero


def declares(version: dict, path: str) -> bool:
    """Whether ``version``'s schema has a field at ``path``, written concretely or as
    report.md prints paths (``spec.routes[].regex``, a map's key as any name): what an
    ``allow:`` entry may name. Below ``x-kubernetes-preserve-unknown-fields`` anything is."""
    if path == "metadata" or path.startswith(("metadata.", "apiVersion", "kind")):
        return True  # the server's own fields (labels, annotations), in every schema
    root = (version.get("schema") or {}).get("openAPIV3Schema") or {}
    return coverage.node_at(root, path) is not None
