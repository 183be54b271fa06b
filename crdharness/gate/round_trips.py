"""Checks *round-trip* and *convertibility* for one ordered pair (A, B) of the candidate's
served versions: create at A, read at B, update at B (and its status), read at A; with the
user's samples, what other pairs already found, and objects generated from A's schema (or
mutated from the samples), shrunk to a minimal one on failure within a time budget.
"""

from __future__ import annotations

import itertools
import time
from collections import Counter
from dataclasses import dataclass, field

from crdharness.gate import checks, diff, objects, schemas
from crdharness.gate.api import Answer, Resource, call
from crdharness.gate.context import ROUND_TRIP_NS, GateContext
from crdharness.gate.results import DataChanged, NotConvertible, RoundTripFailure

TOUCH = "gate.crdharness.io/round-trip"
MAX_FINDINGS = 3  # distinct failures searched for per version pair


@dataclass
class PairRecord:
    """What one version pair's round trips saw, written to its results once, at the end:
    objects refused, created and compared, and the differences that are not findings."""

    counts: Counter[str] = field(default_factory=Counter)
    allowed: list[str] = field(default_factory=list)  # excused by an `allow` entry
    normalised: list[str] = field(default_factory=list)  # {} or [] read back absent


class ShrinkBudgetSpent(BaseException):
    """Raised through hypothesis (not an Exception, so not a failing example) when shrinking
    has taken ``shrink_seconds``: a CI gate that takes 18 minutes to say no gets turned off."""


def pairs(ctx: GateContext, name: str) -> list[str]:
    return [
        checks.pair(name, a, b) for a, b in itertools.permutations(ctx.candidate.served(name), 2)
    ]


def check_pair(ctx: GateContext, name: str, a: str, b: str) -> None:
    subject = checks.pair(name, a, b)
    round_trip = ctx.result("round-trip", subject)
    convertible = ctx.result("convertibility", subject)
    manifest = ctx.candidate.crds[name]
    entry = ctx.candidate.entry(name, a)
    seen = PairRecord()
    started = time.perf_counter()
    ctx.report(f"gate: {subject}: round trips ({ctx.config.generate} generated objects)")

    shown: set[str] = set()  # checks and paths already reported for this pair

    def new(failure: RoundTripFailure) -> bool:
        if failure.check == "convertibility":
            return "convertibility" not in shown
        return not failure.paths <= shown

    def remember(failure: RoundTripFailure, label: str) -> None:
        _record(ctx, failure, round_trip, convertible, label)
        ctx.lost_paths.setdefault(name, set()).update(failure.paths)
        shown.update(failure.paths if failure.check == "round-trip" else {failure.check})

    def attempt(body: dict, sample: bool = False) -> RoundTripFailure | None:
        return _round_trip(ctx, manifest, entry, a, b, body, seen, sample)

    for body in ctx.sample_bodies(name, a):
        failure = attempt(body, sample=True)
        if failure is not None and new(failure):
            remember(failure, "sample")
    # What another pair already found starts this one: no search from scratch. Bodies
    # found from A first, then from other versions (valid at A where the schemas agree;
    # refused, and so only counted, where they do not).
    replay = ctx.found.get((name, a), []) + [
        body
        for (crd, version), bodies in ctx.found.items()
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

    shrink_until: list[float] = []  # the pair's shrinking deadline, set at its first failure
    for _ in range(MAX_FINDINGS):  # each search looks for a failure not shown yet
        failure = _search(ctx, name, entry, attempt, new, shrink_until, shrunk_elsewhere)
        if failure is None:
            break
        if shrunk_elsewhere(failure):
            remember(failure, "object (not shrunk again: shrunk for another version pair)")
        else:
            remember(failure, "minimal object (shrunk)")
            shrunk.update(_kinds(failure))
        ctx.found.setdefault((name, a), []).append(failure.body)
    for result in (round_trip, convertible):
        result.counts = dict(seen.counts)
    round_trip.allowed, round_trip.normalised = seen.allowed, seen.normalised
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
            + (f" ({len(round_trip.allowed)} allowed differences)" if round_trip.allowed else "")
            + alone
        )
    if convertible.passed:
        convertible.evidence = (
            f"{seen.counts['created']} objects valid at {a} read and written at {b}" + alone
        )
    compared, created = seen.counts["compared"], seen.counts["created"]
    meanwhile = seen.counts["written meanwhile"]
    for result, count in ((round_trip, compared), (convertible, created)):
        if created and count < ctx.config.min_objects and result.passed:
            result.passed = None
            result.evidence = (
                f"not proven: only {count} objects reached this check (at least "
                f"{ctx.config.min_objects} needed, `min_objects`); refused: "
                f"{dict(ctx.refused)}"
                + (
                    f"; {meanwhile} written meanwhile by another client (your controllers, "
                    "if the webhook's process runs them)"
                    if meanwhile
                    else ""
                )
                + ": add samples the API server and your admission webhooks accept"
            )
    for result in (round_trip, convertible):
        if created == 0 and result.passed:
            result.passed = False
            result.evidence = (
                f"no object could be created at {a} (refused: {dict(ctx.refused)}): add "
                "samples that the API server accepts"
            )


