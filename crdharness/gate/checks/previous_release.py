"""The release before the candidate through the candidate's own checks, while the history has
it installed (its CRDs, on this cluster, behind the webhook it runs under: its own where it
names one, else the candidate's): what ``checks.debt`` needs
to tell that release's debt from what the candidate breaks.

For each CRD the candidate also has and each ordered pair of the versions it serves: its
*schemas-vs-strategy* differences (from its manifest), and the *round-trip* and
*convertibility* failures of one round trip (``object_round_trip``, as the candidate's) of
each of the user's samples, of an object holding each path the two versions differ in, and of
the ``generate`` objects the candidate's pair draws first (the same seed: the same objects
where the schemas agree). and objects carrying the annotations its own webhook writes
(``annotation_objects``). No search and no shrinking: only the forms of the failures are
kept. What it writes it deletes; what the server refuses is not counted in the run's refusals.
"""

from __future__ import annotations

import itertools
import time

from crdharness.gate import concurrency, subjects
from crdharness.gate.api import ensure_namespace
from crdharness.gate.checks import (
    annotation_objects,
    debt,
    object_round_trip,
    round_trips,
    same_write,
    schemas_vs_strategy,
)
from crdharness.gate.checks.pair_record import PairRecord
from crdharness.gate.evidence import changes, coverage_objects, drawn_bodies, old_values, targeted
from crdharness.gate.given.manifests import Release
from crdharness.gate.results import Form, RoundTripFailure
from crdharness.gate.run.context import ROUND_TRIP_NS, GateContext


def run(ctx: GateContext, release: Release) -> None:
    """``release``'s forms into ``ctx.previous_forms``, when it is the one before the
    candidate (not a cluster's capture) and the candidate's own checks are planned. The gate's
    own failure here leaves nothing counted as debt (said in the report): the candidate's
    failures stay findings, as without a history."""
    if release.index != len(ctx.releases) - 2 or ctx.source is not None:
        return
    if not any(p.check in debt.CHECKS for p in ctx.planned):
        return
    started = time.perf_counter()
    try:
        _run(ctx, release)
    except Exception as exc:
        ctx.previous_forms = {}
        ctx.previous_not_evaluated = (
            f"release {release.index + 1}'s own checks could not run "
            f"({type(exc).__name__}: {exc}): nothing is counted as its debt"
        )
    ctx.timings[f"release {release.index + 1}'s own checks"] = round(
        time.perf_counter() - started, 2
    )


def _run(ctx: GateContext, release: Release) -> None:
    ctx.report(f"gate: release {release.index + 1}: its own round trips (for its debt)")
    ensure_namespace(ctx.cluster, ROUND_TRIP_NS)
    with ctx.refusals_uncounted():  # no evidence about the candidate
        tripped = []
        for name in ctx.live(release):
            if name not in ctx.candidate.crds or ctx.listed_only(name):
                continue  # a CRD listed only: none of the candidate's checks to compare
            ctx.previous_forms[subjects.key("schemas-vs-strategy", name)] = [
                Form(frozenset({path}), pair)
                for pair, path, _ in schemas_vs_strategy.differences(ctx, release, name)
            ]
            if _through_a_webhook(ctx, release, name):
                ctx.debt_unknowable.append(
                    f"{name}: its round trips go through the candidate's webhook under both "
                    f"releases (the gate runs one webhook), so a loss they share is that "
                    f"webhook's, not release {release.index + 1}'s: none is its debt"
                )
                continue
            tripped.append(name)
        # CRDs side by side, as the candidate's (each writes only its own subjects' forms).
        concurrency.each(
            lambda name: _round_trips(ctx, release, name), tripped, concurrency.CRDS_AT_ONCE
        )


