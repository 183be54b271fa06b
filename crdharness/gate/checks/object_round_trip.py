"""One object's round trip between versions A and B of the candidate (or, for its debt, of
the release before it, while the history has that one installed): create at A (its
status through /status), read at B, write it back at B (and its status), read at A. It
returns the failure it found, or None; a version pair's search (``round_trips``) decides
what to make of it. Nothing here writes a check's result: counts and the differences that
are not findings go to the pair's ``PairRecord``.
"""

from __future__ import annotations

from crdharness.gate import diff
from crdharness.gate.api import Answer, Resource, call
from crdharness.gate.checks import (
    annotation_objects,
    same_write,
    seen_at_b,
    status_anew,
    upgrade_writes,
)
from crdharness.gate.checks.pair_record import PairRecord
from crdharness.gate.checks.respelling import TOUCH, respelt
from crdharness.gate.checks.round_trip_steps import (
    Steps,
    fields_gone,
    judged_with,
    lost_beyond_b,
    lost_on_write,
    parents_lost,
    read_differently,
)
from crdharness.gate.evidence import coverage, names, objects, pruning
from crdharness.gate.given.manifests import Release
from crdharness.gate.results import NotConvertible, RefusedWrite, RoundTripFailure
from crdharness.gate.run.context import ROUND_TRIP_NS, GateContext


def run(
    ctx: GateContext,
    manifest,
    entry,
    a,
    b,
    body,
    seen: PairRecord,
    sample: bool = False,
    *,
    release: Release | None = None,
    refusals: list[Answer] | None = None,
) -> RoundTripFailure | None:
    """One object's round trip between ``release``'s versions (default: the candidate's); a
    refusal at creation is counted, and given ``refusals`` also added to it (the caller may
    try another value), as is the answer of a creation whose conversion failed."""
    release = release or ctx.candidate
    resource = Resource.of(manifest)
    namespace = ROUND_TRIP_NS if resource.namespaced else None
    name = ctx.name(f"rt-{a}-{b}".lower(), entry, manifest["metadata"]["name"])
    # A singleton's (a name the schema fixes) wait for each other: one at a time.
    with ctx.held(manifest["metadata"]["name"], namespace, name, entry):
        return _run_named(
            ctx, release, manifest, entry, a, b, body, seen, sample, refusals, namespace, name
        )


