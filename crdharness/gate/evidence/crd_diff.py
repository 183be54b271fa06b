"""Every difference between two releases of one CRD's ``spec``, outside the schema and in it.

As in ``schema_rules``, each rule takes from copies of the two specs (or of one version's
entries) the keys it classifies and records rows for them; what no rule took is an
**unclassified** row. The classes: group, scope and names; the conversion strategy and
its webhook settings; ``preserveUnknownFields``; and per version: listed, served, storage,
deprecated and its warning, the status and scale subresources, selectable fields, printer
columns, and the schema (``schema_rules``, from its root).

Some rows are decided here, from the manifests alone, as ``reported``: what the gate does
not judge (printer columns, short names and categories, where the webhook is reached, the
same meaning spelt differently, the schema of a version no client could write at).
"""

from __future__ import annotations

from collections import Counter

from crdharness.gate.evidence import schema_rules
from crdharness.gate.evidence.schema_rules import SAME_MEANING, Row, canon, cover
from crdharness.gate.evidence.schema_walk import unclassified
from crdharness.gate.evidence.version_diff import (  # noqa: F401 (the classes, named here)
    PROBED,
    SCALE_CHANGED,
    SCALE_REMOVED,
    SELECTABLE_REMOVED,
    STATUS_ADDED,
    STATUS_REMOVED,
    version,
)

REPORTED = schema_rules.REPORTED


# Decided on the CRD's old objects read and written again under the new release.
WHOLE_CRD = (
    "group changed",
    "scope changed",
    "names changed",
    "version removed",
    "version added",
    "version served",
    "version unserved",
    "storage version changed",
    "version deprecated",
    "deprecation withdrawn",
    "deprecation warning changed",
    "conversion strategy changed",
    "conversion review versions changed",
    "preserveUnknownFields changed",
    "scale subresource added",
    "selectable field added",
)


def rows(old_spec: dict, new_spec: dict, docs: Counter) -> list[Row]:
    """Every difference from ``old_spec`` to ``new_spec``; documentation counted in
    ``docs``."""
    old, new = dict(old_spec), dict(new_spec)
    found: list[Row] = []

    def take(key: str, default=None):
        return old.pop(key, default), new.pop(key, default)

    def add(kind: str, detail: str, *keys: str, version: str = "", decided: str = "") -> None:
        row = Row(version, (), kind, detail, keys=keys)
        if decided:
            row.decision, row.evidence = REPORTED, decided
        found.append(row)

    group = take("group")
    if group[0] != group[1]:
        add("group changed", f"{group[0]} -> {group[1]}", "spec.group")
    scope = take("scope", "Namespaced")
    if scope[0] != scope[1]:
        add("scope changed", f"{scope[0]} -> {scope[1]}", "spec.scope")
    found += _names(*take("names", {}))
    found += _conversion(*take("conversion"))
    unknown = take("preserveUnknownFields", False)
    if canon(unknown[0]) != canon(unknown[1]):
        if bool(unknown[0]) == bool(unknown[1]):
            add(
                SAME_MEANING,
                "preserveUnknownFields false spelt out or left out",
                "spec.preserveUnknownFields",
                decided="the same meaning: nothing to judge",
            )
        else:
            add(
                "preserveUnknownFields changed",
                f"{unknown[0]} -> {unknown[1]}",
                "spec.preserveUnknownFields",
            )
    before, after = take("versions", [])
    found += _versions(before or [], after or [], docs)
    found += unclassified(old, new, "", (), "spec")
    return found


def _same_meaning(key: str, before, after) -> Row:
    row = Row("", (), SAME_MEANING, f"{key}: {before} -> {after}", keys=(key,))
    row.decision, row.evidence = REPORTED, "the same meaning spelt differently: nothing to judge"
    return row


