"""Phase *candidate*: the candidate release on its own. For every ordered pair of each CRD's
served versions, *round-trip* and *convertibility* (``round_trips``); then
*schemas-vs-strategy* (after the round trips: it ranks what they lost) and the user's
*expected-conversion* pairs. Then the refused writes the release before's own round trips
never made are made again under its CRD (``same_write_replay``). Last, what the release before
it already fails the same way is set apart as that release's debt (``checks.debt``).
"""

from __future__ import annotations

import itertools

from crdharness.gate import concurrency, subjects
from crdharness.gate.api import apply_crd, delete_crd, ensure_namespace, read_crd
from crdharness.gate.checks import (
    debt,
    expectations,
    round_trips,
    same_write_replay,
    schemas_vs_strategy,
)
from crdharness.gate.run.context import ROUND_TRIP_NS, GateContext
from crdharness.gate.run.own_failures import contained
from crdharness.scenarios import crds


def run(ctx: GateContext) -> None:
    try:
        _run(ctx)
        with ctx.timed("candidate: refused writes made again under the release before"):
            same_write_replay.replay(ctx)
    finally:  # a failure of the gate's own mid-phase still sets apart what is debt
        with ctx.timed("candidate: debt"):
            _settle_debt(ctx)


def _run(ctx: GateContext) -> None:
    # Round trips need the candidate installed; without the history (or for a CRD a
    # release of it refused) it is installed on its own.
    alone = [
        name for name in ctx.candidate.crds if not ctx.history_completed or name in ctx.refused_crds
    ]
    uninstallable = set()
    for name in alone:
        manifest = ctx.candidate.crds[name]
        if read_crd(ctx.cluster, name) is not None:
            delete_crd(ctx.cluster, name)
        answer = apply_crd(ctx.cluster, ctx.pointed(manifest, ctx.candidate))
        if not answer.ok:
            for check in ("round-trip", "convertibility"):
                for subject in round_trips.pairs(ctx, name):
                    ctx.result(check, subject).fail(
                        f"the candidate's {name} cannot be installed: {answer.message}"
                    )
            uninstallable.add(name)
            continue
        crds.wait_settled(ctx.cluster.api_client, manifest)
    ensure_namespace(ctx.cluster, ROUND_TRIP_NS)
    judged = []
    for name in ctx.candidate.crds:
        if name in uninstallable:
            continue
        if name in ctx.unchanged:
            _listed(ctx, name)
            if ctx.listed_only(name):
                continue
        judged.append(name)
    # CRDs side by side, each its pairs in order (a pair starts from what the pairs before it
    # found); the pairs' differences in the CRDs' order, as one at a time would list them.
    concurrency.each(lambda name: _judge(ctx, name), judged, concurrency.CRDS_AT_ONCE)
    order = {name: i for i, name in enumerate(ctx.candidate.crds)}
    ctx.pair_changes.sort(key=lambda change: order.get(change.crd, len(order)))
    ctx.working_on(*(subjects.key("expected-conversion", e.subject) for e in ctx.config.expect))
    expectations.check(ctx)
    ctx.working_on()


def _judge(ctx: GateContext, name: str) -> None:
    """The round trips of each ordered pair of ``name``'s served versions, then its
    schemas-vs-strategy (which ranks what they lost)."""
    for a, b in itertools.permutations(ctx.candidate.served(name), 2):
        ctx.check_deadline(f"the round trips of {name} {a}->{b}")
        subject = subjects.pair(name, a, b)
        with (
            ctx.working(
                subjects.key("round-trip", subject), subjects.key("convertibility", subject)
            ),
            contained(ctx.result("round-trip", subject), ctx.result("convertibility", subject)),
        ):
            round_trips.check_pair(ctx, name, a, b)
    with (
        ctx.timed("candidate: schemas vs strategy"),
        contained(ctx.result("schemas-vs-strategy", name)),
    ):
        schemas_vs_strategy.check(ctx, name)
    ctx.screening.memo.forget(name)  # its screens are not asked for again: memory back


def _listed(ctx: GateContext, name: str) -> None:
    """The one row of a CRD the release did not change (``evidence.unchanged``)."""
    result = ctx.result("unchanged", name)
    previous = len(ctx.releases) - 1
    if ctx.config.full:
        result.evidence = (
            f"{ctx.unchanged[name]}: judged again (`full`); what its own checks find is "
            f"release {previous}'s debt by construction"
        )
    else:
        result.evidence = (
            f"{ctx.unchanged[name]}: not judged again (its round trips, convertibility and "
            f"schemas-vs-strategy would judge release {previous}'s CRD; `--full` runs them)"
        )


def _settle_debt(ctx: GateContext) -> None:
    """What the release before the candidate already fails the same way is its debt, not
    the candidate's finding (``checks.debt``)."""
    if len(ctx.releases) < 2:
        return  # no earlier release: nothing is debt
    previous = len(ctx.releases) - 1  # its 1-based number
    judged = [n for n in ctx.candidate.crds if not ctx.listed_only(n)]
    if judged and not ctx.previous_forms and not ctx.previous_not_evaluated:
        ctx.previous_not_evaluated = (
            f"release {previous} was not run through the candidate's own checks (the history "
            "did not reach it, or was not run): nothing is counted as its debt"
        )
    ctx.debt = debt.settle(
        ctx.results.values(),
        ctx.previous_forms,
        previous,
        ctx.config.fail_debt,
        ctx.config.min_objects,
        ctx.unchanged,
        {k: (w, ctx.previous_writes.get(k)) for k, w in ctx.candidate_writes.items()},
        ctx.hazard_errors,
    )
    same_write_replay.said(ctx)
    if ctx.previous_not_evaluated and ctx.unchanged:
        ctx.previous_not_evaluated += (
            f" (but for the {len(ctx.unchanged)} CRDs the release did not change: their own "
            f"checks' failures are release {previous}'s debt by construction)"
        )
