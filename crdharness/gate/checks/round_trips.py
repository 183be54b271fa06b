"""Checks *round-trip* and *convertibility* for one ordered pair (A, B) of the candidate's
served versions: one object's round trip (``object_round_trip``) for the user's samples,
what other pairs already found, and objects generated from A's schema (or mutated from the
samples), shrunk to a minimal one on failure within a time budget; then the pair's results.
"""

from __future__ import annotations

import itertools
import time
from collections import Counter

from crdharness.gate import concurrency, diff, subjects
from crdharness.gate.checks import (
    annotation_objects,
    debt,
    drawn_search,
    object_round_trip,
    pair_differences,
    path_coverage,
    same_write,
    seen_at_b,
    status_anew,
)
from crdharness.gate.checks.pair_record import PairRecord
from crdharness.gate.evidence import changes, drawn_bodies, objects, refusal
from crdharness.gate.results import Form, Found, RoundTripFailure
from crdharness.gate.run.context import PAIR_CAUSES, GateContext

MAX_FINDINGS = 3  # distinct failures searched for per version pair
CARRYING = "carrying the webhook's own annotations"  # counted objects (annotation_objects)


def pairs(ctx: GateContext, name: str) -> list[str]:
    return [
        subjects.pair(name, a, b) for a, b in itertools.permutations(ctx.candidate.served(name), 2)
    ]


def check_pair(ctx: GateContext, name: str, a: str, b: str) -> None:
    """*round-trip* and *convertibility* of the candidate's ``name`` from ``a`` to ``b``."""
    counted: Counter[str] = Counter()  # the refusals' causes of this pair's own objects
    token = PAIR_CAUSES.set(counted)
    try:
        _check_pair(ctx, name, a, b, counted)
    finally:
        PAIR_CAUSES.reset(token)


