"""Check *upgrade*: objects stored under release i, under release i+1 (each transition of
the history phase). Each reads back unchanged at every served version (GET and LIST) with its
etcd key untouched, and is written again (``upgrade_writes``): a refusal is a finding when the
object is one clusters can hold (a sample, one the declared admission webhooks let in, or any
write the server fails), and "not proven" when only generated objects show it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from crdharness.gate import checks, diff, migration, objects, schemas
from crdharness.gate.api import call
from crdharness.gate.context import GateContext
from crdharness.gate.manifests import Release
from crdharness.gate.upgrade_writes import TOUCHED, write_again

SERVER_ERROR = re.compile(r" at [^ :]+: 5\d\d ")  # a write_again line the server failed (5xx)


@dataclass
class Written:
    """An object the history phase wrote, and what it looked like then."""

    crd: str
    version: str  # written at
    name: str
    namespace: str | None
    seen: dict[str, dict] = field(default_factory=dict)  # version -> object read at it
    sent: dict = field(default_factory=dict)  # the body written (fields, status)
    sample: bool = False  # one of the user's samples (an object clusters really hold)


def etcd_snapshot(ctx: GateContext, written: list[Written]) -> dict:
    if ctx.cluster.etcd is None:
        return {}
    snapshot = {}
    for obj in written:
        resource = ctx.resource(obj.crd)
        stored = ctx.cluster.stored(resource.group, resource.plural, obj.name, obj.namespace)
        if stored is not None:
            snapshot[(obj.crd, obj.name)] = (stored.mod_revision, stored.api_version)
    return snapshot


def check(ctx: GateContext, release, written, before, stored_before) -> None:
    result = ctx.result("upgrade", checks.transition(release.index))
    checked = 0
    for obj in written:
        if obj.crd not in release.crds:
            continue
        resource = ctx.resource(obj.crd)
        served = release.served(obj.crd)
        for version in served:
            got = call(ctx.cluster, "GET", resource.path(version, obj.namespace, obj.name))
            if not got.ok:
                result.fail(
                    f"{obj.name} (written at {obj.version}) cannot be read at {version}",
                    f"GET {obj.name} at {version}: {got.status} {got.message}",
                )
                continue
            checked += 1
            if version in obj.seen:
                found = diff.differences(
                    diff.comparable(obj.seen[version]), diff.comparable(got.body)
                )
                entry = release.entry(obj.crd, version)
                defaults = [
                    d
                    for d in found
                    if not schemas.present(obj.sent, d.path) and schemas.defaulted(entry, d.path)
                ]
                for d in defaults:  # the new release's defaults, filled in on read
                    note = f"{obj.crd} at {version}: {d.path} defaulted on read: {d.describe()}"
                    if note not in result.normalised:
                        result.normalised.append(note)
                found = [d for d in found if d not in defaults]
                if found:
                    result.fail(
                        f"{obj.name} read at {version} changed with the upgrade: "
                        + "; ".join(d.describe() for d in found[:3]),
                        *(f"{obj.name} at {version}: {d.describe()}" for d in found),
                    )
                    result.objects.append((f"{obj.name} at {version} before", obj.seen[version]))
                    result.objects.append((f"{obj.name} at {version} after", got.body))
            obj.seen[version] = got.body
        for version in served:
            listed = call(ctx.cluster, "GET", resource.path(version, obj.namespace))
            names = [i["metadata"]["name"] for i in (listed.body or {}).get("items", [])]
            if not listed.ok or obj.name not in names:
                result.fail(
                    f"LIST at {version} does not return {obj.name}",
                    f"LIST at {version}: {listed.status} {'' if listed.ok else listed.message}",
                )
    proven_untouched = _check_untouched(ctx, result, written, before)
    writes, unproven = _write_all_again(ctx, result, release, written)
    for name in ctx.live(release):
        expected = set(stored_before.get(name) or []) | {release.storage(name)}
        if not stored_before.get(name):
            expected = {release.storage(name)}
        actual = set(migration.stored_versions(ctx.cluster, name))
        if actual != expected:
            result.fail(
                f"{name}: status.storedVersions is {sorted(actual)}, the documentation says "
                f"{sorted(expected)}"
            )
    if result.passed is not False:
        etcd = (
            f"; {proven_untouched} etcd keys untouched (mod_revision and stored apiVersion)"
            if ctx.cluster.etcd is not None
            else "; stored bytes not checked: no etcd access on this cluster"
        )
        left_out = sorted(n for n in release.crds if n in ctx.refused_crds)
        dropped = sorted(n for n in ctx.releases[release.index - 1].crds if n not in release.crds)
        if dropped:  # kubectl apply does not delete a CRD; helm leaves its crds/ alone
            result.details.append(
                f"not in release {release.index + 1}: {', '.join(dropped)} (clusters keep "
                "them and their objects: neither kubectl apply nor helm deletes a CRD)"
            )
        defaulted = len(result.normalised)
        result.evidence = (
            f"{len(written)} object{'' if len(written) == 1 else 's'} read at every served "
            f"version ({checked} reads), "
            "unchanged"
            + (f" but for {defaulted} values the new release defaults on read" if defaulted else "")
            + f"{etcd}; written again {writes} times (update, annotation, "
            "server-side apply, status), all accepted and read back unchanged"
            + (f"; not checked: {', '.join(left_out)} (refused, see install)" if left_out else "")
        )
    _judge_unproven(ctx, result, release, unproven)


def _judge_unproven(ctx: GateContext, result, release: Release, unproven: list[str]) -> None:
    """Refusals of generated objects only: not proof, and not a pass either."""
    if not unproven:
        return
    if result.passed is False:  # decided on proof; these stay beside it, for reading
        result.details += [f"not proven (generated objects only): {line}" for line in unproven]
        return
    result.passed = None
    result.evidence = (
        f"not proven: objects valid under release {release.index}'s schema are refused by "
        f"release {release.index + 1} ({unproven[0]}); if your clusters can hold objects "
        "like them, their writes break: add such objects to `samples`, or declare the "
        "admission webhooks that refuse them at creation under `admission:`"
    )
    result.details += unproven


def _write_all_again(
    ctx: GateContext, result, release: Release, written: list[Written]
) -> tuple[int, list[str]]:
    """Every old object written again at every served version (see ``upgrade_writes``),
    and read back after each version's writes (what each version reads last is kept for
    the next release's comparison). Returns the number of writes and the refusals that are
    not proof (see below)."""
    writes, unproven = 0, []
    for obj in written:
        resource = ctx.resource(obj.crd)
        for version in release.served(obj.crd):
            has_status = objects.has_status(release.entry(obj.crd, version))
            path = resource.path(version, obj.namespace, obj.name)
            refused = write_again(ctx.cluster, path, version, has_status)
            writes += 3 + has_status
            _check_unchanged_by_writes(ctx, result, release, obj, version)
            if not refused:
                continue
            lines = [f"{obj.name}: {line}" for line in refused]
            # Proof needs an object a cluster can hold: a sample, or one that passed the
            # project's admission webhooks. A generated object is valid under the old
            # schema only; the project's webhooks may have refused it at creation
            # (seen: Kyverno's and gateway-api's do). managedFields naming a removed
            # version break any object, whatever its content; so does any answer the
            # server fails with (5xx): no admission webhook decides that.
            if (
                obj.sample
                or ctx.config.admission
                or any(SERVER_ERROR.search(line) for line in refused)
            ):
                result.fail(
                    f"{obj.name} (stored under release {release.index}) cannot be written "
                    f"under release {release.index + 1}: {refused[0]}",
                    *lines,
                )
            else:
                unproven += lines
    return writes, unproven


def _check_unchanged_by_writes(
    ctx: GateContext, result, release: Release, obj: Written, version: str
) -> None:
    """An old object written again at ``version`` with what was read there must read as it
    did before at every served version: a webhook that loses a field on the way to
    ``version`` loses it from storage on the first controller update at that version.
    Differences ``ctx.excused`` between ``version`` and the storage version are not
    findings. Each loss is named once, at the version whose writes made it: ``obj.seen``
    moves on to what is read now."""
    resource = ctx.resource(obj.crd)
    storage = release.storage(obj.crd)
    for at in release.served(obj.crd):
        got = call(ctx.cluster, "GET", resource.path(at, obj.namespace, obj.name))
        if not got.ok:
            continue  # unreadable: the next release's reads report it
        before = obj.seen.get(at)
        obj.seen[at] = got.body  # the next writes, and the next release, are judged from here
        if before is None:
            continue
        found = [
            d
            for d in diff.differences(
                diff.comparable(before, ignore_annotations=(TOUCHED,)),
                diff.comparable(got.body, ignore_annotations=(TOUCHED,)),
            )
            if ctx.excused(d, version, storage) is None
        ]
        if found:
            result.fail(
                f"{obj.crd} {obj.name} (stored under release {release.index}) lost or changed "
                f"{', '.join(sorted({d.path for d in found}))} when written again at {version} "
                f"with what was read there (read at {at})",
                *(
                    f"{obj.name} written again at {version}, read at {at}: {d.describe()}"
                    for d in found
                ),
            )
            result.objects.append((f"{obj.name} at {at} before the writes", before))
            result.objects.append((f"{obj.name} at {at} after the writes at {version}", got.body))


def _check_untouched(ctx: GateContext, result, written, before) -> int:
    if ctx.cluster.etcd is None:
        if result.passed:
            result.passed = None
        result.details.append("etcd is not reachable: stored bytes not proven untouched")
        return 0
    after = etcd_snapshot(ctx, written)
    untouched = 0
    for key, (revision, api_version) in before.items():
        now = after.get(key)
        if now is None:
            result.fail(f"{key[1]}: its etcd key vanished with the upgrade")
        elif now != (revision, api_version):
            result.fail(
                f"{key[1]}: applying the release rewrote it in etcd "
                f"(mod_revision {revision}->{now[0]}, stored {api_version}->{now[1]})"
            )
        else:
            untouched += 1
    return untouched
