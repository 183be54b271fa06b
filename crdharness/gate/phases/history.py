"""Phase *history*: replay the release history on the cluster as clusters live it (checks
*install*, *upgrade*, *migration*; the removal policy and Warning headers come from
``deprecation``, the migrations a release ships from ``migration``).

Each release is applied on top of the previous one. Objects written at every served version
under release i must read back unchanged under release i+1 (GET and LIST at every served
version) with their etcd keys untouched, and must still be writable (``upgrade_writes``).
Nothing migrates unless the gate file says the release ships a migration, so
``status.storedVersions`` accumulates exactly as the API server keeps it, and a release that
removes a version still listed there is refused (422) as it would be on a real cluster.

A release is many CRDs: one CRD the API server refuses is left out of the later releases
(they cannot be applied on top of it); the others go on.
"""

from __future__ import annotations

from crdharness.gate import concurrency, subjects
from crdharness.gate.api import (
    Answer,
    ensure_namespace,
)
from crdharness.gate.checks import (
    crd_behaviour,
    deprecation,
    migration,
    previous_release,
    upgrade,
)
from crdharness.gate.checks.upgrade import Written
from crdharness.gate.evidence import changes, targeted
from crdharness.gate.evidence.changes import NOT_PROVEN, Change
from crdharness.gate.given.manifests import Release
from crdharness.gate.phases import install, replay, singletons
from crdharness.gate.phases.object_writes import object_name, write_objects, write_one
from crdharness.gate.run.context import HISTORY_NS, GateContext


def run(ctx: GateContext) -> None:
    ensure_namespace(ctx.cluster, HISTORY_NS)
    for release in ctx.releases[1:]:
        ignored = ctx.ignored_documentation[release.index]
        ctx.changes[release.index] = [
            change
            for name in release.crds
            for change in changes.between(ctx.releases[release.index - 1], release, name, ignored)
        ]
    written: list[Written] = []
    for release in ctx.releases:
        i = release.index
        live = ctx.live(release)
        if not live:
            upgrade.decide(ctx, release, written)
            continue  # every CRD of it was refused earlier: its checks are not reached
        ctx.report(f"gate: release {i + 1}/{len(ctx.releases)} ({release.label})")
        ctx.check_deadline(f"release {i + 1}")
        ctx.working_on(
            *(
                p.key
                for p in ctx.planned
                if p.phase == "history" and subjects.about_release(p.subject, i)
            )
        )
        written = [w for w in written if w.crd not in ctx.refused_crds]
        before = upgrade.etcd_snapshot(ctx, written) if i else {}
        stored_before = {name: migration.stored_versions(ctx.cluster, name) for name in live}
        if i:  # decided from the manifests alone: also for a release the server refuses
            deprecation.check_removal_policy(ctx, release)
        from_source = ctx.source is not None and i == 0
        first = replay.first_install(ctx.source, release) if ctx.source and from_source else None
        with ctx.timed("history: install and wait"):
            refused = install.apply_release(ctx, release, live, stored_before, first)
        if ctx.source is not None and i and refused:  # what follows the migration it needs
            migrated = replay.migrate_first(ctx, release, refused, stored_before)
            refused -= migrated
            if migrated:  # its objects were written back: their keys moved, on purpose
                before = upgrade.etcd_snapshot(ctx, written)
                stored_before |= {n: migration.stored_versions(ctx.cluster, n) for n in migrated}
        ctx.refused_crds |= refused
        live = ctx.live(release)
        if not live:
            upgrade.decide(ctx, release, written)
            continue  # nothing of this release is on the cluster: the rest is not reached
        written = [w for w in written if w.crd not in ctx.refused_crds]
        before = {key: v for key, v in before.items() if key[0] not in ctx.refused_crds}
        if i:
            with ctx.timed("history: upgrade reads and writes"):
                crd_behaviour.after(ctx, release)  # on copies: before reads it must not touch
                judged = singletons.judge(ctx, release, stored_before, write_one)
                upgrade.check(ctx, release, written, before, stored_before, judged)
        with ctx.timed("history: deprecation warnings"):
            deprecation.check_warnings(ctx, release, subjects.release(i))
        if from_source:  # the source cluster's objects, and its storedVersions
            fresh = replay.write_captured(ctx, release, write_one)
            replay.replay_stored_versions(ctx, release)
        else:
            with ctx.timed("history: generate and write objects"):
                fresh = write_objects(ctx, release)
        if release is not ctx.candidate:
            if not from_source:
                with ctx.timed("history: objects for the changes"):
                    fresh += write_targeted(ctx, release, ctx.changes.get(i + 1, []))
                    crd_behaviour.before(ctx, release, ctx.changes.get(i + 1, []), fresh)
            with ctx.timed("history: upgrade baseline writes"):
                upgrade.write_baseline(ctx, release, fresh)
        written += fresh
        previous_release.run(ctx, release)  # the candidate's predecessor, while installed
        with ctx.timed("history: migration and storedVersions"):
            migration.check(ctx, release, live, stored_before)
        ctx.stored_after[i] = {name: migration.stored_versions(ctx.cluster, name) for name in live}
    ctx.history_completed = True  # to its end: refused CRDs are in refused_crds
    ctx.working_on()


def write_targeted(ctx: GateContext, release: Release, upcoming: list[Change]) -> list[Written]:
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
        except targeted.NoObject as exc:
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
