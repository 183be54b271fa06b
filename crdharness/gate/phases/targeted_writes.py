"""Objects built to hold each change the next release makes (``evidence.targeted``),
written under the release before it: the evidence each change's decision rests on."""

from __future__ import annotations

from crdharness.gate import concurrency
from crdharness.gate.api import Answer
from crdharness.gate.checks.upgrade import Written
from crdharness.gate.evidence import changes, old_values, targeted
from crdharness.gate.evidence.changes import NOT_PROVEN, Change
from crdharness.gate.given.manifests import Release
from crdharness.gate.phases import singletons
from crdharness.gate.phases.history_writes import object_name, write_one
from crdharness.gate.run.context import GateContext


def write(ctx: GateContext, release: Release, upcoming: list[Change]) -> list[Written]:
    """Objects built to hold each change the next release makes (``targeted``), written
    under ``release``; a change none of whose objects could be built or created is decided
    "not proven" here, with the reason."""
    built: list[tuple[Change, dict, list[dict]]] = []  # change, its version, its objects
    for change in upcoming:
        if changes.on_the_crd(change):
            continue  # the CRD's old objects are the evidence (``crd_changes``)
        if change.crd not in ctx.live(release):
            change.decide(
                NOT_PROVEN, f"{change.crd} was not installed under release {release.index + 1}"
            )
            continue
        entry = release.entry(change.crd, change.version)
        try:
            bodies = targeted.bodies(change, entry, ctx.sample_bodies(change.crd, change.version))
        except old_values.NoObject as exc:
            change.decide(NOT_PROVEN, f"no object holding it could be built: {exc}")
            continue
        except Exception as exc:  # the gate's own failure for this change: undecided, said so
            change.decide(
                NOT_PROVEN,
                f"the gate could not build an object holding it: {type(exc).__name__}: {exc}",
            )
            continue
        built.append((change, entry, bodies))
    # A singleton's are kept, to be written one at a time at the transition.
    for change, entry, bodies in built:
        if singletons.one_at_a_time(release, change.crd):
            ctx.pending.setdefault(release.index, []).extend(
                singletons.Pending(change.crd, entry, body, change=change) for body in bodies
            )
    built = [b for b in built if not singletons.one_at_a_time(release, b[0].crd)]
    # Built one after another (hypothesis draws on one thread), written many at once.
    items = [
        (change, entry, body, object_name(ctx, release, "t", change.version, entry, change.crd))
        for change, entry, bodies in built
        for body in bodies
    ]

    def write(item: tuple[Change, dict, dict, str]) -> tuple[Written | None, list[Answer]]:
        change, entry, body, obj_name = item
        refusals: list[Answer] = []
        return write_one(ctx, release, change.crd, entry, body, obj_name, refusals), refusals

    outcomes = concurrency.each(write, items, ctx.config.concurrency)
    written = []
    for change, _, bodies in built:
        mine = [outcome for item, outcome in zip(items, outcomes, strict=True) if item[0] is change]
        for record, _ in mine:
            if record is not None:
                record.change = change
                written.append(record)
        if not any(record is not None for record, _ in mine):
            refusals = [answer for _, answers in mine for answer in answers]
            why = refusals[0].message[:300] if refusals else "its conversion for storage failed"
            change.decide(
                NOT_PROVEN,
                f"none of the {len(bodies)} objects holding it could be created under release "
                f"{release.index + 1}: {why}",
            )
    if written:
        ctx.report(
            f"gate: release {release.index + 1}: {len(written)} objects built for what "
            f"release {release.index + 2} changes"
        )
    return written
