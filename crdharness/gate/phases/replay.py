"""Release 1 of a ``--from-cluster`` run: the source cluster as it is, rebuilt on the local
control plane — its CRDs as installed, its objects, and the same ``status.storedVersions``.

Which version etcd holds each object at is not visible through the API (the source's etcd is
never asked), so each object is stored at the oldest version ``storedVersions`` lists: the
most conversion an upgrade can ask of it. The storage version then moves through the others
in the order the cluster lists them, as its own history did, and ends where the cluster has
it; the API server adds each to ``storedVersions`` as it goes.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from crdharness.gate import concurrency, subjects
from crdharness.gate.api import Resource, apply_crd, ensure_namespace
from crdharness.gate.checks import migration, upgrade_screen
from crdharness.gate.checks.upgrade import Written
from crdharness.gate.evidence import objects
from crdharness.gate.evidence.packed import PackedReads
from crdharness.gate.given.cluster_source import Capture, CapturedObject
from crdharness.gate.given.manifests import Release
from crdharness.gate.phases import replay_etcd
from crdharness.gate.run.context import GateContext
from crdharness.progress import Tally
from crdharness.scenarios import crds

# history_writes.write_one: create one object, read it back at every served version.
Writer = Callable[..., "Written | None"]


def with_storage(manifest: dict, version: str) -> dict:
    """``manifest`` with ``version`` as its storage version."""
    moved = copy.deepcopy(manifest)
    for entry in moved["spec"]["versions"]:
        entry["storage"] = entry["name"] == version
    return moved


def first_install(capture: Capture, release: Release) -> dict[str, dict]:
    """The manifests to install first: each CRD with the oldest version its cluster still
    lists in ``storedVersions`` as storage."""
    first = {}
    for name, manifest in release.crds.items():
        stored = capture.stored_versions.get(name) or [release.storage(name)]
        first[name] = with_storage(manifest, stored[0])
    return first


def write_captured(ctx: GateContext, release: Release, write: Writer) -> list[Written]:
    """Every captured object created at the version it was written at (status through
    ``/status``), under its own name and namespace, ``concurrency`` at once, saying how far
    it is every few seconds. One the installed CRD itself refuses (a restore of it fails on
    that cluster today) is a hazard of release 1, and not replayed. Past
    ``upgrade_screen.FULL_WRITES`` objects, most are *screened*: stored straight into etcd
    where the harness can write it (``replay_etcd``: objects the installed schema no longer
    admits included), read back by LIST, not one GET a version each."""
    assert ctx.source is not None
    captured = [obj for name in ctx.live(release) for obj in ctx.source.objects.get(name, [])]
    full = upgrade_screen.written_in_full(captured)
    for namespace in sorted({obj.namespace for obj in captured if obj.namespace}):
        ensure_namespace(ctx.cluster, namespace)
    tally = Tally(ctx.report, "gate: the source cluster's objects replayed", len(captured))

    def replay(item: tuple[int, CapturedObject]) -> Written | None:
        position, obj = item
        entry = release.entry(obj.crd, obj.version)
        body = objects.sample_body(obj.body)
        if obj.managed_fields:  # the API server takes them as given on a create
            body.setdefault(objects.METADATA, {})["managedFields"] = obj.managed_fields
        refusals: list = []
        screened = position not in full
        record = write(
            ctx,
            release,
            obj.crd,
            entry,
            body,
            obj.name,
            refusals,
            obj.namespace,
            read_back=not screened,
        )
        tally.add()
        if record is None:
            why = refusals[0].message if refusals else "its conversion for storage failed"
            ctx.hazards.setdefault(
                f"{obj.crd}:captured:{obj.label}",
                f"release 1 (the cluster's own {obj.crd}) refuses re-creating {obj.label}: "
                f"{why[:300]} (a restore of it fails on that cluster today; not replayed)",
            )
            ctx.not_replayed.append(obj.label)
            return None
        record.captured = record.sample = True
        record.screened = screened
        return record

    items = list(enumerate(captured))
    direct: dict[int, Written] = {}
    if replay_etcd.available(ctx):  # the screened ones as etcd holds them, in seconds
        stored = [(i, obj) for i, obj in items if i not in full]
        replay_etcd.write(ctx, release, [obj for _, obj in stored])
        direct = {i: _record(obj) for i, obj in stored}
        tally.add(len(direct))
        items = [(i, obj) for i, obj in items if i in full]
    # In the objects' order, whatever order their requests end in.
    through_api = dict(
        zip(
            (i for i, _ in items),
            concurrency.each(replay, items, ctx.config.concurrency),
            strict=True,
        )
    )
    outcomes = direct | through_api
    written = [w for i in sorted(outcomes) if (w := outcomes[i]) is not None]
    tally.finish()
    screened = [w for w in written if w.screened]
    for obj, reads in upgrade_screen.read_by_list(ctx, release, screened).items():
        obj.seen = PackedReads(reads)
    ctx.report(
        f"gate: the source cluster's {len(written)} objects replayed"
        + (f" ({len(screened)} to be screened by dry runs)" if screened else "")
    )
    return written


def _record(obj: CapturedObject) -> Written:
    """A screened object stored straight into etcd (``replay_etcd``): read later by LIST."""
    record = Written(obj.crd, obj.version, obj.name, obj.namespace, sent=objects.intent(obj.body))
    record.captured = record.sample = record.screened = True
    return record


def replay_stored_versions(ctx: GateContext, release: Release) -> None:
    """Move each CRD's storage version through the versions its cluster lists in
    ``storedVersions``, ending where the cluster has it; say in *install* whether the
    replayed ``storedVersions`` match."""
    assert ctx.source is not None
    result = ctx.result("install", subjects.release(0))
    for name in ctx.live(release):
        wanted = ctx.source.stored_versions.get(name) or [release.storage(name)]
        for version in [*wanted[1:], None]:
            manifest = (
                release.crds[name] if version is None else with_storage(release.crds[name], version)
            )
            answer = apply_crd(ctx.cluster, ctx.pointed(manifest, release))
            if not answer.ok:
                result.fail(
                    f"the source's {name} could not be replayed: {answer.message}",
                    f"{name} with storage {version or release.storage(name)}: {answer.message}",
                )
                break
            crds.wait_settled(ctx.cluster.api_client, manifest)
        replayed = migration.stored_versions(ctx.cluster, name)
        if set(replayed) != set(wanted):
            result.fail(
                f"{name}: status.storedVersions replayed as {replayed}, the source cluster "
                f"lists {wanted}"
            )
        else:
            result.details.append(f"{name}: status.storedVersions {replayed}, as on the source")


def migrate_first(
    ctx: GateContext,
    release: Release,
    refused: set[str],
    stored_before: dict[str, list[str]],
) -> set[str]:
    """A CRD the candidate's install refused only because the cluster still stores versions
    it removes: the replay is migrated as the answer tells the operator to (every object
    written back at the storage version, ``storedVersions`` trimmed to it) and the candidate
    applied again, so that the cluster's objects are judged under it too. The CRDs now
    installed (*install* and *migration* keep their findings)."""
    previous = ctx.releases[release.index - 1]
    result = ctx.result("install", subjects.release(release.index))
    installed = set()
    for name in sorted(refused):
        if not [v for v in stored_before.get(name, []) if v not in release.names(name)]:
            continue  # refused for another reason: nothing to migrate past
        storage = previous.storage(name)
        outcome = migration.rewrite(ctx.cluster, Resource.of(previous.crds[name]), storage)
        trimmed = migration.set_stored_versions(ctx.cluster, name, [storage])
        if outcome.failures or not trimmed.ok:
            why = outcome.failures[0] if outcome.failures else trimmed.message
            result.details.append(f"{name}: the replay could not be migrated first: {why}")
            continue
        answer = apply_crd(ctx.cluster, ctx.pointed(release.crds[name], release))
        if not answer.ok:
            result.details.append(f"{name}: refused again after migrating: {answer.message}")
            continue
        crds.wait_settled(ctx.cluster.api_client, release.crds[name])
        result.details.append(
            f"{name}: once the cluster is migrated (its {outcome.rewritten} objects written "
            f"back at {storage}, status.storedVersions [{storage}]), release "
            f"{release.index + 1} installs: its objects are judged under it below"
        )
        installed.add(name)
    return installed
