"""Part of check *upgrade*: each change between the two releases decided from the objects
built to hold it (or, with ``--from-cluster``, from every object of the cluster), and no pass
on thin evidence."""

from __future__ import annotations

from crdharness.gate import diff, subjects
from crdharness.gate.checks import crd_changes
from crdharness.gate.checks.upgrade_objects import RECREATES, Written
from crdharness.gate.checks.upgrade_reads import NO_LONGER_DEFAULTED
from crdharness.gate.evidence import changes, refusal, targeted
from crdharness.gate.evidence.changes import Change
from crdharness.gate.given.manifests import Release
from crdharness.gate.results import CheckResult
from crdharness.gate.run.context import GateContext


def decide(ctx: GateContext, release: Release, written: list[Written]) -> None:
    """Each change from the previous release to ``release`` gets its decision from the
    objects built to hold it: proven (a finding on one of them: the object, the write and
    the server's message, or the changed read), allowed (every finding excused), cleared
    (all accepted and read back unchanged), or not proven (why none could be built)."""
    for change in ctx.changes.get(release.index, []):
        if ctx.source is not None and change.crd not in ctx.refused_crds:
            _decide_on_the_source(ctx, release, change, written)
            continue
        if change.decision in (changes.NOT_PROVEN, changes.CLEARED) and not any(
            w.holds(change) for w in written
        ):
            continue  # decided when its objects could not be built (or need not be: Harmless)
        if change.crd in ctx.refused_crds:
            refusal = next(
                (
                    line
                    for line in ctx.result("install", subjects.release(release.index)).details
                    if line.startswith(f"{change.crd}:")
                ),
                None,
            )
            if refusal is not None and not change.path:  # the CRD as a whole: refused for it
                change.decide(
                    changes.PROVEN, f"the API server refused release {release.index + 1}: {refusal}"
                )
            else:
                change.decide(
                    changes.NOT_PROVEN,
                    f"release {release.index + 1} of {change.crd} was not installed (see install)",
                )
            continue
        if changes.on_the_crd(change):
            crd_changes.decide(ctx, release, change, written)
            continue
        held = [w for w in written if w.holds(change)]
        proof = _named_by(change, held) or _named_by(change, written)
        judged = [w for w in held if not any(k[0] in RECREATES for k in w.hazarded)]
        carried = [w for w in judged if not _lost_before(change, w)]
        if proof is not None:
            change.decide(changes.PROVEN, proof)
        elif any(w.findings for w in held):
            other = next(w for w in held if w.findings).findings[0]
            change.decide(
                changes.NOT_PROVEN,
                f"the objects built for it failed for another reason first: {other}",
            )
        elif any(w.excused for w in held):
            change.decide(changes.ALLOWED, next(w for w in held if w.excused).excused[0])
        elif not held:
            change.decide(changes.NOT_PROVEN, change.evidence or "no object was built for it")
        elif not judged:
            change.decide(
                changes.NOT_PROVEN,
                f"release {release.index} already refuses re-creating the objects built for "
                "it (a hazard of that release, see the report): the new schema was not judged",
            )
        elif not carried:
            lost = sorted({p for w in judged for p in w.lost_earlier if _related(p, change.path)})
            change.decide(
                changes.NOT_PROVEN,
                f"release {release.index}'s own writes of the objects built for it (the gate's, "
                f"at every version before the upgrade) already lost or changed "
                f"{', '.join(lost[:3])}: its value never reached release {release.index + 1} "
                f"(release {release.index}'s hazard, see the report)",
            )
        else:
            judged = carried
            change.decide(
                changes.CLEARED,
                f"{len(judged)} object{'s' if len(judged) > 1 else ''} holding it "
                f"({', '.join(w.name for w in judged[:3])}) stored under release "
                f"{release.index}: read, written again and re-created under release "
                f"{release.index + 1}, all accepted and unchanged"
                + (
                    " (a rule is judged on the objects built: the values the old schema "
                    "enumerates and the rule's own literals; combinations beyond them need "
                    "samples)"
                    if change.kind in targeted.RULE_KINDS
                    else ""
                )
                + _read_only_by_default(ctx, release, change),
            )


def _lost_before(change: Change, obj: Written) -> bool:
    """Whether the earlier release's own writes of ``obj`` (the baseline, at every version)
    lost or changed the change's value (at, under or above its path): the upgrade never
    met it, so the object clears nothing."""
    return any(_related(path, change.path) for path in obj.lost_earlier)


def _related(path: str, other: str) -> bool:
    return bool(other) and (diff.at_or_under(path, other) or diff.at_or_under(other, path))


def _read_only_by_default(ctx: GateContext, release: Release, change: Change) -> str:
    """For a default removed: the objects that read its value only through it, noted by
    ``upgrade_reads`` (never stored), said beside the clearing."""
    if change.kind != "default removed":
        return ""
    result = ctx.result("upgrade", subjects.transition(release.index))
    noted = [
        d for d in result.details if d.startswith(NO_LONGER_DEFAULTED) and f" {change.path}" in d
    ]
    if not noted:
        return ""
    return (
        f"; {len(noted)} reads of objects that never stored it now come without it (release "
        f"{release.index}'s default filled it in; noted, not a finding: `strict: true` fails them)"
    )


