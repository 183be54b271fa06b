"""What the upgrade did not see is said whatever its verdict: a failing upgrade still lists the
changes it did not exercise and the CRDs it wrote no objects for, so that the shards of a
split run, failing or not, give the lines one machine gives (issue 42's merge)."""

from __future__ import annotations

from types import SimpleNamespace

from crdharness.gate.checks.upgrade_decisions import enough_evidence
from crdharness.gate.evidence import changes
from crdharness.gate.results import CheckResult

OLD, NEW = "kept.example.com", "moved.example.com"


def context() -> SimpleNamespace:
    undecided = changes.Change(
        crd=NEW, transition=1, version="v1", path="spec.size", kind="minimum raised", detail=""
    )
    undecided.decision = changes.NOT_PROVEN
    undecided.evidence = "no object held spec.size"
    first = SimpleNamespace(crds={OLD: {}, NEW: {}})
    return SimpleNamespace(
        live=lambda release: [OLD, NEW],
        releases=[first, SimpleNamespace(index=1)],
        writes_for=lambda release, name: name == NEW,
        unchanged={OLD: "unchanged: documentation only"},
        source=None,
        config=SimpleNamespace(min_objects=1),
        changes={1: [undecided]},
        refused_crds=set(),
        refused={},
        refused_causes={},
    )


def judged(passed: bool) -> CheckResult:
    result = CheckResult("upgrade", "release 1->2")
    if not passed:
        result.fail("moved.example.com: an old object's write was refused")
    ctx = context()
    written = [SimpleNamespace(crd=NEW, seen=True)]
    enough_evidence(ctx, result, ctx.releases[1], written)  # type: ignore[arg-type]
    return result


def test_a_failing_upgrade_still_lists_what_it_did_not_see():
    failed = judged(passed=False)
    assert failed.passed is False
    assert failed.evidence == "moved.example.com: an old object's write was refused"
    assert f"{OLD}: no objects written for it (unchanged: documentation only)" in failed.details
    assert any(d.startswith("not proven: ") and "spec.size" in d for d in failed.details)


def test_a_passing_upgrade_with_a_change_not_exercised_is_not_proven_with_the_same_lines():
    result = judged(passed=True)
    assert result.passed is None and result.evidence.startswith("not proven: ")
    assert set(judged(passed=False).details) <= set(result.details) | {
        "moved.example.com: an old object's write was refused"
    }
