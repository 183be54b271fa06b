"""Part of check *upgrade*: each old object read again under the new release at every served
version (GET and LIST), judged against what it read before, and its etcd key untouched."""

from __future__ import annotations

from collections.abc import Callable

from crdharness.gate import diff, go_values
from crdharness.gate.api import call
from crdharness.gate.checks import upgrade_screen
from crdharness.gate.checks.upgrade_objects import (
    Written,
    declared_first,
    etcd_snapshot,
    finding,
    note_written_meanwhile,
    other_writers,
)
from crdharness.gate.evidence import schemas
from crdharness.gate.given.manifests import Release
from crdharness.gate.results import CheckResult
from crdharness.gate.run.context import GateContext

# A note (no finding): a value an old object read only through a default the release removed.
CARRIED_NOW = "carried now by the conversion (what the object was written with; not a finding)"
NO_LONGER_DEFAULTED = "no longer defaulted on read, never stored (not a finding)"


def read_again(
    ctx: GateContext, result: CheckResult, release: Release, obj: Written
) -> tuple[CheckResult, int]:
    """``obj`` read at every version ``release`` serves, judged against what it read under
    the earlier release; what was found (its part of ``upgrade``), and the reads made."""
    resource = ctx.resource(obj.crd)
    reads = 0
    for version in release.served(obj.crd):
        got = call(ctx.cluster, "GET", resource.path(version, obj.namespace, obj.name))
        if not got.ok:
            finding(
                ctx,
                result,
                obj,
                f"{obj.label} (written at {obj.version}) cannot be read at {version}",
                f"GET {obj.label} at {version}: {got.status} {got.message}",
            )
            continue
        reads += 1
        if version in obj.seen:
            _judge_read(ctx, result, release, obj, version, got.body)
        obj.seen[version] = got.body
        obj.read_now(release.index, version, got.body)
    return result, reads


def read_screened(
    ctx: GateContext, result: CheckResult, release: Release, screened: list[Written]
) -> int:
    """The screened objects read again under ``release`` by LIST at every served version
    (``upgrade_screen``), judged as ``read_again`` judges a GET; the reads compared."""
    compared = 0
    for obj, reads in upgrade_screen.read_by_list(ctx, release, screened).items():
        for version in release.served(obj.crd):
            body = reads.get(version)
            if body is None:
                continue  # check_listed names an object a LIST leaves out
            compared += 1
            if version in obj.seen:
                _judge_read(ctx, result, release, obj, version, body)
            obj.seen[version] = body
    return compared


def check_listed(ctx: GateContext, result: CheckResult, release: Release, written) -> None:
    """A LIST at every served version returns every old object: one LIST per CRD, version
    and namespace."""
    places = sorted({(obj.crd, obj.namespace or "") for obj in written})
    for crd, namespace in places:
        resource = ctx.resource(crd)
        mine = [w for w in written if w.crd == crd and (w.namespace or "") == namespace]
        for version in release.served(crd):
            listed = call(ctx.cluster, "GET", resource.path(version, namespace or None))
            names = {i["metadata"]["name"] for i in (listed.body or {}).get("items", [])}
            if not listed.ok:
                result.fail(
                    f"LIST of {crd} at {version} fails: {listed.status} {listed.message}",
                    *(f"LIST at {version} does not return {w.name}" for w in mine),
                )
                continue
            for obj in mine:
                if obj.name not in names:
                    result.fail(
                        f"LIST at {version} does not return {obj.label}",
                        f"LIST at {version}: {listed.status}",
                    )