def _check_pair(ctx: GateContext, name: str, a: str, b: str, counted: Counter[str]) -> None:
    subject = subjects.pair(name, a, b)
    round_trip = ctx.result("round-trip", subject)
    convertible = ctx.result("convertibility", subject)
    manifest = ctx.candidate.crds[name]
    entry = ctx.candidate.entry(name, a)
    seen = PairRecord()
    started = time.perf_counter()
    ctx.report(f"gate: {subject}: round trips ({ctx.config.generate} generated objects)")

    shown: set[str] = set()  # checks and paths already reported for this pair

    def new(failure: RoundTripFailure) -> bool:
        return not _kinds(failure) <= shown

    def remember(failure: RoundTripFailure, label: str) -> None:
        _record(ctx, failure, round_trip, convertible, label)
        if failure.check == "round-trip":  # a refusal's fields were not lost
            ctx.lost_paths.setdefault(name, set()).update(failure.paths)
        shown.update(_kinds(failure))

    def attempt(body: dict, sample: bool = False) -> RoundTripFailure | None:
        return object_round_trip.run(ctx, manifest, entry, a, b, body, seen, sample)

    def attempt_into(body: dict, record: PairRecord, refusals: list) -> RoundTripFailure | None:
        return object_round_trip.run(
            ctx, manifest, entry, a, b, body, record, False, refusals=refusals
        )

    for body in ctx.sample_bodies(name, a):
        failure = attempt(body, sample=True)
        if failure is not None and new(failure):
            remember(failure, f"your sample {body.get(objects.NAME, '(unnamed)')}")
    # Each path the two schemas differ in gets an object of its own, before any search: one
    # early failure cannot hide another, and the headline is the first path whose data is
    # lost.
    for change in changes.between_versions(ctx.candidate, name, a, b):
        ctx.pair_changes.append(change)
        failure = pair_differences.round_trip_holding(
            ctx, change, entry, lambda body, refusals: attempt_into(body, seen, refusals), seen
        )
        if failure is not None and new(failure):
            remember(failure, f"object holding {change.path}")
    # Objects built to hold every path the schema declares, at any depth, before any draw:
    # a field six levels down is as much the webhook's to carry as a top-level one.
    samples = ctx.sample_bodies(name, a)
    covered, refused_paths, unconverted = path_coverage.exercise(
        ctx, entry, samples, attempt_into, seen, ctx.candidate.entry(name, b)
    )
    for failure in covered:
        if new(failure):
            remember(failure, "coverage object")
    # What another pair already found starts this one: no search from scratch. Bodies
    # found from A first, then from other versions: a field A's schema does not declare is
    # left out before sending (the API server would prune it at A, silently: a loss the
    # gate's own request made, which once read as the webhook's); other differences of
    # the schemas are refused, and so only counted.
    replay = ctx.found.get((name, a), []) + [
        body
        for (crd, version), bodies in list(ctx.found.items())  # other CRDs' grow meanwhile
        if crd == name and version != a
        for body in bodies
    ]
    for body in replay:
        failure = attempt(body)
        if failure is not None and new(failure):
            remember(failure, "minimal object (found for another pair)")
    shrunk = ctx.shrunk.setdefault(name, set())

    def shrunk_elsewhere(failure: RoundTripFailure) -> bool:
        """The same failure (its paths at or under paths already shrunk) was shrunk for
        another pair: shown there, not shrunk again."""
        return all(any(diff.at_or_under(k, done) for done in shrunk) for k in _kinds(failure))

    def owed(failure: RoundTripFailure) -> bool:
        """The previous release's own round trips of this pair failed at the same paths (its
        debt, listed apart): shown as drawn, not shrunk, when the search meets it (shrinking
        spent up to ``shrink_seconds`` per pair on a provider's old defect)."""
        earlier = ctx.previous_forms.get(subjects.key(failure.check, subject), [])
        return not ctx.config.fail_debt and debt.wholly_owed(form(failure), earlier)

    def not_shrunk(failure: RoundTripFailure) -> bool:
        return shrunk_elsewhere(failure) or owed(failure)

    shrink_until: list[float] = []  # the pair's shrinking deadline, set at its first failure
    # The drawn objects go out many at once first: a pair they all pass needs no search,
    # and takes far less than the webhook's latency times its reviews. A new failure among
    # them is searched for again one object at a time, as hypothesis must to shrink it.
    searching = ctx.config.generate and _drawn_fail(ctx, name, entry, a, b, seen, new)
    for _ in range(MAX_FINDINGS if searching else 0):  # each looks for a failure not shown yet
        failure = drawn_search.search(ctx, name, entry, attempt, new, shrink_until, not_shrunk)
        if failure is None:
            break
        if shrunk_elsewhere(failure):
            remember(failure, "object (not shrunk again: shrunk for another version pair)")
        elif owed(failure):
            remember(failure, "object (not shrunk: the previous release fails the same way)")
        else:
            remember(failure, "minimal object (shrunk)")
            shrunk.update(_kinds(failure))
        ctx.found.setdefault((name, a), []).append(failure.body)
    # Objects carrying the annotations the webhook wrote into objects at A so far (its
    # bookkeeping keys, learned from its answers): a value of one lost or changed is data lost.
    tried, carrying, left = _carrying_annotations(ctx, name, a, attempt)
    if tried:
        seen.counts[CARRYING] += tried
    if left:  # said, never passed over: the cap is the gate's, not the webhook's
        round_trip.details.append(
            f"not tried: {len(left)} more object(s) carrying the webhook's annotations "
            f"(at most {annotation_objects.MAX_BODIES} per pair): " + "; ".join(left[:5])
        )
    for label, failure in carrying:
        if new(failure):
            remember(failure, label)
    for failure in seen.also:  # refused at B, on objects round-trip reports for data lost
        if new(failure):
            remember(failure, "object (its data lost too: see round-trip)")
    for result in (round_trip, convertible):
        result.counts = dict(seen.counts)
    round_trip.allowed, round_trip.normalised = seen.allowed, seen.normalised
    round_trip.respelt = seen.respelt
    round_trip.own_annotations = seen.own_annotations
    round_trip.pruned = seen.pruned
    round_trip.unseen_at_b = seen.unseen_at_b
    if seen.counts[seen_at_b.NOT_PROBED]:
        round_trip.unseen_at_b.append(seen_at_b.not_probed(seen.counts[seen_at_b.NOT_PROBED], a, b))
    # For its debt (``same_write``): release N-1's round trips of this pair ran before.
    theirs = ctx.previous_writes.get(convertible.key)
    ctx.candidate_writes[convertible.key] = same_write.kept_against(seen.written, theirs)
    ctx.timings[f"round trips {subject}"] = round(time.perf_counter() - started, 2)
    alone = (
        " (the candidate installed on its own: the history could not apply it)"
        if name in ctx.refused_crds
        else ""
    )
    if round_trip.passed:
        round_trip.evidence = (
            f"{seen.counts['compared']} objects equal after {a}->{b}->{a}"
            + (
                f" ({seen.counts['written meanwhile']} written meanwhile by another client, "
                "not compared)"
                if seen.counts["written meanwhile"]
                else ""
            )
            + (f" ({seen.counts[CARRYING]} {CARRYING})" if seen.counts[CARRYING] else "")
            + (f" ({len(round_trip.allowed)} allowed differences)" if round_trip.allowed else "")
            + (
                f" ({len(round_trip.respelt)} re-spelt by the webhook, reading the same at {b}: "
                "see report.md)"
                if round_trip.respelt
                else ""
            )
            + (
                f" ({len(seen.hidden)} path(s) held at {b} only in the webhook's annotations: "
                "see report.md)"
                if seen.hidden
                else ""
            )
            + (
                f" ({len(round_trip.pruned)} fields pruned by the gate's own request, not the "
                "webhook's: see report.md)"
                if round_trip.pruned
                else ""
            )
            + alone
        )
    if convertible.passed:
        anew = seen.counts[status_anew.STATUS_ANEW]
        convertible.evidence = (
            f"{seen.counts['created']} objects valid at {a} read and written at {b}"
            + (f" ({anew} of their statuses also written anew on a new copy)" if anew else "")
            + alone
        )
    compared, created = seen.counts["compared"], seen.counts["created"]
    causes = dict(counted)
    tried = created + seen.counts["refused"]
    meanwhile = seen.counts["written meanwhile"]
    for result, count in ((round_trip, compared), (convertible, created)):
        if created and count < ctx.config.min_objects and result.passed:
            result.passed = None
            result.evidence = too_few(
                count,
                ctx.config.min_objects,
                refusal.summary(causes, seen.counts["refused"], tried),
                meanwhile,
            )
    # The gate's own want of objects is no finding: "not proven", saying what refused them.
    for result in (round_trip, convertible):
        if created == 0 and result.passed:
            result.passed = None
            result.evidence = (
                f"not proven: no object could be created at {a}: "
                f"{refusal.summary(causes, seen.counts['refused'], tried)}: add samples "
                "that the API server (and your admission webhooks) accept"
            )
    path_coverage.settle(
        round_trip,
        path_coverage.judge(
            entry,
            seen.held,
            refused_paths,
            seen.stopped,
            seen.lost_whole,
            seen.parents_lost,
            unconverted,
            seen.gone,
        ),
        a,
    )