def _names(old: dict, new: dict) -> list[Row]:
    old, new = dict(old or {}), dict(new or {})
    found: list[Row] = []
    kinds = (old.get("kind"), new.get("kind"))
    defaults: dict[str, tuple] = {  # what the API server fills in for a name left out
        "singular": tuple(str(k or "").lower() for k in kinds),
        "listKind": tuple(f"{k}List" for k in kinds),
        "shortNames": ([], []),
        "categories": ([], []),
    }
    for key in ("plural", "singular", "kind", "listKind", "shortNames", "categories"):
        raw = old.pop(key, None), new.pop(key, None)
        if canon(raw[0]) == canon(raw[1]):
            continue
        d_old, d_new = defaults.get(key, (None, None))
        before, after = raw[0] or d_old, raw[1] or d_new
        where = f"spec.names.{key}"
        if canon(before) == canon(after):
            found.append(_same_meaning(where, raw[0], raw[1]))
        elif key in ("shortNames", "categories"):
            gone = [n for n in before or [] if n not in (after or [])]
            why = f"kubectl get {', '.join(gone)} no longer finds it" if gone else "only added"
            row = Row("", (), f"{key} changed", f"{key}: {before} -> {after}", keys=(where,))
            row.decision, row.evidence = REPORTED, f"what kubectl users type: {why} (not judged)"
            found.append(row)
        else:
            found.append(
                Row("", (), "names changed", f"names.{key}: {before} -> {after}", keys=(where,))
            )
    return found + unclassified(old, new, "", (), "spec.names")


def _conversion(raw_old, raw_new) -> list[Row]:
    found = _strategy(dict(raw_old or {}), dict(raw_new or {}))
    return cover(found, raw_old, raw_new, "spec.conversion")


def _strategy(old: dict, new: dict) -> list[Row]:
    found: list[Row] = []
    raw = old.pop("strategy", None), new.pop("strategy", None)
    s_old, s_new = raw[0] or "None", raw[1] or "None"
    w_raw = old.pop("webhook", None), new.pop("webhook", None)
    if s_old != s_new:
        row = Row(
            "",
            (),
            "conversion strategy changed",
            f"{s_old} -> {s_new}",
            keys=("spec.conversion.strategy", "spec.conversion.webhook"),
        )
        row.evidence = (
            f"the round trips run under the candidate's strategy ({s_new}); old objects "
            "read and written again under it"
        )
        return [row, *unclassified(old, new, "", (), "spec.conversion")]
    if raw[0] != raw[1]:
        found.append(_same_meaning("spec.conversion.strategy", raw[0], raw[1]))
    w_old, w_new = dict(w_raw[0] or {}), dict(w_raw[1] or {})
    hook: list[Row] = []
    c_old, c_new = w_old.pop("clientConfig", None), w_new.pop("clientConfig", None)
    if canon(c_old) != canon(c_new):
        row = Row(
            "",
            (),
            "conversion webhook changed",
            "clientConfig changed",
            keys=("spec.conversion.webhook.clientConfig",),
        )
        row.decision = REPORTED
        row.evidence = (
            "the gate points every release at the webhook it runs: where your manifests "
            "send conversion reviews is not exercised"
        )
        hook.append(row)
    r_old = w_old.pop("conversionReviewVersions", None)
    r_new = w_new.pop("conversionReviewVersions", None)
    if canon(r_old) != canon(r_new):
        hook.append(
            Row(
                "",
                (),
                "conversion review versions changed",
                f"{r_old} -> {r_new}",
                keys=("spec.conversion.webhook.conversionReviewVersions",),
            )
        )
    hook += unclassified(w_old, w_new, "", (), "spec.conversion.webhook")
    found += cover(hook, w_raw[0], w_raw[1], "spec.conversion.webhook")
    return found + unclassified(old, new, "", (), "spec.conversion")


def _versions(before: list[dict], after: list[dict], docs: Counter) -> list[Row]:
    old = {str(v.get("name")): v for v in before}
    new = {str(v.get("name")): v for v in after}
    found: list[Row] = []
    for name in old:
        if name not in new:
            found.append(
                Row(
                    name,
                    (),
                    "version removed",
                    f"{name} is no longer listed",
                    keys=(f"spec.versions[{name}]",),
                )
            )
    for name in new:
        if name not in old:
            found.append(
                Row(
                    name,
                    (),
                    "version added",
                    f"{name} is listed now",
                    keys=(f"spec.versions[{name}]",),
                )
            )
    moved = [
        n for n in new if n in old and bool(old[n].get("storage")) != bool(new[n].get("storage"))
    ]
    if moved:
        found.append(
            Row(
                "",
                (),
                "storage version changed",
                f"storage {_storage(before)} -> {_storage(after)}",
                keys=tuple(f"spec.versions[{n}].storage" for n in moved),
            )
        )
    for name in new:
        if name in old:
            found += version(name, dict(old[name]), dict(new[name]), docs)
    return found


def _storage(versions: list[dict]) -> str:
    return next((str(v.get("name")) for v in versions if v.get("storage")), "none")
