"""The same write under two releases: a convertibility failure is the candidate's doing only
where the release before it accepted that very write (issue 43).

A convertibility failure is one object's write refused on its way through the versions:
created at A, read at B, created again at B as read (a restore, a re-apply), written back.
``checks.debt`` knows the earlier release's debt by the paths a failure names, and a refusal
naming a path the earlier release's refusals never named is a finding. That blocked a fix:
an object the earlier release already could not re-create at B (its rules lost) is refused
by the fixed release for a field the fix now carries (a ``maxAge`` of ``0s`` converted to
``0``), so nothing a user could do before is refused now. Paths cannot tell that; the object
can. So each object a version pair's round trips take as far as B is noted by its body as
written at A (``key``) with how it ended (``note``), under the candidate and under the
release before it (its own round trips, ``previous_release``, while installed: the same
samples, mutated samples, coverage and drawn objects, with the same seed). A candidate's
failure whose object the earlier release:

- refused too (any step): that release's debt, listed apart with both reasons, never blocking;
- accepted (it could be read and created again at B): the candidate's finding, whatever paths
  the earlier release's other refusals named; and every other object the candidate refused
  that the earlier release accepted is a finding too (``regressions``): one object shown for
  a failure must not hide another of the same paths;
- never wrote (an object the candidate's own search found; one refused at A there): made
  again under that release's CRD once the candidate's round trips are done
  (``same_write_replay``), and decided as above; one it cannot make the same way (its schema
  prunes or refuses part of the body) is decided by its hazards (``evidence.hazard_errors``),
  else by the paths as before, and the failure says the per-object check was not made.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping

from crdharness.gate.evidence.packed import Packed
from crdharness.gate.results import Form, Found, NotConvertible, RoundTripFailure

CHECKS = ("convertibility",)  # the checks whose failures are one object's replayable write
DEBT, FINDING, NOT_KNOWN = "debt", "finding", "not known"

# body key -> the refusal of that write on its way (None: it went through)
Writes = Mapping[str, "NotConvertible | None"]


def key(body: dict) -> str:
    """A body as written at A, to know the same write again under another release."""
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def note(written: dict, body: dict, found: RoundTripFailure | None) -> None:
    """How the write of ``body`` ended, into ``written``: refused on the way (the
    convertibility failure it is, or that a loss found first hid), or not."""
    known = key(body)
    refusal = found if isinstance(found, NotConvertible) else getattr(found, "refusal", None)
    kept = Packed.of(body) if found is not None else None  # for ``same_write_replay``
    for failure in (found, refusal):
        if failure is not None:
            failure.written_as, failure.written_body = known, kept
    written[known] = refusal


def kept(written: Writes) -> dict[str, NotConvertible | None]:
    """An earlier release's writes as kept for the run: each refusal by what ``judge`` reads
    (its evidence and paths), without the objects it showed (a provider's thousands of
    refused writes held every object read along the way: hundreds of megabytes)."""
    return {key: light(refusal) for key, refusal in written.items()}


def kept_against(mine: Writes, earlier: Writes | None) -> dict[str, NotConvertible | None]:
    """The candidate's writes as kept until its debt is settled: a refusal the earlier
    release (``earlier``) made of the same write too is kept ``light`` (it is debt, never
    shown); the others whole (one the earlier release let through is a finding that shows
    its objects; one it never made is made again, ``same_write_replay``)."""
    if not earlier:
        return dict(mine)
    return {
        key: light(refusal) if refusal is not None and earlier.get(key) is not None else refusal
        for key, refusal in mine.items()
    }


def light(refusal: NotConvertible | None) -> NotConvertible | None:
    """One refusal as ``kept`` keeps it (None: the write went through)."""
    if refusal is None:
        return None
    slim = NotConvertible(refusal.evidence, [], [], refusal.paths)
    slim.written_as = refusal.written_as
    return slim


def judge(found: Found, earlier: Writes | None, release: int) -> tuple[str, str]:
    """(DEBT, FINDING or NOT_KNOWN, the line saying why) for one failure of the candidate's,
    by what release ``release`` (1-based) did with the same write (``earlier``)."""
    if earlier is None or not found.written_as:
        return NOT_KNOWN, (
            f"the per-object check was not made: release {release}'s own round trips of this "
            "pair noted no writes; decided by the paths it names"
        )
    if found.written_as not in earlier:
        return NOT_KNOWN, (
            f"the per-object check was not made: release {release}'s own round trips did not "
            f"write this same object (found by the candidate's own search, or refused at A "
            f"under release {release}); decided by the paths it names"
        )
    refusal = earlier[found.written_as]
    if refusal is None:
        return FINDING, (
            f"this release's doing: under release {release} the same object (the same body "
            "written at the same version) went through: read, created again and written back"
        )
    # The object was unusable already: a field it is refused for now as well takes nothing
    # from a user, but is said (an object holding only that field would be a regression).
    also = sorted(found.form.paths - refusal.paths) if refusal.paths else []
    more = f" also for {', '.join(also)}" if also else ""
    return (
        DEBT,
        f"already refused under release {release}: {refusal.evidence}; now{more}: {found.evidence}",
    )


def noted(found: Found, line: str, headline: str = "") -> Found:
    """``found`` with ``line`` among its details (and ``headline`` before its evidence)."""
    evidence = headline + found.evidence
    details = [*found.details, line]
    return Found(found.form, evidence, details, found.objects, found.written_as, found.refused)


def went_through(release: int) -> str:
    """The first words of a refusal the earlier release did not make."""
    return f"the same write went through under release {release}, refused now: "


def regressions(
    candidate: Writes | None, earlier: Writes | None, shown: list[Found], release: int
) -> list[Found]:
    """Objects the candidate refused that release ``release`` accepted, each a finding, where
    no failure in ``shown`` (those left failing) is that object or names all its paths."""
    if not candidate or not earlier:
        return []
    named = {f.written_as for f in shown}
    paths = {p for f in shown for p in f.form.paths}
    found: list[Found] = []
    for written_as, refusal in candidate.items():
        accepted = written_as in earlier and earlier[written_as] is None
        if refusal is None or not accepted or written_as in named:
            continue
        if refusal.paths <= paths if refusal.paths else any(not f.form.paths for f in shown):
            continue  # a failure left failing names it already
        line = (
            f"this release's doing: under release {release} the same object went through "
            "(read, created again and written back)"
        )
        objects = [
            (f"refused now, accepted under release {release}: {t}", o) for t, o in refusal.shown
        ]
        evidence = went_through(release) + refusal.evidence
        found.append(
            Found(Form(refusal.paths), evidence, [*refusal.details, line], objects, written_as)
        )
        named.add(written_as)
        paths |= refusal.paths
    return found


def tally(candidate: Writes | None, earlier: Writes | None, release: int) -> str:
    """How the writes the candidate refused on this pair fared under release ``release``."""
    refused = [k for k, refusal in (candidate or {}).items() if refusal is not None]
    if not refused:
        return ""
    known = earlier or {}
    before = sum(1 for k in refused if k in known and known[k] is not None)
    through = sum(1 for k in refused if k in known and known[k] is None)
    return (
        f"by object: {len(refused)} writes refused now; under release {release} {before} of "
        f"them refused too, {through} went through, {len(refused) - before - through} not "
        "written by its own round trips"
    )
