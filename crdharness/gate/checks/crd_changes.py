"""Part of check *upgrade*: the decision of a change no object is built for (``changes.
on_the_crd``) — a change to the CRD as a whole (scope, names, a version listed, served,
deprecated, the storage version, the conversion strategy), one that only lets more in (a
field added, an enum widened, a bound loosened, a rule removed), one the API server's
behaviour outside the schema decides (``crd_behaviour``, decided before this), or one no
rule classifies. Their evidence is the API server's answer to the release and the CRD's
old objects read and written again under it.
"""

from __future__ import annotations

import re
from typing import Protocol

from crdharness.gate import diff
from crdharness.gate.evidence import changes, schema_rules
from crdharness.gate.evidence.changes import Change
from crdharness.gate.given.manifests import Release
from crdharness.gate.run.context import GateContext


class Old(Protocol):
    """An object written under an earlier release (``upgrade.Written``)."""

    crd: str
    version: str
    findings: list[str]


def decide(ctx: GateContext, release: Release, change: Change, written: list) -> None:
    if change.decision:  # decided from the manifests (reported), or by ``crd_behaviour``
        return
    if change.kind == schema_rules.UNCLASSIFIED:
        _unclassified(ctx, change)
        return
    held: list[Old] = [w for w in written if w.crd == change.crd]
    if change.kind in CANNOT_REFUSE:
        _only_lets_more_in(release, change, held)
        return
    if change.path:  # a loosened field: proven only by a finding that names it
        broken = _naming(change, held)
    else:
        findings = [f for w in held for f in w.findings]
        # A change to one version is proven by a finding that names that version (a write at
        # it, a managedFields entry still at it): another change's finding is not its proof.
        if change.kind in VERSION_GONE:
            findings = [f for f in findings if _names_version(f, change.version)]
        broken = next(iter(findings), None)
    if broken is not None:
        change.decide(changes.PROVEN, broken)
    elif held:
        note = f" ({change.evidence})" if change.evidence else ""
        change.decide(
            changes.CLEARED,
            f"release {release.index + 1} accepted by the API server; {len(held)} old objects "
            f"read and written under it{note}",
        )
    else:
        change.decide(
            changes.NOT_PROVEN, f"no old {change.crd} object reached release {release.index + 1}"
        )


# Classes that only let more in, or only add what clients may use: no write of an old
# object can be refused, nor read differently, because of them. A finding that names their
# path is another change's doing (a field made required beside the one added), so it never
# proves them; they are cleared on the old objects that reached the release.
CANNOT_REFUSE = (
    # Of the loosened classes, those with no effect on how a write merges or is judged.
    set(schema_rules.LOOSENED)
    - {
        "rule details changed",  # a messageExpression can fail where the old one did not
        "field no longer declared",
        "list made atomic",  # server-side apply merges otherwise
        "map type changed",
        "required changed at the root",
    }
) | {
    "version added",
    "version served",
    "version deprecated",
    "deprecation withdrawn",
    "deprecation warning changed",
    "selectable field added",
    "scale subresource added",
}


# A version no longer there (or no longer served): proven only by what its old objects meet
# at it, never by another change's finding on the same objects.
VERSION_GONE = frozenset({"version removed", "version unserved"})


def _names_version(finding: str, version: str) -> bool:
    return re.search(rf"(?<![\w.-]){re.escape(version)}(?![\w.-])", finding) is not None


def _only_lets_more_in(release: Release, change: Change, held: list) -> None:
    if not held:
        change.decide(
            changes.NOT_PROVEN, f"no old {change.crd} object reached release {release.index + 1}"
        )
        return
    other = _naming(change, held) if change.path else None
    change.decide(
        changes.CLEARED,
        f"only lets more in: {len(held)} old objects read and written under release "
        f"{release.index + 1}"
        + (f"; a finding on this path is another change's: {other}" if other else ""),
    )


def _unclassified(ctx: GateContext, change: Change) -> None:
    """Nothing passes unseen: a difference no rule of the gate judges is not proven, unless
    an ``allow`` entry names its path."""
    rule = (
        next((r for r in ctx.config.allow if r.covers_upgrade(change.path, change.version)), None)
        if change.path
        else None
    )
    if rule is not None:
        change.decide(changes.ALLOWED, f"no rule of the gate judges it; allowed: {rule.reason}")
        return
    change.decide(
        changes.NOT_PROVEN,
        "no rule of the gate judges this difference"
        + (
            " (name its path in `allow:` with a reason, or accept it with `accept_not_proven`)"
            if change.path
            else " (accept it with `accept_not_proven` once you have checked it)"
        ),
    )


def _naming(change: Change, held: list[Old]) -> str | None:
    for obj in held:
        for finding in obj.findings:
            named = [diff.schema_path(p) for p in diff.named_paths(finding)]
            if any(diff.at_or_under(p, change.path) for p in named):
                return finding
    return None