def _search(
    ctx: GateContext,
    crd: str,
    entry: dict,
    attempt,
    new,
    shrink_until: list[float],
    shrunk_elsewhere,
) -> RoundTripFailure | None:
    """Run ``attempt`` on generated bodies until one fails in a way ``new`` accepts; the
    minimal such failure hypothesis shrank to, within the pair's ``shrink_seconds`` (one
    budget for all of a pair's searches, started at its first failure). A failure
    ``shrunk_elsewhere`` accepts is returned as found: failing is fast when every pair
    fails the same way."""
    if not ctx.config.generate:
        return None
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as fixed_seed
    from hypothesis import strategies as st
    from hypothesis.errors import Flaky

    seen: list[RoundTripFailure] = []
    budget = ctx.config.shrink_seconds
    samples = ctx.sample_bodies(crd, entry["name"])
    drawn = objects.bodies(entry)
    if samples:  # half the user's samples mutated, half drawn from the schema
        drawn = st.one_of(objects.mutations(entry, samples), drawn)

    @fixed_seed(ctx.config.seed)
    @settings(
        max_examples=ctx.config.generate,
        database=None,
        deadline=None,
        report_multiple_bugs=False,
        suppress_health_check=list(HealthCheck),
        print_blob=False,
    )
    @given(drawn)
    def run(body):
        if seen and time.monotonic() > shrink_until[0]:
            raise ShrinkBudgetSpent  # keep the smallest failure seen so far
        failure = attempt(body)
        if failure is not None and new(failure):
            failure.body, failure.at = body, time.monotonic()
            if not shrink_until:
                shrink_until.append(failure.at + budget)
            seen.append(failure)
            if shrunk_elsewhere(failure):
                raise ShrinkBudgetSpent  # returns it unshrunk
            raise failure

    try:
        run()
    except RoundTripFailure as failure:
        return failure  # hypothesis re-raises the minimal example's failure last
    except (Flaky, ShrinkBudgetSpent):
        # Out of time, or a failure that did not repeat on replay: the smallest seen.
        return min(seen, key=lambda f: f.size) if seen else None
    return None


def _record(
    ctx: GateContext, failure: RoundTripFailure, round_trip, convertible, label: str
) -> None:
    result = round_trip if failure.check == "round-trip" else convertible
    result.fail(failure.evidence, *failure.details)
    for title, obj in failure.shown:
        result.objects.append((f"{label}: {title}", obj))


