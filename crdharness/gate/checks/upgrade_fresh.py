"""Part of check *upgrade*: whether a loss an old object shows when written again at a
version the release before did not serve is this upgrade's doing at all. There is no same
write under the old release to compare with (the version is new), so the same write is made
on a **new** object under the candidate: a round trip between the version read and the new
one (``object_round_trip``). If a new object loses the same paths, the loss is the
candidate's webhook's, whatever the upgrade did, and *round-trip* reports it (it runs every
pair of the candidate's versions, with objects built to hold every path): one finding, one
place. Before this, a release that only added a version through a lossy webhook failed
*upgrade* for round-trip's finding too (seen on prometheus-operator v0.57.0)."""

from __future__ import annotations

import threading

from crdharness.gate import diff
from crdharness.gate.api import ensure_namespace
from crdharness.gate.checks import object_round_trip
from crdharness.gate.checks.pair_record import PairRecord
from crdharness.gate.checks.upgrade_objects import WEBHOOKS_OWN, Written
from crdharness.gate.evidence import objects
from crdharness.gate.given.manifests import Release
from crdharness.gate.run.context import ROUND_TRIP_NS, GateContext

_lock = threading.Lock()  # objects are written again many at once (``concurrency``)


def new_version(ctx: GateContext, release: Release, crd: str, version: str) -> bool:
    """``version`` is one the candidate ``release`` serves and the release before it did
    not: its writes have no baseline. Only for the candidate, where *round-trip* runs (an
    earlier transition's loss would be reported nowhere else)."""
    if release is not ctx.candidate or release.index == 0:
        return False
    return version not in ctx.releases[release.index - 1].served(crd)


def lost_by_new_object(
    ctx: GateContext, release: Release, crd: str, version: str, at: str, old: dict, lost: list
) -> tuple[str | None, str]:
    """The round trip of a new object like ``old`` (as read at ``at``) through ``version``,
    under the candidate: (its failure's evidence when it loses every path of ``lost`` too,
    else None: the loss is the upgrade's finding; why it could not excuse it)."""
    a = at if at != version else release.storage(crd)
    if a == version:
        return None, "written and read at the storage version: no conversion to compare"
    paths = frozenset(diff.schema_path(d.path) for d in lost)
    key = (crd, a, version, paths)
    with _lock:
        if key in ctx.fresh_losses:
            return ctx.fresh_losses[key]
    manifest, entry = release.crds[crd], release.entry(crd, a)
    if ctx.resource(crd).namespaced:
        ensure_namespace(ctx.cluster, ROUND_TRIP_NS)
    body = objects.sample_body(diff.comparable(old))
    refusals: list = []
    failure = object_round_trip.run(
        ctx, manifest, entry, a, version, body, PairRecord(), release=release, refusals=refusals
    )
    compared: tuple[str | None, str]
    if failure is not None and all(
        any(diff.at_or_under(p, q) for q in failure.paths) for p in paths
    ):
        compared = failure.evidence, ""
    elif refusals:
        compared = (
            None,
            (
                f"a new object like it, to compare, was refused under release {release.index + 1} "
                f"({refusals[0].status} {refusals[0].message[:200]})"
            ),
        )
    elif failure is not None:
        compared = None, f"a new object like it fails otherwise: {failure.evidence[:200]}"
    else:
        compared = (
            None,
            (
                f"a new object like it keeps {', '.join(sorted(paths))} through the same writes "
                f"under release {release.index + 1}"
            ),
        )
    with _lock:
        ctx.fresh_losses[key] = compared
    return compared


def judged(
    ctx: GateContext, release: Release, obj: Written, version: str, at: str, before, found
) -> tuple[str | None, str]:
    """At a version the release before did not serve, a loss a new object shows through
    the same write under this release too: (the note saying it is round-trip's finding, or
    None; why a new object did not excuse it: said beside the finding)."""
    if not new_version(ctx, release, obj.crd, version):
        return None, ""
    evidence, why_not = lost_by_new_object(ctx, release, obj.crd, version, at, before, found)
    if evidence is None:
        return None, f"{version} is new in release {release.index + 1}, and {why_not}"
    paths = diff.said(found)
    return (
        f"{WEBHOOKS_OWN}: {obj.label} written again at {version} (not served by release "
        f"{release.index}) {diff.loses_or_changes(found)} {paths} (read at {at}), and so "
        f"does a new object under release {release.index + 1} ({evidence[:300]}); round-trip "
        "reports the webhook's losses"
    ), ""
