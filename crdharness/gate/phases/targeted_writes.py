"""Objects built to hold each change the next release makes (``evidence.targeted``),
written under the release before it: the evidence each change's decision rests on."""

from __future__ import annotations

from crdharness.gate import concurrency
from crdharness.gate.api import Answer
from crdharness.gate.checks.upgrade import Written
from crdharness.gate.evidence import changes, old_values, schemas, targeted
from crdharness.gate.evidence.changes import CLEARED, NOT_PROVEN, Change
from crdharness.gate.given.manifests import Release
from crdharness.gate.phases import singletons
from crdharness.gate.phases.history_writes import object_name, write_one
from crdharness.gate.run.context import GateContext


def write(ctx: GateContext, release: Release, upcoming: list[Change]) -> list[Written]:
    """Objects built to hold each change the next release makes (``targeted``), written
    under ``release``; a change none of whose objects could be built or created is decided
    "not proven" here, with the reason. Changes that only need a value present share
    objects (``targeted.groups``); where the server refuses a shared one, the objects it
    stands for are written, each holding one change."""
    built = _build(ctx, release, _buildable(ctx, release, upcoming))
    items, outcomes, held = _write_all(ctx, release, built)
    written = [record for record, _ in outcomes if record is not None]
    for (record, _), holding in zip(outcomes, held, strict=True):
        if record is not None:
            record.changes = holding
    _decide_unheld(release, built, items, outcomes, held)
    if written:
        ctx.report(
            f"gate: release {release.index + 1}: {len(written)} objects built for what "
            f"release {release.index + 2} changes"
        )
    return written


Item = tuple[list[Change], dict, dict, str]  # the changes it holds, version, body, name
Outcome = tuple[Written | None, list[Answer]]
# The changes an object is built for, the version it is written at, and each body with
# the bodies (one per change) it stands for.
Built = tuple[list[Change], dict, list[tuple[dict, list[dict]]]]


def _buildable(
    ctx: GateContext, release: Release, upcoming: list[Change]
) -> list[tuple[Change, dict]]:
    """Each change objects can be built for, with the version entry it is written at; one
    whose CRD ``release`` did not install is decided "not proven" here."""
    buildable: list[tuple[Change, dict]] = []
    for change in upcoming:
        if changes.on_the_crd(change):
            continue  # the CRD's old objects are the evidence (``crd_changes``)
        if change.crd not in ctx.live(release):
            change.decide(
                NOT_PROVEN, f"{change.crd} was not installed under release {release.index + 1}"
            )
            continue
        buildable.append((change, release.entry(change.crd, change.version)))
    return buildable


def _build(ctx: GateContext, release: Release, buildable: list[tuple[Change, dict]]) -> list[Built]:
    """The objects to write now; a singleton's are kept, to be written one at a time at
    the transition (``ctx.pending``)."""
    for change, entry in buildable:
        if singletons.one_at_a_time(release, change.crd):
            ctx.pending.setdefault(release.index, []).extend(
                singletons.Pending(change.crd, entry, body, change=change)
                for body in _bodies(ctx, change, entry)
            )
    entries = {id(c): e for c, e in buildable if not singletons.one_at_a_time(release, c.crd)}
    built: list[Built] = []
    for group in targeted.groups([c for c, _ in buildable if id(c) in entries]):
        entry = entries[id(group[0])]
        if len(group) > 1:
            samples = ctx.sample_bodies(group[0].crd, group[0].version)
            try:
                built.append((group, entry, targeted.shared(group, entry, samples)))
                built += [
                    ([c], entry, [(b, [b]) for b in targeted.beside_filled(c, entry, samples)])
                    for c in group
                ]
                continue
            except Exception:  # built one by one below, each saying why not
                pass
        for change in group:
            if bodies := _bodies(ctx, change, entry):
                built.append(([change], entry, [(body, [body]) for body in bodies]))
    return built


