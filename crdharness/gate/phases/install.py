"""Each release's CRDs applied as a cluster would get them: what the API server refuses or
never serves fails *install*; a refusal for versions clusters still store is *migration*'s
finding, with the advice to ship a release that migrates first."""

from __future__ import annotations

from crdharness.gate import concurrency, subjects
from crdharness.gate.api import Answer, apply_crd, condition, read_crd
from crdharness.gate.checks import migration
from crdharness.gate.given.manifests import Release
from crdharness.gate.phases import serving
from crdharness.gate.run import floor
from crdharness.gate.run.context import GateContext
from crdharness.polling import WaitTimeout

# CRDs waited for at once. Few: each wait for Established has its own minute, and a wait
# starts only as an earlier one ends, so this many must be established within that minute.
SETTLING = 4


def apply_release(
    ctx: GateContext,
    release: Release,
    live: list[str],
    stored_before: dict[str, list[str]],
    first: dict[str, dict] | None = None,
) -> set[str]:
    """Apply every CRD of ``release`` (as ``first`` has it, where given); the names the API
    server refused or never served."""
    result = ctx.result("install", subjects.release(release.index))
    refused: set[str] = set()
    still_stored: dict[str, list[str]] = {}  # refused for versions clusters still store
    statuses: set[int] = set()  # the API server's answers to those
    applied: list[tuple[str, dict]] = []
    # All applied first, then waited for: the API server establishes them side by side, so
    # a release of many CRDs waits about as long as for one (issue 42).
    for name in live:
        if name in ctx.not_installed:
            continue  # nothing of it is judged (``run.floor``): said in the row
        manifest = (first or release.crds)[name]
        answer = apply_crd(ctx.cluster, ctx.pointed(manifest, release))
        if not answer.ok:
            result.fail(
                f"the API server refused {name}: {answer.message}",
                f"{name}: {answer.status} {answer.message}",
            )
            removed = _explain_refusal(ctx, release, name, stored_before.get(name, []), answer)
            if removed:
                still_stored[name] = removed
                statuses.add(answer.status)
            refused.add(name)
            continue
        applied.append((name, manifest))
    # Waited for side by side, judged in order: the API server builds a resource's storage
    # when it is first asked, so waiting for one CRD after another built them one by one
    # (provider-upjet-aws, 2,015 CRDs: 16 minutes of waits after the applies).
    settled = concurrency.each(lambda item: _settle(ctx, *item), applied, SETTLING)
    for (name, _), (blocked, crd) in zip(applied, settled, strict=True):
        if isinstance(blocked, WaitTimeout):
            result.fail(f"{name} was applied but is not served: {blocked}")
            refused.add(name)
            continue
        if blocked is not None:
            _not_served(ctx, result, release, name, blocked)
            refused.add(name)
            continue
        names = condition(crd, "NamesAccepted")
        if names.get("status") != "True":
            result.fail(f"{name}: names not accepted: {names.get('message')}")
    transition = subjects.transition(release.index)
    # A bundle's headline names every CRD refused, not only the first (the details hold
    # each one's message): fixing the first alone would not make the release install.
    if len(refused) > 1 and result.passed is False:
        result.evidence = (
            f"the API server refused or does not serve {len(refused)} CRDs: "
            f"{', '.join(sorted(refused))} (each one's message below)"
        )
    if len(still_stored) > 1:
        versions = ", ".join(sorted({v for removed in still_stored.values() for v in removed}))
        ctx.result("migration", transition).evidence = (
            f"{', '.join(sorted(still_stored))}: clusters that still store {versions} reject "
            f"this revision with {'/'.join(map(str, sorted(statuses)))}: ship a release that "
            "migrates first"
        )
    for name in live:
        if name in refused or not ctx.planned_check("migration", transition):
            continue
        removed = [v for v in stored_before.get(name, []) if v not in release.names(name)]
        dropped = _dropped_versions(ctx, release, name)
        if dropped and not removed and ctx.result("migration", transition).passed:
            ctx.result("migration", transition).evidence = (
                f"{name}: removed {', '.join(dropped)}, no longer in status.storedVersions "
                f"{stored_before.get(name)}: accepted"
            )
    floored = {n: g for n, g in ctx.not_installed.items() if n in live}
    result.details += floor.by_group(floored)
    if result.passed:
        verb = "created" if release.index == 0 else "applied on top of the previous release"
        left_out = [n for n in release.crds if n not in live]
        result.evidence = (
            f"{len(live) - len(floored)} CRDs {verb}; Established, names accepted"
            + (
                f" ({', '.join(left_out)} left out: refused by an earlier release)"
                if left_out
                else ""
            )
            + (f"; {floor.clause(floored)}" if floored else "")
        )
    return refused


def _settle(
    ctx: GateContext, name: str, manifest: dict
) -> tuple[serving.Blocked | WaitTimeout | None, dict]:
    """Wait until ``name`` serves (``serving.wait_settled``): what keeps it from serving
    (a timeout among them), and the CRD as the API server then has it."""
    try:
        blocked = serving.wait_settled(ctx, manifest)
    except WaitTimeout as exc:
        return exc, {}
    return blocked, (read_crd(ctx.cluster, name) or {}) if blocked is None else {}


def _not_served(
    ctx: GateContext, result, release: Release, name: str, blocked: serving.Blocked
) -> None:
    """A stored object keeps ``name`` from serving (``serving``): the release's finding,
    unless it changes nothing that could have made that object unreadable ("not proven")."""
    where = release.index  # 1-based: the release before this one, which stored the object
    what = (
        f"{name} was applied but does not serve at {blocked.version}: the API server cannot "
        f"build its cache of the resource, as it cannot read {blocked.label}, stored before "
        f"this release, at {blocked.version} ({blocked.read[:300]})"
    )
    said = f"the API server said: {blocked.said[:500]}"
    if not serving.same_conversion(ctx, release, name):
        result.fail(
            what,
            said,
            "an object stored under an earlier release that this release cannot convert keeps "
            "the resource from serving at all (see kube-apiserver.log in the failure bundle "
            "and the webhook's answers)",
        )
        return
    line = (
        f"not proven: {what}; release {where + 1} changes nothing of {name} (the same "
        f"schemas, converted the same way as under release {where}), so not its doing: the "
        f"object was already so before it (made so under release {where}; see its hazards)"
    )
    if result.passed is True:  # a finding, or an earlier "not proven", stays the headline
        result.passed, result.evidence = None, line
    result.details += [line, said]


def _dropped_versions(ctx: GateContext, release: Release, name: str) -> list[str]:
    if release.index == 0:
        return []
    previous = ctx.releases[release.index - 1]
    return [v for v in previous.names(name) if v not in release.names(name)]


def _explain_refusal(
    ctx: GateContext, release, name, stored: list[str], answer: Answer
) -> list[str]:
    """A release that drops a version clusters still store: check *migration*'s finding.
    The versions it drops that clusters still store (none: the refusal is another's)."""
    removed = [v for v in stored if v not in release.names(name)]
    if not removed:
        return []
    result = ctx.result("migration", subjects.transition(release.index))
    versions = ", ".join(removed)
    result.fail(
        f"{name}: clusters that still store {versions} reject this revision with "
        f"{answer.status}: ship a release that migrates first",
        f"{name}: status.storedVersions before the upgrade: {stored}",
        *migration.removal_advice(ctx.releases, release, name, removed, ctx.config),
        f"the API server said: {answer.message}",
    )
    return removed
