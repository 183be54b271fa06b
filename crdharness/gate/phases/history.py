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

import itertools
from collections.abc import Iterator

from crdharness.gate import concurrency, subjects
from crdharness.gate.api import (
    Answer,
    Resource,
    call,
    ensure_namespace,
)
from crdharness.gate.checks import (
    crd_behaviour,
    deprecation,
    migration,
    previous_release,
    upgrade,
    upgrade_set_apart,
)
from crdharness.gate.checks.upgrade import Written
from crdharness.gate.evidence import (
    branch_objects,
    changes,
    coverage_objects,
    objects,
)
from crdharness.gate.given.manifests import Release
from crdharness.gate.phases import install, replay, singletons, targeted_writes
from crdharness.gate.phases.history_writes import object_name, write_one
from crdharness.gate.run import floor
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
    changed = {change.crd for found in ctx.changes.values() for change in found}
    ctx.not_installed = floor.changed_groups(ctx.not_installed, changed)
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
        applied = ctx.releases[i - 1] if i else None  # what the cluster has before this one
        stored_before = {name: migration.stored_on(ctx, name, applied) for name in live}
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
                    fresh += targeted_writes.write(ctx, release, ctx.changes.get(i + 1, []))
                    crd_behaviour.before(ctx, release, ctx.changes.get(i + 1, []), fresh)
            with ctx.timed("history: upgrade baseline writes"):
                upgrade.write_baseline(ctx, release, fresh)
        written += fresh
        if release is not ctx.candidate:  # what the next release's install must not meet
            with ctx.timed("history: objects its own release can no longer read"):
                written = upgrade_set_apart.set_apart_unreadable(ctx, release, written)
        previous_release.run(ctx, release)  # the candidate's predecessor, while installed
        with ctx.timed("history: migration and storedVersions"):
            migration.check(ctx, release, live, stored_before)
        ctx.stored_after[i] = {name: migration.stored_on(ctx, name, release) for name in live}
    ctx.history_completed = True  # to its end: refused CRDs are in refused_crds
    ctx.working_on()


DRAWS_PER_OBJECT = 3  # drawn per generated object wanted, for the server's refusals