def _run_named(
    ctx: GateContext,
    release: Release,
    manifest,
    entry,
    a,
    b,
    body,
    seen: PairRecord,
    sample: bool,
    refusals: list[Answer] | None,
    namespace: str | None,
    name: str,
) -> RoundTripFailure | None:
    resource = Resource.of(manifest)
    # A body found for another version (or a sample) may hold fields A's schema does not
    # declare: sent at A, the API server would prune them before any conversion, and the
    # loss would look like the webhook's. They are left out, and said so.
    body, dropped = pruning.sendable(entry, body)
    seen.note_pruned([pruning.left_out(path, a) for path in dropped])
    # A generated object the API server's own rules refuse is repaired first, or not sent.
    body, refused = ctx.screening.screen(manifest, entry, body, name, namespace)
    if refused is not None:
        if refusals is not None:
            refusals.append(refused)
        ctx.count_refusal(refused)
        seen.counts["refused"] += 1
        return None
    try:
        created = ctx.create(manifest, entry, a, name, namespace, body, refusals)
        for answer in refusals or []:
            ctx.count_refusal(answer)
    except NotConvertible as failure:
        failure.untraced()
        if refusals is not None and failure.answer is not None:
            # The caller may try another value: a webhook that fails on "gate-value" (a Go
            # duration's field, `type: string` in the schema) may take "1h".
            refusals.append(failure.answer)
        if sample or not ctx.config.admission:
            same_write.note(seen.written, body, failure)
            return failure
        # The project's admission webhooks run before validation, each on the object
        # converted to its own version (matchPolicy Equivalent): a drawn object they would
        # have refused can fail that conversion first (seen: kubebuilder's CronJob, whose
        # webhook parses the cron schedule its validating webhook checks). Not proof.
        why = f"could not be created at {a} (a conversion the admission webhooks need failed)"
        ctx.count(why, failure.evidence)
        seen.counts["refused"] += 1
        return None
    if created is None:
        seen.counts["refused"] += 1
        return None
    seen.counts["created"] += 1
    held = coverage.held(objects.body_schema(entry), objects.intent(body))
    compared = seen.counts["compared"]
    meanwhile = seen.counts["written meanwhile"]
    unwritten = seen.counts[status_anew.NOT_ANEW]
    try:
        found = _compare(ctx, release, resource, namespace, name, a, b, body, created, seen)
        # Else not known how it ends: another client wrote it, or its status was not written
        # anew (a release whose write "went through" must have had each step made).
        if (seen.counts["written meanwhile"], seen.counts[status_anew.NOT_ANEW]) == (
            meanwhile,
            unwritten,
        ):
            same_write.note(seen.written, body, found)
        # A path is exercised once the object went the whole way round, or where the
        # round trip failed on it; the others of an object it stopped early for were not
        # (another object must hold them), nor those whose parent was lost whole.
        if seen.counts["compared"] > compared:
            parents = parents_lost(held, found.paths) if found is not None else {}
            below = set(parents)
            seen.held |= held - below
            seen.stopped |= below
            seen.parents_lost.update(parents)
            if found is not None and found.lost:
                crd = _crd_of(ctx, resource)
                b_schema = objects.body_schema(release.entry(crd, b))
                if below:
                    seen.lost_whole.update(lost_beyond_b(below, found.lost, b_schema, b))
                # Pruned at B whatever it holds: not so through a webhook, which may carry
                # one content where it fails on another.
                if not ctx.by_webhook(release, crd):
                    seen.gone.update(dict.fromkeys(fields_gone(found.lost, b_schema), b))
        elif found is not None:
            went = judged_with(held, found.paths)
            seen.held |= went
            seen.stopped |= held - went
        return found
    finally:
        # At the storage version where it is served: the answer needs no conversion.
        crd = _crd_of(ctx, resource)
        storage = release.storage(crd)
        at = storage if storage in release.served(crd) else a
        call(ctx.cluster, "DELETE", resource.path(at, namespace, name))


