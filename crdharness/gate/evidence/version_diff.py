"""What differs between two releases' entries of one version in ``spec.versions``: served,
deprecated and its warning, the status and scale subresources, selectable fields, printer
columns, and the schema (``schema_walk``, from its root). As everywhere in the diff, each
rule takes the keys it classifies from copies; what is left is unclassified.
"""

from __future__ import annotations

from collections import Counter

from crdharness.gate.evidence.schema_rules import REPORTED, SAME_MEANING, Row, canon, cover, shown
from crdharness.gate.evidence.schema_walk import unclassified, walk

# Judged by what the API server does outside the schema (``checks.crd_behaviour``).
STATUS_REMOVED = "status subresource removed"
STATUS_ADDED = "status subresource added"
SCALE_REMOVED = "scale subresource removed"
SCALE_CHANGED = "scale subresource changed"
SELECTABLE_REMOVED = "selectable field removed"
PROBED = (STATUS_REMOVED, STATUS_ADDED, SCALE_REMOVED, SCALE_CHANGED, SELECTABLE_REMOVED)

NOT_SERVED = (
    "not served under the earlier release: no client wrote objects at this version "
    "(those stored are converted to it, as the reads at every served version show)"
)


def version(name: str, old: dict, new: dict, docs: Counter) -> list[Row]:
    where = f"spec.versions[{name}]"
    found: list[Row] = []

    def add(kind: str, detail: str, key: str, values: tuple = ()) -> Row:
        row = Row(name, (), kind, detail, values=values, keys=(f"{where}.{key}",))
        found.append(row)
        return row

    served_before = bool(old.get("served"))
    old.pop("name", None), new.pop("name", None)
    flags = {
        "served": ("version served", "version unserved"),
        "deprecated": ("version deprecated", "deprecation withdrawn"),
        "storage": None,  # a row of the CRD's (``crd_diff``): one per storage move
    }
    for key, classes in flags.items():
        raw = old.pop(key, None), new.pop(key, None)
        if raw[0] == raw[1]:
            continue
        if bool(raw[0]) == bool(raw[1]):
            row = add(SAME_MEANING, f"{key}: {raw[0]} -> {raw[1]}", key)
            row.decision, row.evidence = REPORTED, "false spelt out or left out: nothing to judge"
        elif classes is not None:
            add(
                classes[0] if raw[1] else classes[1],
                f"{key}: {bool(raw[0])} -> {bool(raw[1])}",
                key,
            )
    warning = old.pop("deprecationWarning", None), new.pop("deprecationWarning", None)
    if warning[0] != warning[1]:
        add(
            "deprecation warning changed",
            f"{shown(warning[0], 'none')} -> {shown(warning[1], 'none')}",
            "deprecationWarning",
        )
    sub = old.pop("subresources", None), new.pop("subresources", None)
    found += cover(
        _subresources(name, where, sub[0] or {}, sub[1] or {}), *sub, f"{where}.subresources", name
    )
    selectable = old.pop("selectableFields", None), new.pop("selectableFields", None)
    found += cover(
        _selectable(name, where, selectable[0] or [], selectable[1] or []),
        *selectable,
        f"{where}.selectableFields",
        name,
    )
    columns = old.pop("additionalPrinterColumns", None), new.pop("additionalPrinterColumns", None)
    if canon(columns[0]) != canon(columns[1]):
        row = add(
            "printer columns changed", _columns(columns[0], columns[1]), "additionalPrinterColumns"
        )
        row.decision, row.evidence = REPORTED, "what kubectl get shows: reported, not judged"
    s_old, s_new = dict(old.pop("schema", None) or {}), dict(new.pop("schema", None) or {})
    root = s_old.pop("openAPIV3Schema", None), s_new.pop("openAPIV3Schema", None)
    if isinstance(root[0], dict) and isinstance(root[1], dict):
        schema_rows = walk(root[0], root[1], name, f"{where}.schema.openAPIV3Schema", docs)
        if not served_before:
            for row in schema_rows:
                row.decision, row.evidence = REPORTED, NOT_SERVED
        found += schema_rows
    elif canon(root[0]) != canon(root[1]):
        s_old["openAPIV3Schema"], s_new["openAPIV3Schema"] = root
    found += unclassified(s_old, s_new, name, (), f"{where}.schema")
    for row in found:
        if row.kind == SAME_MEANING and not row.decision:
            row.decision, row.evidence = (
                REPORTED,
                "the same meaning spelt differently: nothing to judge",
            )
    return found + unclassified(old, new, name, (), where)


def _subresources(name: str, where: str, old: dict, new: dict) -> list[Row]:
    old, new = dict(old), dict(new)
    found: list[Row] = []
    where = f"{where}.subresources"
    status = old.pop("status", None), new.pop("status", None)
    if (status[0] is None) != (status[1] is None):
        kind = STATUS_ADDED if status[0] is None else STATUS_REMOVED
        found.append(
            Row(
                name,
                (),
                kind,
                "subresources.status: "
                + ("absent -> present" if status[0] is None else "present -> absent"),
                keys=(f"{where}.status",),
            )
        )
    elif canon(status[0]) != canon(status[1]):
        old["status"], new["status"] = status
    scale = old.pop("scale", None), new.pop("scale", None)
    if scale[0] is not None and scale[1] is None:
        found.append(
            Row(
                name,
                (),
                SCALE_REMOVED,
                "subresources.scale: present -> absent",
                values=(scale[0],),
                keys=(f"{where}.scale",),
            )
        )
    elif scale[0] is None and scale[1] is not None:
        found.append(
            Row(
                name,
                (),
                "scale subresource added",
                "subresources.scale: absent -> present",
                keys=(f"{where}.scale",),
            )
        )
    elif canon(scale[0]) != canon(scale[1]):
        changed = sorted(
            k
            for k in set(scale[0]) | set(scale[1])
            if canon(scale[0].get(k)) != canon(scale[1].get(k))
        )
        found.append(
            Row(
                name,
                (),
                SCALE_CHANGED,
                ", ".join(
                    f"{k}: {shown(scale[0].get(k), 'none')} -> {shown(scale[1].get(k), 'none')}"
                    for k in changed
                ),
                values=(scale[0], scale[1]),
                keys=(f"{where}.scale",),
            )
        )
    return found + unclassified(old, new, name, (), where)


def _selectable(name: str, where: str, old: list, new: list) -> list[Row]:
    paths = [f.get("jsonPath") for f in old if isinstance(f, dict)]
    now = [f.get("jsonPath") for f in new if isinstance(f, dict)]
    found: list[Row] = []
    key = (f"{where}.selectableFields",)
    for path in paths:
        if path not in now:
            found.append(
                Row(
                    name,
                    (),
                    SELECTABLE_REMOVED,
                    f"fieldSelector on {path} refused now",
                    values=(path,),
                    keys=key,
                )
            )
    for path in now:
        if path not in paths:
            found.append(Row(name, (), "selectable field added", f"{path} selectable", keys=key))
    if not found and canon(old) != canon(new):
        row = Row(name, (), SAME_MEANING, "selectableFields reordered", keys=key)
        found.append(row)
    return found


def _columns(old, new) -> str:
    before = [c.get("name") for c in old or [] if isinstance(c, dict)]
    after = [c.get("name") for c in new or [] if isinstance(c, dict)]
    if before == after:
        return f"columns {after}: their paths, types or descriptions changed"
    return f"columns {before} -> {after}"