def _round_trips(ctx: GateContext, release: Release, name: str) -> None:
    """``name``'s round trips under ``release``, pair by pair: their failures' forms."""
    pairs = list(itertools.permutations(release.served(name), 2))
    forms: dict[tuple[str, str], set[tuple[str, Form]]] = {}
    failed: dict[tuple[str, str], list[dict]] = {}  # pair -> the bodies that failed
    for a, b in pairs:
        ctx.check_deadline(f"release {release.index + 1}'s round trips of {name}")
        written = ctx.previous_writes.setdefault(
            subjects.key("convertibility", subjects.pair(name, a, b)), {}
        )
        forms[a, b], failed[a, b] = _pair(
            ctx, release, name, a, b, _bodies(ctx, release, name, a, b), written
        )
    # As the candidate's pairs start from what other pairs found: those bodies too.
    for a, b in pairs:
        found = [body for pair, bodies in failed.items() if pair != (a, b) for body in bodies]
        subject = subjects.pair(name, a, b)
        again = [(body, False) for body in found]
        written = ctx.previous_writes[subjects.key("convertibility", subject)]
        forms[a, b] |= _pair(ctx, release, name, a, b, again, written)[0]
        for check in ("round-trip", "convertibility"):
            ctx.previous_forms[subjects.key(check, subject)] = [
                f for c, f in forms[a, b] if c == check
            ]


def _through_a_webhook(ctx: GateContext, release: Release, name: str) -> bool:
    """Whether ``name``'s conversions under ``release`` are the candidate's webhook's: then
    what the previous release "already loses" is that webhook losing it. A release that
    names its own webhook (``crds[i].webhook``) runs its round trips through it, and one
    with strategy None through the API server alone: what they lose is their own, knowable
    debt (a candidate moving to a webhook that loses the same is not worse)."""
    return not ctx.own_webhook(release, name) and ctx.by_webhook(release, name)


def _bodies(
    ctx: GateContext, release: Release, name: str, a: str, b: str
) -> list[tuple[dict, bool]]:
    """(body, whether it is the user's sample) to round-trip between ``a`` and ``b``: the
    samples, an object holding each path the versions differ in, the drawn objects."""
    entry = release.entry(name, a)
    samples = ctx.sample_bodies(name, a)
    bodies = [(body, True) for body in samples]
    # The coverage objects, as the candidate's pair starts with: a path they lose under both
    # releases is the same loss (values the random draws only ever held at zero would not be).
    bodies += [(body, False) for body in coverage_objects.bodies(entry)]
    for change in changes.between_versions(release, name, a, b):
        try:
            bodies += [(body, False) for body in targeted.bodies(change, entry, samples)[:1]]
        except old_values.NoObject:
            continue  # the candidate's object for it is no debt then
    if ctx.config.generate:
        drawn = drawn_bodies.bodies(entry, samples, ctx.config.generate, ctx.config.seed)
        bodies += [(body, False) for body in drawn]
    # Objects carrying the annotations its own webhook wrote at ``a`` (as the candidate's
    # pair tries its webhook's): a user's value both webhooks lose is that release's debt.
    proxy = getattr(ctx.release_webhooks.get(release.index), "proxy", None)
    if proxy is not None:
        spec = release.crds[name]["spec"]
        exchanges = [e for e in list(proxy.exchanges) if e.kind == "ConversionReview"]
        written = annotation_objects.written(exchanges, spec["group"], spec["names"]["kind"], a)
        bodies += [(body, False) for _, body in annotation_objects.bodies(written)]
    return bodies


def _pair(
    ctx: GateContext,
    release: Release,
    name: str,
    a: str,
    b: str,
    bodies: list[tuple[dict, bool]],
    written: dict,
) -> tuple[set[tuple[str, Form]], list[dict]]:
    """(check, form) of each failure of ``bodies``' round trips between ``release``'s
    versions ``a`` and ``b``, and a body that failed so for each; how each write ended into
    ``written`` (``same_write``: the candidate's refusals of the same writes are its debt)."""
    manifest, entry = release.crds[name], release.entry(name, a)

    def round_trip(item: tuple[dict, bool]) -> tuple[list[RoundTripFailure], PairRecord]:
        body, sample = item
        seen = PairRecord()
        failure = object_round_trip.run(
            ctx, manifest, entry, a, b, body, seen, sample, release=release
        )
        return ([failure] if failure is not None else []) + list(seen.also), seen

    outcomes = concurrency.each(round_trip, bodies, ctx.config.concurrency)
    first: dict[tuple[str, Form], dict] = {}  # one body per form, as the candidate keeps one
    for (found, seen), (body, _) in zip(outcomes, bodies, strict=True):
        written.update(same_write.kept(seen.written))
        for failure in found:
            first.setdefault((failure.check, round_trips.form(failure)), body)
    return set(first), list(first.values())