def _round_trip(
    ctx: GateContext, manifest, entry, a, b, body, seen: PairRecord, sample: bool = False
) -> RoundTripFailure | None:
    resource = Resource.of(manifest)
    namespace = ROUND_TRIP_NS if resource.namespaced else None
    name = ctx.name(f"rt-{a}-{b}".lower())
    try:
        created = ctx.create(manifest, entry, a, name, namespace, body)
    except NotConvertible as failure:
        if sample or not ctx.config.admission:
            return failure
        # The project's admission webhooks run before validation, each on the object
        # converted to its own version (matchPolicy Equivalent): a drawn object they would
        # have refused can fail that conversion first (seen: kubebuilder's CronJob, whose
        # webhook parses the cron schedule its validating webhook checks). Not proof.
        why = f"could not be created at {a} (a conversion the admission webhooks need failed)"
        ctx.refused[why] += 1
        ctx.refused_examples.setdefault(why, failure.evidence[:300])
        seen.counts["refused"] += 1
        return None
    if created is None:
        seen.counts["refused"] += 1
        return None
    seen.counts["created"] += 1
    try:
        return _compare(ctx, resource, namespace, name, a, b, body, created, seen)
    finally:
        # At the storage version where it is served: the answer needs no conversion.
        crd = _crd_of(ctx, resource)
        storage = ctx.candidate.storage(crd)
        at = storage if storage in ctx.candidate.served(crd) else a
        call(ctx.cluster, "DELETE", resource.path(at, namespace, name))


def _compare(ctx: GateContext, resource, namespace, name, a, b, body, created, seen: PairRecord):
    """``created`` is the server's answer to the write at A: the object as stored and read
    back at A (the server decodes what it wrote to etcd and converts it to A), so no GET."""
    crd = _crd_of(ctx, resource)
    sent = objects.manifest(ctx.candidate.crds[crd], a, name, namespace, body)
    original = created
    shown = [(f"written at {a}", _clean(original))]
    # What was written must read back at the same version: a version other than the
    # storage version goes through the webhook on the way in, and can lose data there.
    # Fields that appear (defaults) are not losses. (A dry-run create cannot serve as the
    # reference: it converts to the storage version too, and hides the loss.)
    wanted = {**objects.intent(body), "metadata": sent["metadata"]}
    kept = {k: v for k, v in original.items() if k in wanted}
    kept["metadata"] = {k: v for k, v in original["metadata"].items() if k in sent["metadata"]}
    lost = [d for d in diff.differences(wanted, kept) if d.change != "added"]
    lost = _judged(ctx, seen, lost, a, b)
    if lost:
        read_back = [(f"sent at {a}", sent), (f"read back at {a}", _clean(original))]
        return _data_changed(
            f"written at {a}, read back at {a}: changed {{paths}}", lost, read_back
        )
    at_b = call(ctx.cluster, "GET", resource.path(b, namespace, name))
    if not at_b.ok:
        return _not_convertible(
            f"an object valid at {a} cannot be read at {b}", f"GET at {b}", at_b, shown
        )
    if _version_of(at_b.body) != _version_of(original):
        return _written_meanwhile(seen)
    shown.append((f"read at {b}", _clean(at_b.body)))
    # A field with the same path and type at both versions means the same at both: a
    # webhook that swaps two fields both ways survives A->B->A, yet every client of B
    # reads wrong values.
    moved = _judged(ctx, seen, _read_differently(ctx, crd, a, b, original, at_b.body), a, b)
    if moved:
        headline = f"written at {a}, read at {b}: {{paths}} (same path and type at both) lost "
        headline += f"or changed at {b}"
        return _data_changed(headline, moved, shown, detail=f"at {a} -> at {b}: ")

    def touch(current: dict) -> dict:
        current.setdefault("metadata", {}).setdefault("annotations", {})[TOUCH] = b
        return current

    # Each write sends exactly what was read: a conflict means another client (the
    # project's own controllers run beside its webhook) wrote the object meanwhile.
    path = resource.path(b, namespace, name)
    updated = call(ctx.cluster, "PUT", path, touch(at_b.body))
    if updated.status == 409:
        return _written_meanwhile(seen)
    if not updated.ok:
        return _not_convertible(
            f"an object read at {b} cannot be written back at {b}", f"PUT at {b}", updated, shown
        )
    if objects.has_status(ctx.candidate.entry(crd, b)):  # through its own endpoint
        status = call(ctx.cluster, "PUT", path + "/status", updated.body)
        if status.status == 409:
            return _written_meanwhile(seen)
        updated = status
        if not status.ok:
            return _not_convertible(
                f"an object read at {b} cannot have its status written at {b}",
                f"PUT {b}/status",
                status,
                shown,
            )
    back = call(ctx.cluster, "GET", resource.path(a, namespace, name))
    if not back.ok:
        return _not_convertible(
            f"an object written at {b} cannot be read at {a}", f"GET at {a}", back, shown
        )
    if _version_of(back.body) != _version_of(updated.body):
        return _written_meanwhile(seen)
    shown.append((f"read back at {a}", _clean(back.body)))
    seen.counts["compared"] += 1
    found = diff.differences(
        diff.comparable(original), diff.comparable(back.body, ignore_annotations=(TOUCH,))
    )
    found = _judged(ctx, seen, found, a, b)
    if found:
        return _data_changed(f"{a}->{b}->{a} changed {{paths}}", found, shown)
    return None


