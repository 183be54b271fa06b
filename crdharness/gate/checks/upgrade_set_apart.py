"""Part of check *upgrade*: an object its own release can no longer read after the gate's own
writes under that release is set apart before the next release is applied.

The history writes each old object again at every served version (``upgrade_rewrites``). A
webhook that adds to an object on every conversion (appends a list's items again, doubles an
annotation) makes it grow with each of those writes, until the object can no longer be read at
some version under the very release that stored it: its conversion answer is refused (an
annotation over 256 KiB). Kept, such an object would fail the next release's install (the API
server's cache of the resource converts every stored object, and never builds while one cannot
be converted), blamed on a release that did not make it so. It is the earlier release's hazard
(reported apart), the same rule as for an object its release cannot read once created
(``phases.history_writes.write_one``). So is an object whose lists those writes grew, still
readable or not: the next release's writes would grow it again (to megabytes: a list tripled
per write), which is the webhook's doing, reported by round-trip, not the upgrade's.
"""

from __future__ import annotations

from crdharness.gate import concurrency
from crdharness.gate.api import call
from crdharness.gate.checks.upgrade_objects import Written
from crdharness.gate.given.manifests import Release
from crdharness.gate.run.context import GateContext


def set_apart_unreadable(
    ctx: GateContext, release: Release, written: list[Written]
) -> list[Written]:
    """``written`` without the objects ``release`` can no longer read at one of its served
    versions, or whose lists its own writes grew (each deleted, and named as the release's
    hazard)."""

    def unreadable(obj: Written) -> tuple[str, str] | None:
        if obj.grown:  # each write through the webhook appends again: no stable witness
            versions = ", ".join(sorted({v for v, _ in obj.grown}))
            lists = ", ".join(sorted({g for _, g in obj.grown}))
            return "", (
                f"each write of it at {versions} appends to {lists} again through the webhook "
                "(the gate's own writes grew it); the next release's writes would only grow it "
                "further, the webhook's doing (round-trip's), not the upgrade's"
            )
        resource = ctx.resource(obj.crd)
        for version in release.served(obj.crd):
            if obj.read_at(release.index, version) is not None:
                continue  # read there after its last write (``upgrade_rewrites``): readable
            got = call(ctx.cluster, "GET", resource.path(version, obj.namespace, obj.name))
            if got.status >= 500:  # its conversion failed (a 404: already gone, nothing kept)
                return version, f"{got.status} {got.message[:600]}"
        return None

    kept = []
    for obj, failed in zip(
        written, concurrency.each(unreadable, written, ctx.config.concurrency), strict=True
    ):
        if failed is None:
            kept.append(obj)
            continue
        version, why = failed
        resource = ctx.resource(obj.crd)
        served = release.served(obj.crd)
        # At the storage version its delete converts nothing (its answer is the object).
        storage = release.storage(obj.crd)
        readable = (
            storage if storage in served else next((v for v in served if v != version), version)
        )
        call(ctx.cluster, "DELETE", resource.path(readable, obj.namespace, obj.name))
        if not version:  # grown
            line = f"{why}; set apart (deleted) before the next release"
        else:
            line = (
                f"can no longer be read at {version} ({why}); set apart (deleted) before the "
                "next release: kept, it would keep the API server from serving the resource "
                "after any change to the CRD"
            )
        ctx.hazards.setdefault(
            f"{obj.crd}:set-apart:{obj.label}",
            f"release {release.index + 1}: {obj.crd} {obj.label}, written again under this "
            f"release itself: {line}",
        )
    return kept