def _compare(
    ctx: GateContext, release: Release, resource, namespace, name, a, b, body, created, seen
):
    """``created`` is the server's answer to the write at A: the object as stored and read
    back at A (the server decodes what it wrote to etcd and converts it to A), so no GET.

    A difference at one step does not end the round trip: the object goes the whole way
    round and every step's differences are reported together. A second loss on the way
    back, hidden behind the first, would otherwise show only after the first was fixed, and
    the previous release's debt would be known only in part (seen: prometheus-operator's
    ``continue`` lost at B hid ``updateAlerts`` lost on the way back to A)."""
    crd = _crd_of(ctx, resource)
    schema = objects.body_schema(release.entry(crd, a))
    sent = objects.manifest(release.crds[crd], a, name, namespace, body)
    original = created
    # The server's answer, not what was sent: defaults and a webhook's zero values in it.
    shown = [(f"created at {a} (as the API server answered)", _clean(original))]
    steps = Steps(schema)
    # What was written must read back at the same version: a version other than the
    # storage version goes through the webhook on the way in, and can lose data there.
    lost, notes = lost_on_write(release.entry(crd, a), a, body, sent["metadata"], original)
    seen.note_pruned(notes)
    lost = _judged(ctx, release, seen, lost, crd, a, b)
    if lost:
        shown = [(f"sent at {a}", sent), (f"read back at {a}", _clean(original))]
        steps.add(f"written at {a}, read back at {a}: changed {{paths}}", lost)
    at_b = call(ctx.cluster, "GET", resource.path(b, namespace, name))
    if not at_b.ok:
        return steps.or_else(
            _not_convertible(
                f"an object valid at {a} cannot be read at {b}", f"GET at {b}", at_b, shown
            )
        )
    if _version_of(at_b.body) != _version_of(original):
        return _written_meanwhile(seen)
    shown.append((f"read at {b}", _clean(at_b.body)))
    remade = _created_again(ctx, release, crd, resource, namespace, name, b, at_b.body, shown)
    if remade is None:
        where = (resource, namespace)
        remade = status_anew.written(ctx, release, crd, where, (a, b), at_b.body, seen, shown)
    # A field with the same path and type at both versions means the same at both: a
    # webhook that swaps two fields both ways survives A->B->A, yet every client of B
    # reads wrong values.
    moved = read_differently(release, crd, a, b, original, at_b.body)
    moved = _judged(ctx, release, seen, moved, crd, a, b)
    if moved:
        headline = f"written at {a}, read at {b}: {{paths}} (same path and type at both) lost "
        headline += f"or changed at {b}"
        steps.add(headline, moved, detail=f"at {a} -> at {b}: ", at_b=True)

    def touch(current: dict) -> dict:
        current.setdefault("metadata", {}).setdefault("annotations", {})[TOUCH] = b
        return current

    # Each write sends exactly what was read: a conflict means another client (the
    # project's own controllers run beside its webhook) wrote the object meanwhile.
    path = resource.path(b, namespace, name)
    updated = call(ctx.cluster, "PUT", path, touch(at_b.body))
    if updated.status == 409:
        return _written_meanwhile(seen)
    if not updated.ok:
        return steps.or_else(
            _not_convertible(
                f"an object read at {b} cannot be written back at {b}",
                f"PUT at {b}",
                updated,
                shown,
                update=True,
            )
        )
    if objects.has_status(release.entry(crd, b)):  # through its own endpoint
        status = call(ctx.cluster, "PUT", path + "/status", updated.body)
        if status.status == 409:
            return _written_meanwhile(seen)
        updated = status
        if not status.ok:
            return steps.or_else(
                _not_convertible(
                    f"an object read at {b} cannot have its status written at {b}",
                    f"PUT {b}/status",
                    status,
                    shown,
                    update=True,
                )
            )
    back = call(ctx.cluster, "GET", resource.path(a, namespace, name))
    if not back.ok:
        return steps.or_else(
            _not_convertible(
                f"an object written at {b} cannot be read at {a}", f"GET at {a}", back, shown
            )
        )
    if _version_of(back.body) != _version_of(updated.body):
        return _written_meanwhile(seen)
    shown.append((f"read back at {a}", _clean(back.body)))
    seen.counts["compared"] += 1
    found = diff.differences(
        diff.comparable(original), diff.comparable(back.body, ignore_annotations=(TOUCH,))
    )
    # An annotation the webhook added (not on the object written) is its bookkeeping: listed
    # apart, a finding only under strict; one the user wrote is judged as data.
    found, own = annotation_objects.own_annotations(found, sent)
    if ctx.config.strict:
        found += own
    else:
        seen.note_own(annotation_objects.notes(own, a, b))
    # A field already lost or changed at B is lost on the way back too: one loss, named once.
    found = [d for d in _judged(ctx, release, seen, found, crd, a, b) if d.path not in steps.named]
    if found and not steps.found and not ctx.config.strict and respelt(found, at_b, updated):
        note = f"{a}->{b}->{a}: " + "; ".join(d.describe() for d in found)
        note += f" (re-spelt by the webhook: reads the same at {b} before and after)"
        if note not in seen.respelt:
            seen.respelt.append(note)
        found = []
    if found or steps.found or remade is not None:  # its loss is the finding: not probed
        if found:
            steps.add(f"{a}->{b}->{a} changed {{paths}}", found)
        if seen_at_b.added_keys(sent, at_b.body):
            seen.counts[seen_at_b.NOT_PROBED] += 1
    else:  # what a client of B sees, where it could differ
        where, judged = (namespace, name), lambda d: _judged(ctx, release, seen, d, crd, a, b)
        hidden = seen_at_b.probe(
            ctx, release, crd, resource, where, a, b, sent, original, at_b.body, judged
        )
        seen_at_b.settle(hidden, seen, steps, ctx.config.strict, (a, b), name)
    changed = steps.failure(shown)
    if changed is not None and remade is not None:
        seen.also.append(remade)
        changed.refusal = remade
    return changed or remade