def _write_all(
    ctx: GateContext, release: Release, built: list[Built]
) -> tuple[list[Item], list[Outcome], list[tuple[Change, ...]]]:
    """Every object of ``built`` written (many at once; built one after another, as
    hypothesis draws on one thread), each with the changes it holds as sent. A shared object
    refused, or sent without a change's value as built (the gate repairs what the server's
    own rules refuse): that change's own object is written in its place."""
    items = [
        (group, entry, body, _name(ctx, release, group[0], entry))
        for group, entry, bodies in built
        for body, _ in bodies
    ]
    outcomes = concurrency.each(
        lambda item: _write(ctx, release, item), items, ctx.config.concurrency
    )
    held: list[tuple[Change, ...]] = []
    alone: list[Item] = []
    for (group, entry, body, _), (record, _) in zip(items, outcomes, strict=True):
        # (An object built for one change holds it as before, repaired or not.)
        kept = [
            c
            for c in group
            if record is not None and (len(group) == 1 or _holds(record.sent, body, c.parts))
        ]
        held.append(tuple(kept))
        if len(group) > 1:
            singles = zip(group, _standing_for(built, group, body), strict=True)
            alone += [
                ([c], entry, single, _name(ctx, release, c, entry))
                for c, single in singles
                if not any(c is k for k in kept)
            ]
    items += alone
    outcomes += concurrency.each(
        lambda item: _write(ctx, release, item), alone, ctx.config.concurrency
    )
    held += [tuple(group) for group, _, _, _ in alone]
    return items, outcomes, held


def _decide_unheld(
    release: Release,
    built: list[Built],
    items: list[Item],
    outcomes: list[Outcome],
    held: list[tuple[Change, ...]],
) -> None:
    """A change no created object holds: "not proven", saying why its objects were not."""
    holding_now = [(record, kept) for (record, _), kept in zip(outcomes, held, strict=True)]
    each = {id(c): c for group, _, _ in built for c in group}.values()
    for change in each:
        if any(
            record is not None and any(c is change for c in kept) for record, kept in holding_now
        ):
            continue
        mine = [o for i, o in zip(items, outcomes, strict=True) if any(c is change for c in i[0])]
        refusals = [answer for _, answers in mine for answer in answers]
        why = refusals[0].message[:300] if refusals else "its conversion for storage failed"
        change.decide(
            NOT_PROVEN,
            f"none of the {len(mine)} objects holding it could be created under release "
            f"{release.index + 1}: {why}",
        )


def _write(ctx: GateContext, release: Release, item: Item) -> Outcome:
    group, entry, body, obj_name = item
    refusals: list[Answer] = []
    return write_one(ctx, release, group[0].crd, entry, body, obj_name, refusals), refusals


def _name(ctx: GateContext, release: Release, change: Change, entry: dict) -> str:
    return object_name(ctx, release, "t", change.version, entry, change.crd)


def _holds(sent: dict, built: dict, parts: tuple[str, ...]) -> bool:
    """Whether ``sent`` holds at ``parts`` what ``built`` does (``[]``: the first item;
    ``*``: the key ``targeted`` builds a map's entry under)."""
    concrete = ["[0]" if p == "[]" else "gate" if p == "*" else p for p in parts]
    return schemas.walk(sent, concrete) == schemas.walk(built, concrete)


def _standing_for(built, group: list[Change], body: dict) -> list[dict]:
    """The bodies, one per change of ``group``, that the shared ``body`` stands for."""
    return next(alone for g, _, bodies in built if g is group for b, alone in bodies if b is body)


def _bodies(ctx: GateContext, change: Change, entry: dict) -> list[dict]:
    """The objects holding ``change`` alone (``targeted.bodies``); none, with the change
    decided "not proven" saying why, where none can be built."""
    try:
        return targeted.bodies(change, entry, ctx.sample_bodies(change.crd, change.version))
    except old_values.Harmless as exc:
        change.decide(CLEARED, str(exc))
    except old_values.NoObject as exc:
        change.decide(NOT_PROVEN, f"no object holding it could be built: {exc}")
    except Exception as exc:  # the gate's own failure for this change: undecided, said so
        change.decide(
            NOT_PROVEN,
            f"the gate could not build an object holding it: {type(exc).__name__}: {exc}",
        )
    return []
