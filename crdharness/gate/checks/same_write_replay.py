"""The same write made under the release before, for the candidate's refused writes its round
trips never made (issue 43).

``same_write`` decides a candidate's convertibility failure by the same object under the
release before, where that release's own round trips (``previous_release``, while the history
had it installed) wrote it; an object they did not write (the candidate's search found it, a
coverage object only the candidate's schema builds) was decided by paths alone. That blocked a
fixed kueue release (v0.16.7) for a status v0.16.6's webhook answers the same way: its round
trips simply never held that object.

So, once the candidate's round trips are done, each such refused write (a few per pair,
``PER_PAIR``) is made again with release N-1's CRD applied over the candidate's (pointed at the
webhook that release runs under), and the candidate's CRD applied back after. How it ends
there is noted as release N-1's own round trips note theirs (``same_write.note``), under the
same key: refused there too, the failure is that release's debt; gone through, it is the
candidate's finding. A body release N-1 sends otherwise (its schema prunes or the screening
repairs it: another key) is not the same write and stays undecided, as does every write of a
CRD whose release N-1 manifest the API server will not take back (a version the candidate
stores that it does not declare): said in the row.
"""

from __future__ import annotations

from collections import defaultdict

from crdharness.gate import subjects
from crdharness.gate.api import apply_crd
from crdharness.gate.checks import migration, object_round_trip, same_write, status_anew
from crdharness.gate.checks.pair_record import PairRecord
from crdharness.gate.given.manifests import Release
from crdharness.gate.run.context import GateContext
from crdharness.gate.run.own_failures import cause_of
from crdharness.scenarios import crds

# Refused writes replayed per version pair, each one round trip: as many as the distinct
# statuses a pair writes anew (each replay's may be a new one).
PER_PAIR = status_anew.STATUSES_ANEW


def replay(ctx: GateContext) -> None:
    """Replay under release N-1 the candidate's refused writes its round trips never made,
    noting how each ended into ``ctx.previous_writes``."""
    if len(ctx.releases) < 2 or ctx.source is not None:
        return
    previous = ctx.releases[-2]
    for crd, writes in _undecided(ctx, previous).items():
        ctx.check_deadline(f"the candidate's refused writes of {crd} under the release before")
        ctx.report(
            f"gate: {crd}: {sum(len(w) for w in writes.values())} refused writes made again "
            f"under release {previous.index + 1}"
        )
        stored = migration.stored_versions(ctx.cluster, crd)
        applied = apply_crd(ctx.cluster, ctx.pointed(previous.crds[crd], previous))
        if not applied.ok:
            _say(
                ctx,
                writes,
                f"not replayed: release {previous.index + 1}'s {crd} cannot be "
                f"applied over the candidate's ({applied.status} {applied.message[:200]})",
            )
            continue
        try:
            crds.wait_settled(ctx.cluster.api_client, previous.crds[crd])
            with ctx.refusals_uncounted():  # no evidence about the candidate
                for key, bodies in writes.items():
                    _replay_pair(ctx, previous, key, bodies)
        except Exception as exc:  # the gate's own (a wait past its minute): left undecided
            _say(ctx, writes, f"not replayed under release {previous.index + 1}: {cause_of(exc)}")
        finally:
            _applied_back(ctx, crd, stored, previous)


def _applied_back(ctx: GateContext, crd: str, stored: list[str], previous: Release) -> None:
    """The candidate's ``crd`` as it was before the replay, ``status.storedVersions`` too
    (release N-1's storage version, written to by the replay's objects, must not read as
    stored for the checks after: the kubernetes upgrade's, a migration's trimmed list)."""
    back = apply_crd(ctx.cluster, ctx.pointed(ctx.candidate.crds[crd], ctx.candidate))
    if back.ok and migration.stored_versions(ctx.cluster, crd) != stored:
        back = migration.set_stored_versions(ctx.cluster, crd, stored)
    if not back.ok:
        raise RuntimeError(
            f"the candidate's {crd} could not be put back as it was after the replay under "
            f"release {previous.index + 1}: {back.status} {back.message}"
        )
    crds.wait_settled(ctx.cluster.api_client, ctx.candidate.crds[crd])


def _undecided(ctx: GateContext, previous: Release) -> dict[str, dict[str, list]]:
    """CRD -> convertibility key -> (body key, body) of the candidate's refused writes the
    release before's round trips of that pair did not make (where they ran at all)."""
    found: dict[str, dict[str, list]] = defaultdict(dict)
    for key, mine in ctx.candidate_writes.items():
        theirs = ctx.previous_writes.get(key)
        if theirs is None:
            continue  # that release was not run through the pair: nothing to compare with
        crd, a, b = subjects.of_pair(key.partition(":")[2])
        if crd in ctx.unchanged or not {a, b} <= set(previous.served(crd)):
            continue
        bodies = [
            (k, refusal.written_body.value())
            for k, refusal in mine.items()
            if refusal is not None and k not in theirs and refusal.written_body is not None
        ]
        if len(bodies) > PER_PAIR:
            _say(
                ctx,
                {key: bodies},
                f"{len(bodies) - PER_PAIR} more of the candidate's refused writes not made "
                f"again under release {previous.index + 1} (at most {PER_PAIR} per pair): "
                f"decided by its hazards, or else the paths they name",
            )
        if bodies:
            found[crd][key] = bodies[:PER_PAIR]
    return found


def _replay_pair(ctx: GateContext, previous: Release, key: str, bodies: list) -> None:
    crd, a, b = subjects.of_pair(key.partition(":")[2])
    manifest, entry = previous.crds[crd], previous.entry(crd, a)
    theirs = ctx.previous_writes[key]
    # The statuses its own round trips wrote anew count no more: each replay writes its own.
    ctx.statuses_anew.pop((previous.index, crd, a, b), None)
    other = 0  # bodies release N-1 sent otherwise: not the same write
    for written_as, body in bodies:
        seen = PairRecord()
        object_round_trip.run(ctx, manifest, entry, a, b, body, seen, release=previous)
        if written_as in seen.written:
            theirs[written_as] = same_write.light(seen.written[written_as])
        else:
            other += 1
    if len(bodies) > other:
        _say(
            ctx,
            {key: bodies},
            f"{len(bodies) - other} of the candidate's refused writes that release "
            f"{previous.index + 1}'s own round trips never made were made again under it (its "
            "CRD applied over the candidate's for them, then the candidate's back)",
        )
    if other:
        _say(
            ctx,
            {key: bodies},
            f"{other} of the candidate's refused writes not made the same way under release "
            f"{previous.index + 1} (its schema prunes or refuses part of the body, or another "
            f"client wrote the object meanwhile): decided by release {previous.index + 1}'s "
            "hazards, or else the paths they name",
        )


def _say(ctx: GateContext, writes: dict[str, list], line: str) -> None:
    """``line`` for the rows of ``writes``, added once their debt is settled (``said``)."""
    for key in writes:
        ctx.replay_notes.setdefault(key, []).append(line)


def said(ctx: GateContext) -> None:
    """What the replay did, in each row it concerns (after ``debt.settle`` rebuilt them)."""
    for key, lines in ctx.replay_notes.items():
        check, _, subject = key.partition(":")
        ctx.result(check, subject).details += lines