def _decide_on_the_source(ctx: GateContext, release: Release, change: Change, written) -> None:
    """``--from-cluster``: a change is proven by a finding on one of the cluster's objects
    that names its path, and cleared when every object the cluster holds was replayed and
    none is refused or changed by it; otherwise not proven, saying how many were left out."""
    assert ctx.source is not None
    mine = [w for w in written if w.crd == change.crd and w.captured]
    proof = (
        _named_by(change, mine)
        if change.path
        else next(
            (
                f
                for w in mine
                for f in w.findings
                if not change.version or f" {change.version}" in f  # about its version
            ),
            None,
        )
    )
    if proof is not None:
        change.decide(changes.PROVEN, proof)
        return
    left_out = objects_left_out(ctx, change.crd)
    if left_out:
        change.decide(changes.NOT_PROVEN, f"{left_out}: the others could not hold it")
        return
    change.decide(
        changes.CLEARED,
        f"none of the cluster's {len(mine)} {change.crd} objects is refused or changed by "
        f"it: each was read, written again and re-created under release "
        f"{release.index + 1}",
    )


def objects_left_out(ctx: GateContext, crd: str) -> str:
    """Why not every object the source cluster holds of ``crd`` was replayed ('' if all
    were)."""
    assert ctx.source is not None
    why = []
    replayed, held = ctx.source.truncated.get(crd, (0, 0))
    if held:
        why.append(f"{replayed} of its {held} objects replayed (`max_objects`)")
    refused = [label for label in ctx.not_replayed if label in _labels(ctx, crd)]
    if refused:
        why.append(f"{len(refused)} could not be re-created ({', '.join(refused[:3])})")
    return "; ".join(why)


def _labels(ctx: GateContext, crd: str) -> set[str]:
    assert ctx.source is not None
    return {obj.label for obj in ctx.source.objects.get(crd, [])}


def _named_by(change: Change, written: list[Written]) -> str | None:
    """A finding about one of ``written`` (of the change's CRD) that names the change's path
    (or a path below it): the server's message, or the read that changed. A rule on the
    whole object is named by any. A CEL rule added is proven only by its own refusal: its
    message, or the rule itself where it has none (the API server's "failed rule: ..."),
    not by another refusal or loss under the same node."""
    for obj in written:
        if obj.crd != change.crd:
            continue
        for finding in obj.findings:
            named = [diff.schema_path(p) for p in diff.named_paths(finding)]
            if change.path and not any(diff.at_or_under(p, change.path) for p in named):
                continue
            if _the_rules_own(change, finding):
                return finding
    return None


def _the_rules_own(change: Change, finding: str) -> bool:
    """Whether ``finding`` is the refusal of the rule ``change`` added (any finding, for
    changes that are not a CEL rule, or whose message is computed: messageExpression)."""
    rule = change.values[0] if change.kind == "rule added" and change.values else None
    if not isinstance(rule, dict) or rule.get("messageExpression"):
        return True
    said = str(rule.get("message") or "").strip() or str(rule.get("rule") or "").strip()
    return not said or " ".join(said.split()) in " ".join(finding.split())


def enough_evidence(ctx: GateContext, result: CheckResult, release: Release, written) -> None:
    """No pass on thin evidence: at least ``min_objects`` old objects of each CRD reached
    the writes, and every change has a decision. On a failure the same is said in the details
    (what the gate did not see is never passed over, and each shard of a split run says it
    whatever its own verdict: the merge gives one machine's lines)."""
    short = []
    for name in ctx.live(release):
        if name not in ctx.releases[release.index - 1].crds:
            continue  # new in this release: nothing old to upgrade
        if not ctx.writes_for(ctx.releases[release.index - 1], name):
            result.details.append(f"{name}: no objects written for it ({ctx.unchanged[name]})")
            continue  # unchanged: the release before wrote none (``evidence.unchanged``)
        if ctx.source is not None:  # the evidence is every object the cluster holds
            left_out = objects_left_out(ctx, name)
            if left_out:
                short.append(f"{name}: {left_out}")
            continue
        reached = sum(1 for w in written if w.crd == name and w.seen)
        if reached < ctx.config.min_objects:
            short.append(f"{name}: {reached} old objects reached the writes")
    undecided = [  # a CRD the release could not install fails install: not counted here
        c
        for c in ctx.changes.get(release.index, [])
        if c.decision == changes.NOT_PROVEN and c.crd not in ctx.refused_crds
    ]
    if not short and not undecided:
        return
    undecided_lines = [f"not proven: {c.subject}: {c.kind}: {c.evidence}" for c in undecided]
    if result.passed is False:  # the finding stands; what was not seen is listed beside it
        result.details += [f"not proven: {line}" for line in short] + undecided_lines
        return
    why = []
    if short and ctx.source is not None:
        why.append(f"not every object of the source cluster was replayed ({'; '.join(short)})")
    elif short:
        refused = "; ".join(f"{why}: {n}" for why, n in sorted(ctx.refused.items())) or "none"
        if ctx.refused_causes:  # what refused them, as the round trips say it
            refused += f"; most refused by: {refusal.ranked(ctx.refused_causes)}"
        why.append(
            f"fewer than min_objects ({ctx.config.min_objects}) old objects ({', '.join(short)}; "
            f"refused at creation so far: {refused})"
        )
    if undecided:
        why.append(
            f"{len(undecided)} of {len(ctx.changes[release.index])} changes not exercised ("
            + "; ".join(f"{c.subject}: {c.kind}: {c.evidence}" for c in undecided[:3])
            + ")"
        )
    result.passed = None
    result.evidence = "not proven: " + "; and ".join(why)
    result.details += undecided_lines