def _judge_read(
    ctx: GateContext, result: CheckResult, release: Release, obj: Written, version: str, body
) -> None:
    """What an old object reads at ``version`` under the new release, against what it read
    under the old one: any difference is a finding — a value the new release's default
    fills in on read too (a silent change to every stored object, which upgrade notes must
    tell), unless ``allow``ed."""
    found = diff.differences(diff.comparable(obj.seen[version]), diff.comparable(body))
    if not found:
        return
    writers = other_writers(obj.seen[version], body)
    if writers:  # reads write nothing: another client did (kueue's controllers, its status)
        note_written_meanwhile(result, obj, f"read at {version} after the upgrade", writers)
        return
    known = len(obj.findings)
    entry = release.entry(obj.crd, version)
    defaulted = [
        d
        for d in found
        if not schemas.present(obj.sent, d.path) and schemas.defaulted(entry, d.path)
    ]
    earlier = ctx.releases[release.index - 1].version(obj.crd, version) if release.index else None
    let_default = [d for d in found if lets_default(ctx, release, obj, version, d)]
    for d in let_default:
        note_let_default(result, release, obj, f"{obj.label} at {version}", d)
    defaulted = [d for d in defaulted if d not in let_default]
    # A default the earlier release gave too is no news of this release: the read changed
    # through the conversion (said below as a change with the upgrade).
    defaulted = [d for d in defaulted if not _same_default(earlier or {}, entry, d.path)]
    for d in defaulted:
        finding(
            ctx,
            result,
            obj,
            f"{obj.crd} {obj.label} (stored under release {release.index}) reads at {version} "
            f"with a value it did not have: {d.describe()} (release {release.index + 1}'s "
            "default, filled in on read of every stored object)",
            f"{obj.label} at {version}: {d.path} defaulted on read: {d.describe()}",
            paths=[d.path],
        )
    undefaulted = _no_longer_defaulted(ctx, release, obj, version, found, defaulted)
    for d in undefaulted:
        line = (
            f"{obj.crd} {obj.label} (stored under release {release.index}) reads at {version} "
            f"without {d.path}, which etcd never held: release {release.index}'s default only "
            f"filled it in on read ({diff.short(d.before)}), and release {release.index + 1} "
            "removed that default"
        )
        no_longer_defaulted(ctx, result, obj, line, f"{obj.label} at {version}: {d.describe()}", d)
    changed = declared_first(
        entry, [d for d in found if d not in defaulted + undefaulted + let_default]
    )
    changed = _set_apart(
        changed,
        lambda d: _carried_now(obj, version, d),
        lambda d: (
            f"{CARRIED_NOW}: {obj.label} at {version}: {d.describe()}, what it was written "
            f"with (its conversion under release {release.index + 1} carries it)"
        ),
        result.details,
    )
    if not ctx.config.strict:
        changed = _set_apart(
            changed,
            _webhooks_own_annotation,
            lambda d: (
                f"{obj.label} at {version}: {d.describe()} (read only: the webhook's own, "
                f"no user wrote it; release {release.index + 1}'s webhook shows it there)"
            ),
            result.own_annotations,
        )
    if changed:
        finding(
            ctx,
            result,
            obj,
            f"{obj.label} read at {version} changed with the upgrade: "
            + "; ".join(d.describe() for d in changed[:3]),
            *(f"{obj.label} at {version}: {d.describe()}" for d in changed),
            paths=[d.path for d in changed],
        )
    if len(obj.findings) > known:
        result.objects.append((f"{obj.label} at {version} before", obj.seen[version]))
        result.objects.append((f"{obj.label} at {version} after", body))


def _set_apart(
    found: list[diff.Difference],
    matches: Callable[[diff.Difference], bool],
    note: Callable[[diff.Difference], str],
    notes: list[str],
) -> list[diff.Difference]:
    """``found`` without the differences ``matches`` takes, each noted once in ``notes``."""
    taken = [d for d in found if matches(d)]
    for d in taken:
        if (line := note(d)) not in notes:
            notes.append(line)
    return [d for d in found if d not in taken]


def _carried_now(obj: Written, version: str, d: diff.Difference) -> bool:
    """A value that appeared or changed on a read at ``version`` (not by a default: those
    are judged before) to what the object was written with: the new release's conversion
    carries what the earlier one dropped (a fix: capsule v0.2.1 converting the status
    v0.2.0 left out; api-gateway 3.1.1 reading `gateway` and `hosts` into v2), never a loss.
    Either the value at that path of the body written (``obj.sent``), or a value that
    appeared whose non-zero scalars (at least one) the object was written with or reads at
    the version it was written at, another path (``host`` read into ``hosts[0]``), where the
    upgrade changed nothing else. A value from nowhere, or one lost, stays a finding."""
    if d.change == "lost" or d.path.startswith("metadata."):
        return False
    if schemas.present(obj.sent, d.path) and diff.same(schemas.value_at(obj.sent, d.path), d.after):
        return True
    if d.change != "added" or obj.findings:
        return False
    held = diff.leaves(obj.sent) | diff.leaves(obj.seen.get(obj.version) or {})
    values = [v for v in held.values() if not diff.zero_or_all_zero(v)]
    # Zero values beside them are how Go writes a struct it copies (``external: false``).
    new = [v for v in diff.leaves(d.after).values() if not diff.zero_or_all_zero(v)]
    return bool(new) and all(any(go_values.same(v, h) for h in values) for v in new)