def write_objects(
    ctx: GateContext, release: Release, count: int | None = None, prefix: str = "r"
) -> list[Written]:
    """Objects at every served version (samples, then ``count`` generated, by default
    enough for ``min_objects`` per CRD and at least ``upgrade_objects`` per version), read
    back at each."""
    written = []
    for name in ctx.live(release):
        if not ctx.writes_for(release, name):
            continue  # unchanged: listed, not judged again (``evidence.unchanged``)
        served = [e for e in release.versions(name) if e.get("served")]
        if count is None:
            per_version = -(-ctx.config.min_objects // max(len(served), 1))
            wanted = max(ctx.config.upgrade_objects, per_version)
        else:
            wanted = count
        for entry in served:
            written += _write_version(ctx, release, name, entry, wanted, prefix)
    ctx.report(f"gate: release {release.index + 1}: {len(written)} objects written")
    return written


def _write_version(
    ctx: GateContext, release: Release, name: str, entry: dict, wanted: int, prefix: str
) -> list[Written]:
    """The user's samples of ``name`` at ``entry``'s version, then coverage objects and drawn
    ones until ``wanted`` more are accepted: ``concurrency`` at once, kept in order."""
    version = entry["name"]
    # A source cluster's objects are the samples of the round trips; the history replays
    # them itself (``replay``).
    samples = [] if ctx.source else ctx.sample_bodies(name, version)
    # Every declared path first (as in the round trips), counted among the objects wanted;
    # then drawn ones, as many more as the server refuses.
    with ctx.timed(DRAWING):
        built = coverage_objects.bodies(entry)
    drawn = itertools.chain(built, _drawn(ctx, entry, max(wanted - len(built), 0), wanted))
    wanted = max(wanted, len(built))
    # The user's samples are written for the candidate: one it refuses is a finding (any
    # other release may predate the sample's fields).
    judged = release is ctx.candidate
    if singletons.one_at_a_time(release, name):
        return _keep(ctx, release, name, entry, samples, [*drawn], wanted)
    batch = [(body, True) for body in samples] + [
        (b, False) for b in itertools.islice(drawn, wanted)
    ]
    written: list[Written] = []
    bodies: list[tuple[dict, bool]] = []  # the bodies of ``written``, in order
    accepted = 0

    def write(item: tuple[dict, bool, str]) -> tuple[Written | None, list[Answer]]:
        body, sample, obj_name = item
        refusals: list[Answer] = []
        record = write_one(ctx, release, name, entry, body, obj_name, refusals if sample else None)
        return record, refusals

    def write_all(batch: list[tuple[dict, bool]]) -> int:
        # Named here, in order: the same run names the same objects the same way.
        named = [
            (body, sample, object_name(ctx, release, prefix, version, entry, name))
            for body, sample in batch
        ]
        outcomes = concurrency.each(write, named, ctx.config.concurrency)
        accepted = 0
        for (body, sample), (record, refusals) in zip(batch, outcomes, strict=True):
            for answer in refusals:
                if judged:
                    _sample_refused(ctx, release, name, version, body, answer)
                else:  # an earlier release's: counted, and kept for the candidate's judgement
                    ctx.count_refusal(answer)
                    ctx.note_sample_refused(release.index, name, version, body, answer)
            if record is not None:
                record.sample = sample
                record.sample_name = str(body.get(objects.NAME, "")) if sample else ""
                accepted += not sample
                written.append(record)
                bodies.append((body, sample))
        return accepted

    while batch:
        accepted += write_all(batch)
        batch = [(b, False) for b in itertools.islice(drawn, max(wanted - accepted, 0))]
    # The paths a rule let no coverage object keep (one branch of a choice each): more
    # objects for them, a bounded few, where no round trip will try them on its own (one
    # served version; ``path_coverage`` does that for a pair).
    if len(release.served(name)) == 1:
        branch_objects.fill(
            objects.body_schema(entry),
            built,
            lambda: [w.sent for w in written if not w.sample],
            lambda extra: write_all([(b, False) for b in extra]),
        )
    return written + _kept_as_stored(ctx, release, name, entry, bodies)


# Objects per version written once under a release with its own webhook, and kept: the
# user's samples (what clusters hold), then the objects built to hold every declared path.
KEPT_SAMPLES, KEPT_BUILT = 5, 2


def _kept_as_stored(
    ctx: GateContext, release: Release, name: str, entry: dict, bodies: list[tuple[dict, bool]]
) -> list[Written]:
    """Copies of the first objects accepted (the user's samples, then others), written once at a
    version ``release``'s own webhook converts from and never written again: what a
    cluster's objects are, stored by that webhook, when the candidate comes (the others are
    rewritten by the upgrade's writes first). None for the candidate, a source cluster's
    replay, or the storage version (stored as written, not converted)."""
    version = entry["name"]
    if release is ctx.candidate or ctx.source is not None or version == release.storage(name):
        return []
    if not ctx.own_webhook(release, name):
        return []
    kept = []
    chosen = [b for b in bodies if b[1]][:KEPT_SAMPLES] + [b for b in bodies if not b[1]][
        :KEPT_BUILT
    ]
    for body, sample in chosen:
        obj_name = object_name(ctx, release, "kept", version, entry, name)
        record = write_one(ctx, release, name, entry, body, obj_name, None)
        if record is not None:
            record.sample, record.kept_from = sample, release.index
            record.sample_name = str(body.get(objects.NAME, "")) if sample else ""
            kept.append(record)
    return kept


DRAWING = "history: drawing objects (of writing them)"


def _drawn(ctx: GateContext, entry: dict, first: int, wanted: int) -> Iterator[dict]:
    """``first`` bodies drawn for ``entry``; then, only as far as the server refuses them,
    up to ``DRAWS_PER_OBJECT`` times ``wanted`` in all. Drawing is the gate's own CPU (some
    10 ms a body): most schemas' objects are all accepted, and were drawn three times over."""
    with ctx.timed(DRAWING):
        bodies = objects.first_examples(entry, first, ctx.config.seed)
    yield from bodies
    with ctx.timed(DRAWING):  # another seed: hypothesis's first draws depend on how many
        more = objects.first_examples(entry, wanted * DRAWS_PER_OBJECT - first, ctx.config.seed + 1)
    yield from (body for body in more if body not in bodies)


def _keep(
    ctx: GateContext,
    release: Release,
    name: str,
    entry: dict,
    samples: list[dict],
    drawn: list[dict],
    wanted: int,
) -> list[Written]:
    """A singleton's objects (``singletons``): kept, to be created and judged one at a time
    at the next transition; the candidate's samples are judged now, each deleted after."""
    if release is not ctx.candidate:
        ctx.pending.setdefault(release.index, []).extend(
            [singletons.Pending(name, entry, body, sample=True) for body in samples]
            + [singletons.Pending(name, entry, body, wanted=wanted) for body in drawn]
        )
        return []
    version = entry["name"]
    resource = Resource.of(release.crds[name])
    for body in samples:
        refusals: list[Answer] = []
        obj_name = object_name(ctx, release, "r", version, entry, name)
        with ctx.held(name, HISTORY_NS if resource.namespaced else None, obj_name, entry):
            record = write_one(ctx, release, name, entry, body, obj_name, refusals)
            if record is not None:
                call(ctx.cluster, "DELETE", resource.path(version, record.namespace, obj_name))
        for answer in refusals:
            _sample_refused(ctx, release, name, version, body, answer)
    return []


def _sample_refused(
    ctx: GateContext, release: Release, name: str, version: str, body: dict, answer: Answer
) -> None:
    """The candidate refuses one of the user's samples: a finding of its install, or of the
    upgrade to it — unless the release before refused it too (at the same version): then
    the upgrade made nothing worse, and it is that release's hazard, reported apart."""
    before = ctx.sample_refused(release.index - 1, name, version, body) if release.index else None
    if before is not None:
        ctx.hazards.setdefault(
            f"{name}:sample:{version}:{body.get(objects.NAME, '?')}:{before}",
            f"release {release.index}: {name} at {version} refuses your sample "
            f"{body.get(objects.NAME, '?')} already: {before[:300]} (the candidate refuses "
            f"it too, so it is not the upgrade's finding: {answer.status} "
            f"{answer.message[:300]})",
        )
        return
    check = "upgrade" if release.index else "install"
    subject = (
        subjects.transition(release.index) if release.index else subjects.release(release.index)
    )
    ctx.result(check, subject).fail(
        f"the candidate refuses your sample {name} at {version}: {answer.status} {answer.message}",
        f"sample {body.get(objects.NAME, '?')} at {version}: {answer.message}",
    )