def _created_again(
    ctx: GateContext, release: Release, crd: str, resource, namespace, name, b, read, shown
) -> NotConvertible | None:
    """What was read at B must be writable as read: a restore, a GitOps re-apply or
    ``kubectl get -o yaml | kubectl create`` creates it again. An update of the object passes
    on ratcheting (values it leaves unchanged are not judged again), so only a re-create (a
    dry run) shows a value the webhook made that B's schema refuses (seen: a Go field
    without ``omitempty`` answered as ``""`` where the schema says ``minLength: 1``). The
    refusal, as a failure, or None."""
    collection = resource.path(b, namespace)
    rule = names.rule(release.entry(crd, b))
    _, refused, _ = upgrade_writes.recreate_dry_run(ctx.cluster, collection, read, rule)
    if refused is None:
        return None
    # (A server-side apply of the same content by a new field manager is an update, passed on
    # ratcheting: in the outside trial it refused nothing, and cost two reviews per object.)
    line = (
        f"created again at {b} as read there (dry run): {refused.status} "
        f"{upgrade_writes.as_named(refused.message, read)}"
    )
    # The fields the server refused: a change's object is proven only by a refusal of its own.
    refused_paths = {diff.schema_path(p) for p in diff.named_paths(refused.message)}
    failure = NotConvertible(
        f"an object read at {b} cannot be created again as read (a restore, a re-apply, or "
        f"kubectl get -o yaml | kubectl create): {line}",
        [line],
        list(shown),
        refused_paths,
    )
    failure.refused = RefusedWrite(ratcheted=False, message=refused.message)
    return failure


def _judged(
    ctx: GateContext, release: Release, seen: PairRecord, found: list, crd: str, a: str, b: str
) -> list:
    """The differences that are findings: not excused by an ``allow`` entry (noted in
    ``seen.allowed``) and, unless ``strict``, not an empty value, or a zero value of a
    field with no default, that came back absent or the reverse (noted in
    ``seen.normalised``)."""
    findings = []
    for d in found:
        excuse = ctx.excused(d, a, b, crd, release)
        if excuse is None:
            findings.append(d)
            continue
        kind, note = excuse
        noted = seen.allowed if kind == "allowed" else seen.normalised
        if note not in noted:
            noted.append(note)
    return findings


def _crd_of(ctx: GateContext, resource: Resource) -> str:
    return f"{resource.plural}.{resource.group}"


def _not_convertible(
    what: str, request: str, answer: Answer, shown: list, update: bool = False
) -> NotConvertible:
    """A step of the round trip the server refused or failed: ``what`` could not be done
    (``update``: an update of the object, which the server ratchets)."""
    failure = NotConvertible(
        f"{what}: {answer.message}", [f"{request}: {answer.status} {answer.message}"], shown
    )
    if update and 400 <= answer.status < 500:
        failure.refused = RefusedWrite(ratcheted=True, message=answer.message)
    return failure


def _version_of(obj: dict) -> str | None:
    return (obj.get("metadata") or {}).get("resourceVersion")


def _written_meanwhile(seen: PairRecord) -> None:
    """Another client wrote the object during its round trip: not the webhook's doing, so
    not compared (counted, and said in the evidence)."""
    seen.counts["written meanwhile"] += 1
    return None


def _paths(found: list) -> frozenset[str]:
    """The schema paths of differences: one defect at several list items is one finding."""
    return frozenset(diff.schema_path(d.path) for d in found)


def _clean(obj: dict) -> dict:
    """An object as a person wants to see it: without managedFields and server bookkeeping."""
    shown = diff.comparable(obj)
    shown["apiVersion"] = obj.get("apiVersion")
    return {"apiVersion": shown.pop("apiVersion"), **shown}
