"""What an object sent at one version needs to be written back at another under strategy
None: the other version's schema checks what was kept (its ``required``, its
``minProperties``), and may ask for what the first version leaves out (cluster-api's
Cluster: v1beta2 requires a ``spec`` of at least one field, v1beta1 requires none, so a
v1beta1 object holding only a status path is never written back at v1beta2). Path
coverage lays a path's value on the least body that meets it.
"""

from __future__ import annotations

from crdharness.gate.evidence import coverage_objects


def least_for(written: dict, declared: dict) -> dict:
    """The least body ``written``'s schema requires (``required``, ``minProperties``), of
    fields ``declared``'s schema declares too (both body schemas)."""
    return coverage_objects.Builder(_common(written, declared), {}).body()


def _common(node: dict, declared: dict) -> dict:
    """``node`` with only the properties ``declared`` has too, at any depth (its own
    constraints kept)."""
    if not isinstance(declared, dict):
        return node
    out = dict(node)
    if isinstance(node.get("properties"), dict):
        own = declared.get("properties") or {}
        out["properties"] = {
            k: _common(v or {}, own[k]) for k, v in node["properties"].items() if k in own
        }
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            out[key] = _common(node[key], declared.get(key) or {})
    return out
