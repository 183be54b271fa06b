"""Part of check *upgrade* for a source cluster's objects (``--from-cluster``): every object
judged, in minutes, by the cheapest decisive requests.

A cluster holds tens of thousands of a CRD's objects; the whole set of writes
(``upgrade_writes``, about ten requests a version, each read back) for each would take most
of an hour. So, past ``FULL_WRITES`` objects, each object is *screened*: read by LIST (not
GET) at every served version, before and after the upgrade, and created again as a dry run
(a restore or re-apply: the whole new schema applies, where an update's ratcheting judges
less) at every version both releases serve, under the installed release first (what it
already refuses is its hazard) and then under the candidate. An object the candidate
refuses there is then written in full (``upgrade_rewrites``), so its answer names every
write it refuses as a fully written object's would. One object of each shape (the
versions its writers used, the fields set, ``source_selection.shape``) and an even sample
are always written in full: what only a real write shows (a server-side apply tripping on
stale managedFields, a status update, the data a write loses) is seen for every kind of
object the cluster holds.
"""

from __future__ import annotations

from crdharness.gate import concurrency
from crdharness.gate.api import call
from crdharness.gate.checks.upgrade_objects import Written
from crdharness.gate.checks.upgrade_writes import (
    RECREATE,
    Refusal,
    already_exists,
    as_named,
    recreated_body,
)
from crdharness.gate.evidence import names
from crdharness.gate.given.cluster_source import CapturedObject
from crdharness.gate.given.manifests import Release
from crdharness.gate.given.source_selection import shape
from crdharness.gate.run.context import GateContext
from crdharness.progress import Tally

FULL_WRITES = 300  # objects up to which every one is written in full
SAMPLE = 200  # written in full past that, beside one of each shape
LIST_PAGE = 500


def written_in_full(captured: list[CapturedObject]) -> set[int]:
    """Which of ``captured`` (by position) get every write: all of them up to
    ``FULL_WRITES``; past that, the first of each shape and an even sample."""
    if len(captured) <= FULL_WRITES:
        return set(range(len(captured)))
    chosen: dict[tuple, int] = {}
    for i, obj in enumerate(captured):
        item = {**obj.body, "metadata": {"managedFields": obj.managed_fields}}
        chosen.setdefault((obj.crd, obj.version, shape(item)), i)
    step = max(len(captured) // SAMPLE, 1)
    return set(chosen.values()) | set(range(0, len(captured), step))


def listed(ctx: GateContext, crd: str, version: str, namespace: str | None) -> dict[str, dict]:
    """Every object of ``crd`` in ``namespace`` as LIST returns it at ``version``, by name
    (in pages, as kubectl lists a large collection). Raises on a refused LIST."""
    resource = ctx.resource(crd)
    found: dict[str, dict] = {}
    token = ""
    while True:
        query = f"?limit={LIST_PAGE}" + (f"&continue={token}" if token else "")
        page = call(ctx.cluster, "GET", resource.path(version, namespace) + query)
        if not page.ok:
            raise ListRefused(f"LIST of {crd} at {version}: {page.status} {page.message}")
        for item in page.body.get("items", []):
            found[item["metadata"]["name"]] = item
        token = (page.body.get("metadata") or {}).get("continue") or ""
        if not token:
            return found


class ListRefused(Exception):
    """A LIST the server refused: the objects it should have returned cannot be judged."""


def read_by_list(
    ctx: GateContext, release: Release, screened: list[Written]
) -> dict[Written, dict[str, dict]]:
    """What each screened object reads at every version ``release`` serves (version ->
    body; a version whose LIST does not return it is missing), from one paged LIST per CRD,
    version and namespace."""
    reads: dict[Written, dict[str, dict]] = {obj: {} for obj in screened}
    places = sorted({(obj.crd, obj.namespace or "") for obj in screened})
    for crd, namespace in places:
        mine = [o for o in screened if o.crd == crd and (o.namespace or "") == namespace]
        for version in release.served(crd):
            try:
                found = listed(ctx, crd, version, namespace or None)
            except ListRefused:
                continue  # the upgrade's own LIST check reports it
            for obj in mine:
                if obj.name in found:
                    reads[obj][version] = found[obj.name]
    return reads


def dry_runs(
    ctx: GateContext, release: Release, obj: Written, versions: list[str]
) -> list[Refusal]:
    """``obj`` created again as it reads at each of ``versions``, as a dry run; each
    refused. A re-create is judged by the whole schema, so an object it accepts passes every
    same-content write (updates ratchet: they judge less); one it refuses is written in full
    to say which writes still pass."""
    resource = ctx.resource(obj.crd)
    refused = []
    for version in versions:
        current = obj.seen.get(version)
        if current is None:
            continue  # unreadable there: the reads report it
        collection = resource.path(version, obj.namespace)
        body = recreated_body(current, names.rule(release.entry(obj.crd, version)))
        again = call(ctx.cluster, "POST", f"{collection}?dryRun=All", body)
        taken = already_exists(current, body, again)
        # An admission webhook with side effects refuses every dry run: that says nothing here.
        if not again.ok and not taken and "dry run" not in again.message.lower():
            refused.append(
                Refusal(RECREATE, version, again.status, as_named(again.message, current))
            )
    return refused


def screen_baseline(ctx: GateContext, release: Release, screened: list[Written]) -> int:
    """Under the installed ``release``: the screened objects' dry runs at every version the
    candidate serves too; what it refuses is each object's baseline (its hazard, never the
    candidate's finding). Returns how many objects it refused anything."""
    after = ctx.releases[release.index + 1]
    tally = Tally(
        ctx.report, "gate: objects screened (dry runs) under the installed release", len(screened)
    )

    def screen(obj: Written) -> list[Refusal]:
        both = [v for v in release.served(obj.crd) if v in after.served(obj.crd)]
        refused = dry_runs(ctx, release, obj, both)
        if refused:  # refused twice, or it was the busy machine's (a 429, a timeout)
            again = {r.key for r in dry_runs(ctx, release, obj, both)}
            refused = [r for r in refused if r.key in again]
        tally.add()
        return refused

    refusals = concurrency.each(screen, screened, ctx.config.concurrency)
    tally.finish()
    for obj, refused in zip(screened, refusals, strict=True):
        obj.baseline |= {r.key for r in refused}
        if refused:  # stored as the cluster holds it, which its own CRD no longer admits
            ctx.hazards.setdefault(
                f"{obj.crd}:captured:{obj.label}",
                f"release {release.index + 1} (the cluster's own {obj.crd}) refuses re-creating "
                f"{obj.label}: {refused[0].message[:300]} (a restore of it fails on that "
                "cluster today)",
            )
    return sum(1 for refused in refusals if refused)


def screen_candidate(ctx: GateContext, release: Release, screened: list[Written]) -> list[Written]:
    """Under the candidate ``release``: the same dry runs; the objects it refuses anything
    the installed release did not, to be written in full."""
    tally = Tally(
        ctx.report, "gate: objects screened (dry runs) under the candidate", len(screened)
    )

    def screen(obj: Written) -> bool:
        refused = dry_runs(ctx, release, obj, release.served(obj.crd))
        tally.add()
        return any(r.key not in obj.baseline for r in refused)

    flagged = concurrency.each(screen, screened, ctx.config.concurrency)
    tally.finish()
    return [obj for obj, refused in zip(screened, flagged, strict=True) if refused]
