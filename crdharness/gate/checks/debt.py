"""A release is blamed only for what it makes worse. A failure of the candidate's own checks
(``CHECKS``: they judge the candidate alone, ``run.plan.RELEASE_ONLY``) that the release before
it already has in the same form is that release's **debt**: listed apart, and not the
candidate's finding, unless the gate file says ``debt: fail`` (or ``strict: true``). A gate that
blocks every pull request for an old defect gets switched off.

The same form: the same check and subject (the CRD and its version pair), the same version
pair where the subject is a whole CRD, and every path the candidate's failure names at or under
a path one of the earlier release's failures of that check and subject names (one lost subtree
is the same loss whatever part of it an object held). A failure that names no path (an
object one version cannot store, read or write: convertibility) is the same when the earlier
release has one that names none either. A round trip's loss is also the same where the
earlier release's own schemas already differ in that subtree for that pair under strategy
None (its *schemas-vs-strategy* form): every object holding it loses it there. Any other
path is a finding as before; the part of that failure that is debt is still listed apart. A
check and subject the earlier release was not run through (a version pair it does not serve,
no history, the history deselected) has no debt: its failures stay findings.

A convertibility failure is one object's write, replayable: it is known by its object where
the earlier release's round trips wrote the same one, or it was made again under that
release (``same_write``, ``same_write_replay``): refused there too, it is that release's debt
whatever paths it names; accepted there, it is the candidate's finding whatever paths the
earlier release's other refusals name. An object the earlier release could not be sent the
same way is its debt where its own objects were refused at B for every same field in the same
words (its hazards, ``evidence.hazard_errors``), else decided by its paths (and says so).

A CRD the release did not change (``evidence.unchanged``: identical after documentation,
under strategy None or behind the same webhook) owes every failure of its own checks to the
earlier release by construction, whether or not that release's round trips held the same
object: the same CRD, converted the same way, fails the same way under it. So are the paths
its round trips held no object of only because their objects met such a failure first
(``path_coverage``'s ``behind_a_failure``), where the pair is left with nothing but that debt.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from crdharness.gate import diff, subjects
from crdharness.gate.checks import same_write
from crdharness.gate.evidence import hazard_errors
from crdharness.gate.results import CheckResult, Debt, Form, Found

CHECKS = ("round-trip", "convertibility", "schemas-vs-strategy", "expected-conversion")
# What a cleared round trip still needs reached, as its own "not proven" rule counts it: once
# every failure is debt, each object created went through the round trip (equal, or failing
# only as the previous release does), so all of them count.
REACHED = {"round-trip": "created", "convertibility": "created"}


def wholly_owed(form: Form, earlier: Sequence[Form]) -> bool:
    """Whether ``earlier`` (the previous release's forms of the same check and subject) has
    every part of ``form``: nothing of it is the candidate's."""
    return bool(earlier) and split(form, earlier)[1] is None


def split(form: Form, earlier: Sequence[Form]) -> tuple[Form | None, Form | None]:
    """``form`` as (the part the ``earlier`` forms already have, the part they do not);
    either is None when empty."""
    same = [e for e in earlier if e.pair == form.pair]
    if not form.paths:
        return (form, None) if any(not e.paths for e in same) else (None, form)

    def owed(p: str) -> bool:
        # A loss every client of B reads is owed only to one the earlier release showed at
        # B as well: one it made only on the way back to A leaves B's readers unharmed.
        where = [e.at_b for e in same] if p in form.at_b else [e.paths for e in same]
        return any(diff.at_or_under(p, q) for paths in where for q in paths)

    old = frozenset(p for p in form.paths if owed(p))
    new = form.paths - old
    return (
        Form(old, form.pair, form.at_b & old) if old else None,
        Form(new, form.pair, form.at_b & new) if new else None,
    )


def settle(
    results: Iterable[CheckResult],
    previous: dict[str, list[Form]],
    release: int,
    fail_debt: bool = False,
    min_objects: int = 0,
    unchanged: Mapping[str, str] | None = None,
    writes: Mapping[str, tuple[same_write.Writes, same_write.Writes | None]] | None = None,
    hazards: hazard_errors.Hazards | None = None,
) -> list[Debt]:
    """The debt of ``release`` (1-based) among the failing ``results``, whose failures
    ``previous`` (check:subject -> the forms of that release's failures, for each it was run
    through) already has; each result left with its other failures only (``fail_debt``:
    left as it is). A result that failed for a reason no form stands for keeps failing.
    ``unchanged``: CRDs the release did not change (-> why): all their failures are debt.
    ``writes``: check:subject -> (the candidate's writes, that release's), ``same_write``.
    ``hazards``: the field errors of the writes each release refused its own objects
    (``evidence.hazard_errors``), for what ``same_write`` cannot decide."""
    listed: list[Debt] = []
    results = list(results)
    for result in results:
        if result.check not in CHECKS or result.passed is not False or not result.found:
            continue
        why = (unchanged or {}).get(crd_of(result))
        earlier = previous.get(result.key)
        if why is not None:  # by construction: every failure of it is the earlier release's
            earlier = [found.form for found in result.found]
        elif earlier is None:  # that release was not run through it: nothing is known of it
            continue
        earlier = [*earlier, *_lost_by_strategy_none(result, previous)]
        debts: list[Debt] = []
        owed: list[Found] = []  # failures that are debt as a whole
        remaining: list[Found] = []
        by_object = why is None and result.check in same_write.CHECKS and writes is not None
        mine, theirs = (writes or {}).get(result.key, ({}, None))
        notes: list[str] = []  # what the per-object check said, where the result stays
        reshown = False  # a failure the per-object check reworded (not the paths' decision)
        for found in result.found:
            said = ""
            if by_object:
                kind, said = same_write.judge(found, theirs, release)
                notes.append(said)
                if kind == same_write.DEBT:
                    debts.append(Debt(release, *_at(result), found.form, said, fail_debt, True))
                    owed.append(found)
                    continue
                if kind == same_write.FINDING:
                    headline = same_write.went_through(release)
                    remaining.append(same_write.noted(found, said, headline))
                    reshown = True
                    continue
                hazarded = _hazarded(found, result, hazards, release)
                if hazarded is not None:
                    debts.append(Debt(release, *_at(result), *hazarded, fail_debt))
                    owed.append(found)
                    continue
                found = same_write.noted(found, said)
            old, new = split(found.form, earlier)
            if old is not None:
                owes = f"{found.evidence} ({said})" if said else found.evidence
                debts.append(Debt(release, *_at(result), old, owes, fail_debt))
            if new is None:
                owed.append(found)
            elif old is not None:  # the new paths first: they are what this release broke
                remaining.append(_only_new(found, new, old, release))
            else:
                remaining.append(found)
        listed += debts
        if by_object and debts:  # an object the earlier release accepted is not hidden
            remaining += same_write.regressions(mine, theirs, remaining, release)
        if (debts or reshown) and not fail_debt and not result.unexplained:
            _rebuild(result, remaining, owed, debts, release, min_objects, why)
        else:
            result.details += [n for n in dict.fromkeys(notes) if n not in result.details]
        if by_object and (counted := same_write.tally(mine, theirs, release)):
            result.details.append(counted)
    if unchanged and not fail_debt:
        _owe_paths_behind_debt(results, listed, release, unchanged)
    return listed


def _hazarded(
    found: Found, result: CheckResult, hazards: hazard_errors.Hazards | None, release: int
) -> tuple[Form, str] | None:
    """(the debt's form, its evidence) where release ``release``'s own objects were refused
    as ``found`` (a write at B the same-write check could not decide) is, field by field and
    word for word (``evidence.hazard_errors``); else None."""
    if hazards is None or found.refused is None:
        return None
    crd, _, version = subjects.of_pair(result.subject)
    paths = hazards.covering(release - 1, crd, version, found.refused)
    if not paths:
        return None
    said = hazard_errors.said(release, version, paths)
    return Form(paths, found.form.pair, found.form.at_b & paths), f"{said}: {found.evidence}"


def _at(result: CheckResult) -> tuple[str, str]:
    return result.check, result.subject


def crd_of(result: CheckResult) -> str:
    """The CRD a candidate's own check judges (its subject: the CRD, or "CRD A->B")."""
    if result.check == "schemas-vs-strategy":
        return result.subject
    return result.subject.rpartition(" ")[0] or result.subject


def _lost_by_strategy_none(result: CheckResult, previous: dict[str, list[Form]]) -> list[Form]:
    """For a round trip through a version pair: the subtrees the earlier release's own
    schemas differ in for that pair under strategy None (its *schemas-vs-strategy* forms).
    Every object holding one loses it there, whichever the earlier release's own objects
    happened to hold (a zero value, normalised, where the candidate's held a 7): the same
    loss, not this release's doing."""
    if result.check != "round-trip":
        return []
    crd, _, pair = result.subject.rpartition(" ")
    forms = previous.get(subjects.key("schemas-vs-strategy", crd), [])
    # Lost wherever an object holding it is read at the version that lacks it: at B too.
    return [Form(form.paths, at_b=form.paths) for form in forms if form.pair == pair]


def _named(debt: Debt) -> str:
    """A debt as its row names it: its pair and paths, else its own first words (a failure
    without paths, such as a status the webhook cannot decode)."""
    paths = ", ".join(sorted(debt.form.paths))
    if debt.same_object:  # a refusal may name no field (a value the server cannot decode)
        same = f"the same object already refused under release {debt.release}"
        paths = f"{paths} ({same})" if paths else same
    named = " ".join(x for x in (debt.form.pair, paths) if x)
    if named:
        return named
    evidence = debt.evidence if len(debt.evidence) <= 160 else debt.evidence[:159] + "…"
    return f"the same failure ({evidence})"


def _only_new(found: Found, new: Form, old: Form, release: int) -> Found:
    evidence = (
        f"{', '.join(sorted(new.paths))} (new in this release; {', '.join(sorted(old.paths))} "
        f"is release {release}'s debt): {found.evidence}"
    )
    return Found(new, evidence, found.details, found.objects)


def _rebuild(
    result: CheckResult,
    remaining: list[Found],
    owed: list[Found],
    debts: list[Debt],
    release: int,
    min_objects: int,
    unchanged: str | None = None,
) -> None:
    """``result`` as its ``remaining`` failures alone make it, saying what it owes
    (``unchanged``: why the CRD is, when it is)."""
    owes = f"release {release}'s debt by construction ({unchanged})" if unchanged else ""
    note = (owes or f"release {release}'s debt") + ", not a finding: "
    note += "; ".join(dict.fromkeys(_named(d) for d in debts))
    result.passed, result.evidence, result.details, result.found = True, "", [], []
    result.failed = []
    result.objects = []
    for found in remaining:
        result.fail(found.evidence, *found.details, found=[found])
        result.objects += found.objects
    result.objects += [(f"release {release}'s debt: {t}", o) for f in owed for t, o in f.objects]
    if result.passed is False:  # its own failures name only their paths; the debt is listed
        return
    result.details.append(f"{note} (listed under 'Debt of earlier releases')")
    same = "refused the same objects" if all(d.same_object for d in debts) else "fails the same way"
    result.evidence = f"{note}: release {release} {same} (listed apart)"
    reached = result.counts.get(REACHED.get(result.check, ""), min_objects)
    if reached < min_objects:  # as the round trips' own rule: thin evidence is no pass
        result.passed = None
        result.evidence = (
            f"not proven: only {reached:g} objects reached this check (at least {min_objects} "
            f"needed, `min_objects`); {note}"
        )
    coverage = result.coverage or {}
    result.details += [
        f"judged without going round: {p}: {why}"
        for p, why in (coverage.get("lost_whole") or {}).items()
    ]
    if result.passed and coverage.get("uncovered"):
        # As the round trips' own rule: a pass below every path is "not proven", also where
        # the failures that were seen are all the earlier release's (seen: 3 of 41 paths
        # held, the other 38 wiped by the webhook, and the pair shown as a pass). Given back
        # where those paths are only behind that debt (``_owe_paths_behind_debt``).
        result.passed, result.unproven_pass = None, result.evidence
        result.evidence = (
            f"not proven: schema paths {coverage.get('exercised')}/{coverage.get('declared')} "
            f"held; not held: {', '.join(list(coverage['uncovered'])[:8])}; {note}"
        )


def _all_behind_a_failure(coverage: dict) -> bool:
    """Whether every path no object held is behind a failure (``path_coverage``): on a CRD
    the release did not change, failures that are all the earlier release's (it converts
    the same way), so the paths are owed like them."""
    uncovered = coverage.get("uncovered") or {}
    return bool(uncovered) and set(coverage.get("behind_a_failure") or ()).issuperset(uncovered)


def _behind(coverage: dict, release: int) -> str:
    return (
        f"; schema paths {coverage.get('exercised')}/{coverage.get('declared')} held, the "
        f"others only behind release {release}'s debt: "
        + ", ".join(list(coverage.get("uncovered") or {})[:8])
    )


def _owe_paths_behind_debt(
    results: list[CheckResult], listed: list[Debt], release: int, unchanged: Mapping[str, str]
) -> None:
    """An unchanged CRD's round trip that passed, left "not proven" only by paths whose
    objects met a failure first (its own: a round trip stopped on another path, a field
    above lost whole; or another row's: a conversion that cannot be written back): the pass
    it was, the paths said as behind the earlier release's debt. Only where that failure is
    debt: the pair owes release ``release`` something, and neither its round trips nor its
    convertibility are left with a failure of their own (``debt: fail``, a failure no form
    stands for: then what the paths are behind is not shown to be debt)."""
    owing = {d.subject for d in listed}
    for result in results:
        if (
            result.check != "round-trip"
            or result.passed is not None
            or not result.unproven_pass
            or crd_of(result) not in unchanged
            or result.subject not in owing
            or not _all_behind_a_failure(result.coverage)
        ):
            continue
        rows = [r for r in results if r.subject == result.subject and r.check in REACHED]
        if any(r.passed is False for r in rows):
            continue
        result.passed = True
        result.evidence = result.unproven_pass + _behind(result.coverage, release)
