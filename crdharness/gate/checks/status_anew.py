"""Part of check *convertibility*, in each object's round trip (``object_round_trip``): the
status read at B written anew, through ``/status``, on a new copy of the object."""

from __future__ import annotations

import json

from crdharness.gate import diff
from crdharness.gate.checks import upgrade_writes
from crdharness.gate.evidence import names, objects
from crdharness.gate.given.manifests import Release
from crdharness.gate.results import NotConvertible, RefusedWrite
from crdharness.gate.run.context import GateContext

STATUSES_ANEW = 8  # distinct statuses read at B written anew on a new copy, per version pair
STATUS_ANEW = "statuses written anew"  # counted per pair, said in convertibility's evidence
# Objects whose status was not written anew (the pair's distinct statuses were used up): how
# their writes ended is not known, so ``same_write`` notes nothing for them.
NOT_ANEW = "statuses not written anew"


def written(
    ctx: GateContext, release: Release, crd: str, where, pair, read, seen, shown
) -> NotConvertible | None:
    """The status read at B written through ``/status`` to a new copy of the object (deleted
    after): the round trip writes it back on the object itself, where the API server ratchets
    unchanged values, and a create ignores status, so a status the webhook makes that B's
    schema refuses (a Go field without ``omitempty`` answered as ``""`` where B has an enum)
    shows only when a controller sets it anew, or a restore writes it. Only where a webhook
    converts (with strategy None, B reads what A validated, pruned: schemas-vs-strategy
    judges that), each distinct status once, up to ``STATUSES_ANEW`` per pair: a status
    already written gets the answer it got then (the same status, the same schema), one past
    them is counted as not written anew. The refusal, as a failure, or None."""
    (resource, namespace), (a, b) = where, pair
    status = read.get("status")
    if not status or not objects.has_status(release.entry(crd, b)):
        return None
    if not ctx.by_webhook(release, crd):
        # An earlier release without a webhook, before a candidate with one: how this write
        # of its would have ended is not known (``same_write`` must not say it went through).
        if release is not ctx.candidate and ctx.by_webhook(ctx.candidate, crd):
            seen.counts[NOT_ANEW] += 1
        return None
    done = ctx.statuses_anew.setdefault((release.index, crd, a, b), {})
    key = json.dumps(status, sort_keys=True)
    if key in done:
        refused = done[key]
    elif len(done) >= STATUSES_ANEW:
        seen.counts[NOT_ANEW] += 1
        return None
    else:
        seen.counts[STATUS_ANEW] += 1
        collection = resource.path(b, namespace)
        again = upgrade_writes.recreated_body(read, names.rule(release.entry(crd, b)))
        refused = done[key] = upgrade_writes.status_written_anew(
            ctx.cluster, collection, again, status
        )
        if refused is not None and refused[0] == upgrade_writes.CONFLICT:
            del done[key]  # another client kept writing the copy: not known, not kept
            seen.counts[STATUS_ANEW] -= 1
            seen.counts[NOT_ANEW] += 1
            return None
    if refused is None:
        return None
    line = (
        f"its status written anew at {b} through /status on a new copy (as a controller setting "
        f"it, or a restore, would): {refused[0]} {upgrade_writes.as_named(refused[1], read)}"
    )
    failure = NotConvertible(
        f"an object read at {b} cannot have its status written anew at {b} (only the "
        f"object's own update of it passes, as the API server ratchets unchanged values): {line}",
        [line],
        list(shown),
        {diff.schema_path(p) for p in diff.named_paths(refused[1])},
    )
    failure.refused = RefusedWrite(ratcheted=False, message=refused[1])  # a new copy's status
    return failure
