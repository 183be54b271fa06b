"""Part of check *round-trip*: each path two of the candidate's served versions differ in
(``changes.between_versions``) gets an object of its own, round-tripped before any search,
and a row ("Paths that differ between the candidate's served versions") decided from what
happened to that path: lost, kept, normalised, held at B only in the webhook's annotations,
or not proven, saying why."""

from __future__ import annotations

from collections import Counter

from crdharness.gate import diff
from crdharness.gate.checks import seen_at_b
from crdharness.gate.checks.pair_record import PairRecord
from crdharness.gate.evidence import changes, old_values, targeted
from crdharness.gate.evidence.changes import Change
from crdharness.gate.results import RoundTripFailure
from crdharness.gate.run.context import GateContext


def round_trip_holding(
    ctx: GateContext, change: Change, entry: dict, attempt, seen: PairRecord
) -> RoundTripFailure | None:
    """One object holding ``change``'s path, round-tripped; the change's decision: proven
    (lost or changed, or not convertible), cleared (kept), allowed or normalised, or not
    proven (no object could be built or created)."""
    try:
        bodies = targeted.bodies(change, entry, ctx.sample_bodies(change.crd, entry["name"]))
    except old_values.Harmless as exc:
        change.decide(changes.CLEARED, str(exc))
        return None
    except old_values.NoObject as exc:
        change.decide(changes.NOT_PROVEN, f"no object holding it could be built: {exc}")
        return None
    refusals: list = []  # the server's answers to this change's own objects
    # The next only when the server refused the one before, or the webhook lost the path's
    # parent whole (an item dropped for its empty key): another object decides the path.
    dropped: RoundTripFailure | None = None  # a parent lost whole: a finding of its own
    for body in bodies[:3]:
        before = Counter(seen.counts), len(seen.allowed), len(seen.normalised)
        answers: list = []  # each attempt its own: the round trip counts what it is given
        failure = attempt(body, answers)
        refusals += answers
        if failure is not None and parent_lost(failure, change.path):
            dropped = dropped or failure
        elif seen.counts["refused"] == before[0]["refused"]:
            break
    a, b = change.version.split("->")
    if failure is not None:
        # A convertibility failure naming no field (the object cannot be read or written at
        # all) is the change's; one naming fields (a write as read refused for them) only
        # where they are its path, as a loss is.
        # A loss of the path's parent (an item dropped whole) says nothing of the path: what
        # the webhook does with it where it keeps the parent is unknown.
        mine = (failure.check == "convertibility" and not failure.paths) or any(
            diff.at_or_under(diff.schema_path(p), change.path) for p in failure.paths
        )
        control = (
            _fails_without_it(ctx, change, entry, attempt) if mine and not failure.paths else None
        )
        if control is not None:
            change.decide(
                changes.NOT_PROVEN,
                f"the object it was built on fails the same way without it: {control}",
            )
        elif mine:
            change.decide(changes.PROVEN, failure.evidence)
        elif parent_lost(failure, change.path):
            change.decide(
                changes.NOT_PROVEN,
                f"every object holding it lost a parent of it whole: {failure.evidence}",
            )
        else:
            change.decide(changes.NOT_PROVEN, f"failed on another path first: {failure.evidence}")
    elif seen.counts["refused"] > before[0]["refused"]:
        said = f"{refusals[-1].status} {refusals[-1].message[:200]}" if refusals else "refused"
        change.decide(
            changes.NOT_PROVEN, f"its objects were refused at creation (the last: {said})"
        )
    elif len(seen.allowed) > before[1]:
        change.decide(changes.ALLOWED, seen.allowed[-1])
    elif len(seen.normalised) > before[2]:
        # An empty or zero value read back absent: nothing was lost, nor shown kept.
        change.decide(
            changes.NOT_PROVEN,
            f"its object held only an empty or zero value there, normalised "
            f"({seen.normalised[-1]}): a sample with a value decides it",
        )
    elif seen.counts["compared"] > before[0]["compared"]:
        hidden = [n for p, n in seen.hidden.items() if diff.at_or_under(p, change.path)]
        undecided = seen.counts[seen_at_b.UNDECIDED]
        if hidden:  # back equal, yet a client of B does not see it
            change.decide(changes.HIDDEN_AT_B, f"back equal after {a}->{b}->{a}; {hidden[0]}")
        else:
            change.decide(
                changes.CLEARED,
                f"kept: an object holding it read back equal after {a}->{b}->{a}"
                + (
                    f" (what {b} shows of {undecided} objects not decided: see report.md)"
                    if undecided
                    else ""
                ),
            )
    else:
        change.decide(
            changes.NOT_PROVEN, "its object was written meanwhile by another client: not compared"
        )
    return failure or dropped


def _fails_without_it(ctx: GateContext, change: Change, entry: dict, attempt) -> str | None:
    """For a conversion failure that names no field on an object built to hold a path: the
    evidence of the same kind of failure on what that object was built on (a sample, or the
    smallest object), without the path's value, or None. A sample the webhook cannot convert
    at all (kueue's panic on a topology assignment, in the outside trial) fails every object
    built on it: that proves nothing of the path."""
    for base in targeted.bases(entry, ctx.sample_bodies(change.crd, entry["name"])):
        failure = attempt(base, [])
        if failure is not None and failure.check == "convertibility" and not failure.paths:
            return failure.evidence
    return None


def parent_lost(failure: RoundTripFailure, path: str) -> bool:
    """Whether a round trip lost a parent of ``path`` whole (and not the path itself)."""
    return failure.check == "round-trip" and any(
        diff.at_or_under(path, q) and path != q for q in map(diff.schema_path, failure.paths)
    )