def too_few(count: int, wanted: int, refused: str, meanwhile: int) -> str:
    """A pair's "not proven" for too few objects: what refused the others (``refused``) and
    how many another client wrote meanwhile, with what to do about the larger cause."""
    advice = "add samples the API server and your admission webhooks accept"
    if meanwhile:  # the user's controllers, running in the webhook's process, wrote them
        advice = (
            f"; {meanwhile} written meanwhile by another client (your controllers, if the "
            "webhook's process runs them): run the webhook without the controllers that "
            f"write these objects (a webhook-only mode), or {advice}"
        )
    else:
        advice = f": {advice}"
    return (
        f"not proven: only {count} objects reached this check (at least {wanted} needed, "
        f"`min_objects`); {refused}{advice}"
    )


def _carrying_annotations(
    ctx: GateContext, name: str, a: str, attempt
) -> tuple[int, list, list[str]]:
    """``annotation_objects.round_trip`` on the candidate's webhook's reviews so far."""
    proxy = getattr(ctx.webhook, "proxy", None)
    if proxy is None:
        return 0, [], []
    spec = ctx.candidate.crds[name]["spec"]
    exchanges = [e for e in list(proxy.exchanges) if e.kind == "ConversionReview"]
    return annotation_objects.round_trip(
        exchanges, spec["group"], spec["names"]["kind"], a, attempt
    )


def _drawn_fail(
    ctx: GateContext, crd: str, entry: dict, a: str, b: str, seen: PairRecord, new
) -> bool:
    """``generate`` drawn objects round-tripped, ``concurrency`` at once (each with its own
    record, added to ``seen`` in order): whether one failed in a way ``new`` accepts."""
    manifest = ctx.candidate.crds[crd]
    samples = ctx.sample_bodies(crd, entry["name"])
    bodies = drawn_bodies.bodies(entry, samples, ctx.config.generate, ctx.config.seed)

    def round_trip(body: dict) -> tuple[RoundTripFailure | None, PairRecord]:
        record = PairRecord()
        return object_round_trip.run(ctx, manifest, entry, a, b, body, record), record

    outcomes = concurrency.each(round_trip, bodies, ctx.config.concurrency)
    for _, record in outcomes:
        seen.add(record)
    return any(failure is not None and new(failure) for failure, _ in outcomes)


def _record(
    ctx: GateContext, failure: RoundTripFailure, round_trip, convertible, label: str
) -> None:
    result = round_trip if failure.check == "round-trip" else convertible
    shown = [(f"{label}: {title}", obj) for title, obj in failure.shown]
    found = Found(
        form(failure),
        failure.evidence,
        list(failure.details),
        shown,
        failure.written_as,
        failure.refused,
    )
    result.fail(failure.evidence, *failure.details, found=[found])
    result.objects += shown


def form(failure: RoundTripFailure) -> Form:
    """A round trip's failure as ``checks.debt`` knows it again: the schema paths it
    changed, or the fields a write as read was refused for; a convertibility failure that
    names none (the object cannot be read or written at all) is known by its pair alone."""
    return Form(failure.paths, at_b=failure.at_b)


def _kinds(failure: RoundTripFailure) -> set[str]:
    """What a failure is, to know it again: the paths a round trip changed; the fields a
    convertibility failure names, or the check where it names none."""
    if failure.check == "round-trip":
        return set(failure.paths)
    return {f"{failure.check}:{p}" for p in failure.paths} or {failure.check}
