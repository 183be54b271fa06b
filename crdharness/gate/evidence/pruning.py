"""What a version's structural schema prunes from a body sent at that version: the fields it
does not declare (outside ``x-kubernetes-preserve-unknown-fields`` subtrees and maps).

The API server drops them from every create and update before any conversion, silently (no
refusal without ``fieldValidation=Strict``). So a body built for one version and sent at
another, or a sample holding a field its version does not declare, loses them by the gate's
own request: never the webhook's loss. The gate leaves them out before sending
(``split``), and any loss at or under them is a note, never a finding (``not_the_webhooks``).

Conservative where the server's rule is not certain (a list under a node with no ``items``,
``additionalProperties: true``): kept, so a real loss there is never excused.
"""

from __future__ import annotations

import copy

from crdharness.gate import diff
from crdharness.gate.evidence import objects

TOP_LEVEL = ("apiVersion", "kind", "metadata")  # the server's own, in every schema
EMBEDDED = ("apiVersion", "kind", "metadata")  # kept in an embedded resource too


def root(version: dict) -> dict | None:
    """A ``spec.versions`` entry's structural schema; None when it has none (nothing is
    said, so nothing is taken for pruned)."""
    return (version.get("schema") or {}).get("openAPIV3Schema") or None


def split(version: dict, body: dict) -> tuple[dict, list[str]]:
    """``body`` (an object's own fields: no apiVersion, kind or metadata) without what
    ``version``'s schema prunes, and the JSON paths it prunes (``spec.onlyAtA``)."""
    schema = root(version)
    if schema is None:
        return copy.deepcopy(body), []
    pruned: list[str] = []
    own = {key: value for key, value in body.items() if key not in TOP_LEVEL}
    kept = _walk(own, schema, "", pruned)
    kept |= {key: value for key, value in body.items() if key in TOP_LEVEL}
    return copy.deepcopy(kept), pruned


def sendable(version: dict, body: dict) -> tuple[dict, list[str]]:
    """A body (``objects`` conventions: its labels, annotations and name beside its
    fields) without what ``version``'s schema would prune, and the paths left out."""
    kept, paths = split(version, objects.intent(body))
    return {**kept, **{k: v for k, v in body.items() if k in objects.PRIVATE}}, paths


def pruned(version: dict, body: dict) -> list[str]:
    """The JSON paths ``version``'s schema prunes from ``body``."""
    return split(version, body)[1]


def not_the_webhooks(
    found: list[diff.Difference], paths: list[str], version: str
) -> tuple[list[diff.Difference], list[str]]:
    """``found`` without the differences at or under ``paths`` (pruned at ``version`` by
    the gate's own request), and one note per such path."""
    kept, notes = [], []
    for d in found:
        at = next((p for p in paths if diff.at_or_under(d.path, p)), None)
        if at is None:
            kept.append(d)
            continue
        text = note(at, version)
        if text not in notes:
            notes.append(text)
    return kept, notes


def note(path: str, version: str) -> str:
    return (
        f"{path}: pruned by the gate's own request at {version} (not the webhook's): "
        f"{version}'s schema does not declare it"
    )


def left_out(path: str, version: str) -> str:
    return (
        f"{path}: not sent at {version}: {version}'s schema does not declare it (the API "
        "server would prune it: a loss by the gate's own request, not the webhook's)"
    )


class _Gone:
    """No schema node for a key: the server prunes it."""


_GONE = _Gone()
_KEEP: dict = {"x-kubernetes-preserve-unknown-fields": True}  # kept, unjudged


def _child(node: dict, key: str) -> dict | _Gone:
    """The schema of ``node``'s field ``key``: its property, its map's values, kept whole
    (preserve-unknown, or a map of anything), or ``_GONE``."""
    properties = node.get("properties") or {}
    if key in properties:
        return properties[key]
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        return extra
    if extra is True or node.get("x-kubernetes-preserve-unknown-fields"):
        return _KEEP
    if node.get("x-kubernetes-embedded-resource") and key in EMBEDDED:
        return _KEEP
    return _GONE


def _walk(value, node, path: str, pruned: list[str]):
    """``value`` (at ``path``, under schema ``node``) without what ``node`` prunes."""
    if node is _KEEP:
        return value
    if isinstance(value, dict):
        kept = {}
        for key, child in value.items():
            schema = _child(node, key)
            if schema is _GONE:
                pruned.append(diff.join(path, key))
            else:
                kept[key] = _walk(child, schema, diff.join(path, key), pruned)
        return kept
    if isinstance(value, list):
        items = node.get("items")
        if not isinstance(items, dict):
            return value  # no item schema: not judged here
        return [_walk(item, items, diff.join(path, i), pruned) for i, item in enumerate(value)]
    return value
