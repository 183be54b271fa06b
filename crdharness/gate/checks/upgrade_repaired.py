"""Part of check *upgrade*: a write that stores what the object held all along.

A release whose webhook kept a field in an annotation at the storage version (and read it
back elsewhere) stores objects without that field there. Its fixed successor keeps the
field, and still reads the annotation back: an old object written again under it is stored
with the field and without the annotation. Read at the storage version, the field
"appeared" and the annotation went — the same write under the earlier release left both as
they were — yet nothing is lost: the object reads the same at the version written, and the
value that appeared is the one it held there. Said as a note, never a finding; a write that
changes what the object reads at the version written, or a value that came from nowhere,
stays one.
"""

from __future__ import annotations

from crdharness.gate import diff
from crdharness.gate.api import call
from crdharness.gate.checks.upgrade_objects import Written
from crdharness.gate.checks.upgrade_writes import TOUCHED
from crdharness.gate.evidence import schemas
from crdharness.gate.run.context import GateContext

ANNOTATIONS = "metadata.annotations."
REPAIRED = "stored as it reads"  # the note's prefix (no finding)


def explained(
    ctx: GateContext,
    obj: Written,
    version: str,
    at: str,
    before_at_version: dict | None,
    found: list[diff.Difference],
) -> str:
    """Why ``found`` (read at ``at`` after writes at ``version``) is no loss, or "": the
    object reads at ``version`` as it did before the writes; every value that appeared or
    changed at ``at`` is the one it reads at ``version`` at that path; and everything else
    that changed is an annotation the object does not show at ``version`` (the webhook's)."""
    if at == version or before_at_version is None:
        return ""
    now = call(ctx.cluster, "GET", ctx.resource(obj.crd).path(version, obj.namespace, obj.name))
    if not now.ok or diff.differences(
        diff.comparable(before_at_version, ignore_annotations=(TOUCHED,)),
        diff.comparable(now.body, ignore_annotations=(TOUCHED,)),
    ):
        return ""
    # Annotations the object shows at ``version`` are a user's (or the gate's); one shown
    # only at ``at`` is how the webhook keeps something there.
    shown = set((before_at_version.get("metadata") or {}).get("annotations") or {})
    moved, bookkeeping = [], []
    for d in found:
        if d.path.startswith(ANNOTATIONS) and d.path[len(ANNOTATIONS) :] not in shown:
            bookkeeping.append(d)
        elif (
            d.change != "lost"
            and schemas.present(now.body, d.path)
            and diff.same(schemas.value_at(now.body, d.path), d.after)
        ):
            moved.append(d)
        else:
            return ""
    if not moved:
        return ""
    return (
        f"{REPAIRED}: {obj.label} written again at {version}, read at {at}: "
        f"{diff.said(moved)} now stored as it reads at {version}"
        + (f" (the webhook's own {diff.said(bookkeeping)} consumed)" if bookkeeping else "")
        + f"; it reads the same at {version}: nothing lost"
    )
