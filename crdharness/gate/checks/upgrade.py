"""Check *upgrade*: objects stored under release i, under release i+1 (each transition of
the history phase). Each reads back unchanged at every served version (GET and LIST) with its
etcd key untouched — a value it did not have (a new default, filled in on read) included —
and is written again (``upgrade_writes``). Every write is first made the same way under
release i (``write_baseline``): a write release i already refused is a hazard of that
release, reported apart, never the upgrade's finding. Any other refusal is a finding, whatever
made the object (a sample, the generator, or ``targeted`` for what changed), unless an
``allow`` entry names the path with a reason. Each change between the two releases
(``changes``) ends with a decision from the objects built to hold it; a change none could be
built for, or fewer than ``min_objects`` objects of a CRD reaching the writes, leaves the
check "not proven", never pass.
"""

from __future__ import annotations

from crdharness.gate import concurrency, subjects
from crdharness.gate.checks import migration, upgrade_stored
from crdharness.gate.checks.upgrade_decisions import decide, enough_evidence
from crdharness.gate.checks.upgrade_objects import (  # what other phases use, from here
    RECREATES,
    WEBHOOKS_OWN,
    WRITTEN_MEANWHILE,
    Written,
    etcd_snapshot,
)
from crdharness.gate.checks.upgrade_reads import (
    CARRIED_NOW,
    NO_LONGER_DEFAULTED,
    check_listed,
    check_untouched,
    read_again,
    read_screened,
)
from crdharness.gate.checks.upgrade_repaired import REPAIRED
from crdharness.gate.checks.upgrade_rewrites import write_all_again, write_baseline
from crdharness.gate.checks.upgrade_stored import STORED_OTHERWISE
from crdharness.gate.given.manifests import Release
from crdharness.gate.results import CheckResult
from crdharness.gate.run.context import GateContext

__all__ = ["RECREATES", "Written", "check", "decide", "etcd_snapshot", "write_baseline"]


def check(ctx: GateContext, release: Release, written, before, stored_before, judged=None) -> None:
    """``judged``: the singletons' objects (``phases.singletons``), read and written again
    one at a time before; they count, and decide changes, with the others."""
    result = ctx.result("upgrade", subjects.transition(release.index))
    for obj in written:
        obj.findings, obj.excused, obj.hazarded, obj.refused = [], [], set(), set()
    upgraded = [obj for obj in written if obj.crd in release.crds]
    stored_reads = upgrade_stored.reads_before(ctx, release, upgraded)
    one_by_one = [obj for obj in upgraded if not obj.screened]
    parts = concurrency.each(
        lambda obj: read_again(ctx, result.part(), release, obj), one_by_one, ctx.config.concurrency
    )
    checked = 0
    for part, reads in parts:
        result.add(part)
        checked += reads
    checked += read_screened(ctx, result, release, [obj for obj in upgraded if obj.screened])
    check_listed(ctx, result, release, upgraded)
    upgrade_stored.compare(ctx, result, release, upgraded, stored_reads)
    proven_untouched = check_untouched(ctx, result, written, before)
    writes, hazards = write_all_again(ctx, result, release, written)
    if judged is not None:
        checked, writes, hazards = (
            checked + judged.reads,
            writes + judged.writes,
            hazards + judged.hazards,
        )
        proven_untouched += judged.untouched
        written = [*written, *judged.objects]
    for name in ctx.live(release):
        expected = set(stored_before.get(name) or []) | {release.storage(name)}
        if not stored_before.get(name):
            expected = {release.storage(name)}
        actual = set(migration.stored_on(ctx, name, release))
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
        result.evidence = (
            f"{len(written)} object{'' if len(written) == 1 else 's'} read at every served "
            f"version ({checked} reads), unchanged{etcd}; written again {writes} times "
            "(update, annotation, server-side apply, status, re-create"
            + (
                f"; {screened} objects only as dry-run re-creates and LIST reads, written in "
                "full where refused"
                if (screened := sum(1 for w in written if w.screened))
                else ""
            )
            + "), all accepted and read back unchanged"
            + (f" but for {len(result.allowed)} excused by `allow`" if result.allowed else "")
            + (f"; not checked: {', '.join(left_out)} (refused, see install)" if left_out else "")
            + (
                f"; {hazards} writes release {release.index} already refused are its own "
                "hazards (see the report)"
                if hazards
                else ""
            )
            + _noted(
                result,
                NO_LONGER_DEFAULTED,
                f"reads of a value only release {release.index}'s default gave, which release "
                f"{release.index + 1} removed (never stored: noted, details)",
            )
            + _noted(
                result,
                STORED_OTHERWISE,
                f"CRD versions where objects release {release.index} stored lack what new ones "
                "hold (its hazards)",
            )
            + _noted(
                result,
                REPAIRED,
                "writes stored what an object read (the webhook's own bookkeeping consumed; "
                "details)",
            )
            + _noted(
                result,
                CARRIED_NOW,
                "reads holding now, through the new conversion, what the object was written "
                "with (a fix, not a finding; details)",
            )
            + (
                f"; {len(result.own_annotations)} reads showing the webhook's own annotations "
                "(listed apart)"
                if result.own_annotations
                else ""
            )
            + _noted(
                result,
                WRITTEN_MEANWHILE,
                "reads of old objects another client wrote since the gate's last read or "
                "write (the project's controllers: not compared; details)",
            )
            + _noted(
                result,
                WEBHOOKS_OWN,
                f"losses the webhook makes on objects of any release (under release "
                f"{release.index}, or new ones at a version it did not serve) are round-trip's "
                "findings, not this release's (details)",
            )
        )
        if left_out and result.passed:  # a CRD whose objects were never read is no pass
            result.passed = None
            result.evidence = (
                f"not proven: {', '.join(left_out)} refused at install (see install), its "
                f"objects not upgraded; the others: {result.evidence}"
            )
    listed = [n for n in release.crds if release is ctx.candidate and ctx.listed_only(n)]
    if result.passed and not written and listed:  # said, never a pass on nothing unexplained
        result.evidence = (
            f"no old objects to upgrade: {len(listed)} CRDs unchanged since release "
            f"{release.index}, listed only (`--full` writes and upgrades them)"
            + (f"; the others: {result.evidence}" if len(listed) < len(release.crds) else "")
        )
    rewritten = [obj for obj in written if obj.kept_from is None]  # the others only read
    decide(ctx, release, rewritten)
    enough_evidence(ctx, result, release, rewritten)
    for obj in written:  # what the operator of a source cluster must fix, by object
        if obj.captured and obj.findings:
            ctx.object_findings[obj.label] = list(obj.findings)
            ctx.writes_refused[obj.label] = set(obj.refused)


def _noted(result: CheckResult, prefix: str, what: str) -> str:
    """ "; N <what>" for the notes of ``result`` starting with ``prefix``, if any."""
    count = sum(1 for d in result.details if d.startswith(prefix))
    return f"; {count} {what}" if count else ""