def _webhooks_own_annotation(d: diff.Difference) -> bool:
    """An annotation that appeared on a read: reading writes nothing, so only the conversion
    put it there (its bookkeeping, as ``annotation_objects`` sets apart in round trips). One
    that went or changed may be a user's: that stays a finding."""
    if d.change == "lost":
        return False
    if d.path == "metadata.annotations":  # the whole map appeared
        return d.before in (None, {})
    return d.path.startswith("metadata.annotations.") and d.before is None


def lets_default(
    ctx: GateContext, release: Release, obj: Written, version: str, d: diff.Difference
) -> bool:
    """Whether ``d`` (a read at ``version`` before and after the upgrade) is the earlier
    webhook's Go zero value giving way to the default both releases' schemas declare, on a
    field the user did not write otherwise: a fix, never the upgrade's finding."""
    if not release.index:
        return False
    earlier = ctx.releases[release.index - 1].version(obj.crd, version) or {}
    if not _zero_now_defaulted(earlier, release.version(obj.crd, version) or {}, d):
        return False
    sent = schemas.value_at(obj.sent, d.path) if schemas.present(obj.sent, d.path) else None
    return sent is None or go_values.same(sent, d.after)


def note_let_default(
    result: CheckResult, release: Release, obj: Written, where: str, d: diff.Difference
) -> None:
    note = (
        f"{where}: {d.describe()} (the schema's default under both releases; release "
        f"{release.index}'s webhook answered Go's zero value, which kept it from filling in, "
        f"where {obj.label} held {diff.short(d.after)} or nothing)"
    )
    if note not in result.normalised:
        result.normalised.append(note)


def _same_default(earlier: dict, entry: dict, path: str) -> bool:
    """Whether both releases' schemas give ``path`` the same defaults (on it and above it)."""
    prefixes = [path[:i] for i in range(len(path) + 1) if i == len(path) or path[i] in ".["]
    said = [schemas.default_of(entry, prefix) for prefix in prefixes]
    return any(d for d, _ in said) and said == [schemas.default_of(earlier, p) for p in prefixes]


def _zero_now_defaulted(earlier: dict, entry: dict, d: diff.Difference) -> bool:
    """A zero value read before (``""``, ``0``, ``false``) now reads as the default both
    releases' schemas give the field."""
    if d.change != "changed" or not diff.zero(d.before):
        return False
    said, value = schemas.default_of(entry, d.path)
    return _same_default(earlier, entry, d.path) and said and go_values.same(value, d.after)


def no_longer_defaulted(
    ctx: GateContext, result: CheckResult, obj: Written, line: str, detail: str, d
) -> None:
    """A value ``obj`` read only through a default the release removed: noted, a finding only
    with ``strict``. The object reads as it was stored, as before that default came: no data
    lost, and a client must handle the field absent anyway (objects older than it)."""
    if ctx.config.strict:
        finding(ctx, result, obj, line, detail, paths=[d.path])
    else:
        result.details.append(f"{NO_LONGER_DEFAULTED}: {line} (a finding with `strict: true`)")


def _no_longer_defaulted(
    ctx: GateContext, release: Release, obj: Written, version: str, found: list, defaulted: list
) -> list:
    """The values ``obj`` read at ``version`` only through the earlier release's default,
    which the new release removed: lost on read, while etcd never held them (read from etcd
    itself: the gate's own writes may have stored a default, or dropped it)."""
    etcd = ctx.cluster.etcd
    earlier = ctx.releases[release.index - 1]
    candidates = [
        d for d in found if d not in defaulted and default_removed(earlier, release, obj.crd, d)
    ]
    if not candidates or etcd is None:
        return []  # without etcd a stored value cannot be told from a default: a finding
    resource = ctx.resource(obj.crd)
    stored = etcd.custom_resource(resource.group, resource.plural, obj.name, obj.namespace)
    if stored is None:
        return []
    held = stored.json
    return [d for d in candidates if not schemas.present(held, d.path)]


def default_removed(earlier: Release, release: Release, crd: str, d) -> bool:
    """``d`` is a value lost on read that ``earlier`` filled in by default and ``release``
    no longer does. The API server defaults what it reads from etcd by the storage version's
    schema, whichever version is read."""
    return (
        d.change == "lost"
        and schemas.defaulted(earlier.entry(crd, earlier.storage(crd)), d.path)
        and not schemas.defaulted(release.entry(crd, release.storage(crd)), d.path)
    )


def check_untouched(ctx: GateContext, result, written, before) -> int:
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