def _judged(ctx: GateContext, seen: PairRecord, found: list, a: str, b: str) -> list:
    """The differences that are findings: not excused by an ``allow`` entry (noted in
    ``seen.allowed``) and, unless ``strict``, not an empty value that came back absent
    or the reverse (noted in ``seen.normalised``)."""
    findings = []
    for d in found:
        rule = next((r for r in ctx.config.allow if r.covers(d.path, a, b)), None)
        if rule is not None:
            note = f"{d.path} ({rule.reason})"
            if note not in seen.allowed:
                seen.allowed.append(note)
        elif not ctx.config.strict and d.normalised:
            if d.describe() not in seen.normalised:
                seen.normalised.append(d.describe())
        else:
            findings.append(d)
    return findings


def _read_differently(ctx: GateContext, crd: str, a: str, b: str, at_a: dict, at_b: dict) -> list:
    shared = schemas.shared_fields(ctx.candidate, crd, a, b)
    there = diff.leaves(at_b)
    found = []
    for path, value in diff.leaves(at_a).items():
        if path.startswith("metadata.") or diff.schema_path(path) not in shared:
            continue
        if path not in there:
            found.append(diff.Difference(path, "lost", value))
        elif not diff.same(value, there[path]):
            found.append(diff.Difference(path, "changed", value, there[path]))
    return found


def _crd_of(ctx: GateContext, resource: Resource) -> str:
    return f"{resource.plural}.{resource.group}"


def _data_changed(headline: str, found: list, shown: list, detail: str = "") -> DataChanged:
    """Data a round trip lost or changed: ``headline`` names the ``{paths}``."""
    paths = ", ".join(sorted({d.path for d in found}))
    details = [detail + d.describe() for d in found]
    return DataChanged(headline.format(paths=paths), details, shown, _paths(found))


def _not_convertible(what: str, request: str, answer: Answer, shown: list) -> NotConvertible:
    """A step of the round trip the server refused or failed: ``what`` could not be done."""
    return NotConvertible(
        f"{what}: {answer.message}", [f"{request}: {answer.status} {answer.message}"], shown
    )


def _version_of(obj: dict) -> str | None:
    return (obj.get("metadata") or {}).get("resourceVersion")


def _written_meanwhile(seen: PairRecord) -> None:
    """Another client wrote the object during its round trip: not the webhook's doing, so
    not compared (counted, and said in the evidence)."""
    seen.counts["written meanwhile"] += 1
    return None


def _kinds(failure: RoundTripFailure) -> set[str]:
    """What a failure is, to know it again: the paths a round trip changed, or the check."""
    return set(failure.paths) if failure.check == "round-trip" else {failure.check}


def _paths(found: list) -> frozenset[str]:
    """The schema paths of differences: one defect at several list items is one finding."""
    return frozenset(diff.schema_path(d.path) for d in found)


def _clean(obj: dict) -> dict:
    """An object as a person wants to see it: without managedFields and server bookkeeping."""
    shown = diff.comparable(obj)
    shown["apiVersion"] = obj.get("apiVersion")
    return {"apiVersion": shown.pop("apiVersion"), **shown}
