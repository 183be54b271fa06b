"""The previous release's debt set apart from the candidate's findings (``gate.checks.debt``),
without a cluster: results and forms as the round trips and schemas-vs-strategy record them."""

from __future__ import annotations

import json

from crdharness.gate.checks import debt, path_coverage
from crdharness.gate.reporting import report
from crdharness.gate.results import CheckResult, Form, Found, NotConvertible

PAIR = "widgets.gate.example.com v1->v2"


def lost(result: CheckResult, *paths: str) -> CheckResult:
    """A round trip that lost ``paths`` (one object), as ``round_trips`` records it."""
    evidence = f"v1->v2->v1 changed {', '.join(paths)}"
    found = Found(Form(frozenset(paths)), evidence, [f"{p}: lost" for p in paths], [("o", {})])
    result.objects.append(("o", {}))
    return result.fail(evidence, *found.details, found=[found])


def round_trip(compared: int = 30) -> CheckResult:
    result = CheckResult("round-trip", PAIR)
    result.counts = {"compared": compared, "created": compared}
    return result


def previous(*paths: str, check: str = "round-trip", subject: str = PAIR) -> dict:
    return {f"{check}:{subject}": [Form(frozenset({p})) for p in paths]}


def test_a_loss_the_previous_release_has_is_its_debt_and_passes():
    result = lost(round_trip(), "spec.colour")
    debts = debt.settle([result], previous("spec.colour"), 1, min_objects=10)
    assert [(d.release, d.check, d.subject, sorted(d.form.paths)) for d in debts] == [
        (1, "round-trip", PAIR, ["spec.colour"])
    ]
    assert result.passed is True
    assert "release 1's debt, not a finding: spec.colour" in result.evidence
    assert not result.found and result.objects == [("release 1's debt: o", {})]


def test_a_loss_in_a_subtree_the_previous_releases_schemas_differ_in_under_none_is_debt():
    # Release 1's own round trips held only a zero value there (normalised, no failure); its
    # schemas differ in that subtree for the pair under strategy None: the same loss.
    forms = previous(check="round-trip") | {
        "schemas-vs-strategy:widgets.gate.example.com": [
            Form(frozenset({"status.artifact"}), "v1->v2"),
            Form(frozenset({"spec.size"}), "v2->v1"),  # the other direction: not this pair
        ]
    }
    result = lost(lost(round_trip(), "status.artifact.size"), "spec.size")
    debts = debt.settle([result], forms, 1)
    assert [sorted(d.form.paths) for d in debts] == [["status.artifact.size"]]
    assert result.passed is False and "spec.size" in result.evidence


def test_a_new_path_is_a_finding_naming_it_and_the_old_one_stays_debt():
    result = lost(lost(round_trip(), "spec.colour"), "spec.size")
    debts = debt.settle([result], previous("spec.colour"), 1)
    assert [sorted(d.form.paths) for d in debts] == [["spec.colour"]]
    assert result.passed is False
    assert "spec.size" in result.evidence and "spec.colour" not in result.evidence
    assert not any("spec.colour" in line for line in result.details)


def test_one_object_losing_an_old_and_a_new_path_fails_on_the_new_path_first():
    result = lost(round_trip(), "spec.colour", "spec.size")
    debts = debt.settle([result], previous("spec.colour"), 1)
    assert result.passed is False
    assert result.evidence.startswith("spec.size (new in this release; spec.colour is release 1")
    assert [sorted(d.form.paths) for d in debts] == [["spec.colour"]]


def test_a_path_under_a_subtree_the_previous_release_loses_is_the_same_loss():
    result = lost(round_trip(), "spec.colour.shade")
    assert debt.settle([result], previous("spec.colour"), 1) and result.passed is True
    # ... but not the other way round: a bigger loss than the previous release's.
    wider = lost(round_trip(), "spec.colour")
    assert not debt.settle([wider], previous("spec.colour.shade"), 1)
    assert wider.passed is False


def test_a_pair_or_check_the_previous_release_was_not_run_through_has_no_debt():
    result = lost(round_trip(), "spec.colour")
    assert not debt.settle([result], previous("spec.colour", subject="other v1->v2"), 1)
    assert not debt.settle([result], previous("spec.colour", check="convertibility"), 1)
    assert not debt.settle([result], {}, 1)  # no history: nothing is debt
    assert result.passed is False and result.evidence == "v1->v2->v1 changed spec.colour"


def test_a_previous_release_that_passed_the_pair_owes_nothing():
    result = lost(round_trip(), "spec.colour")
    assert not debt.settle([result], {f"round-trip:{PAIR}": []}, 1)
    assert result.passed is False


def test_debt_fail_lists_the_debt_and_keeps_the_failure():
    result = lost(round_trip(), "spec.colour")
    debts = debt.settle([result], previous("spec.colour"), 1, fail_debt=True)
    assert [d.fails for d in debts] == [True]
    assert result.passed is False and result.evidence == "v1->v2->v1 changed spec.colour"


def test_a_failure_no_form_stands_for_keeps_the_result_failing():
    result = lost(round_trip(), "spec.colour").fail("the gate could not finish this check: X")
    debts = debt.settle([result], previous("spec.colour"), 1)
    assert len(debts) == 1 and result.passed is False


def test_convertibility_is_the_same_form_when_the_previous_release_fails_the_pair_too():
    def failing() -> CheckResult:
        result = CheckResult("convertibility", PAIR)
        result.counts = {"created": 30}
        return result.fail("cannot be read at v2", found=[Found(Form(), "cannot be read at v2")])

    result = failing()
    assert debt.settle([result], {f"convertibility:{PAIR}": [Form()]}, 1) and result.passed
    # A failure without paths is named by its own words, not only "the same failure".
    assert "the same failure (cannot be read at v2)" in result.evidence, result.evidence
    result = failing()
    assert not debt.settle([result], {f"convertibility:{PAIR}": []}, 1)
    assert result.passed is False


def test_schemas_vs_strategy_compares_the_version_pair_and_the_subtree():
    subject = "widgets.gate.example.com"

    def failing() -> CheckResult:
        result = CheckResult("schemas-vs-strategy", subject)
        found = [
            Found(Form(frozenset({"spec.colour"}), "v1->v2"), "differ: spec.colour", ["a"]),
            Found(Form(frozenset({"spec.color"}), "v2->v1"), "differ: spec.color", ["b"]),
        ]
        return result.fail("strategy None but ... (2 subtrees)", "a", "b", found=found)

    earlier = {
        f"schemas-vs-strategy:{subject}": [
            Form(frozenset({"spec.colour"}), "v1->v2"),
            Form(frozenset({"spec.color"}), "v2->v1"),
        ]
    }
    result = failing()
    assert len(debt.settle([result], earlier, 1)) == 2 and result.passed is True
    # The same path between another pair of versions is new.
    earlier[f"schemas-vs-strategy:{subject}"][1] = Form(frozenset({"spec.color"}), "v3->v1")
    result = failing()
    assert len(debt.settle([result], earlier, 1)) == 1
    assert result.passed is False and result.evidence == "differ: spec.color"


def test_a_pair_cleared_of_debt_with_too_few_objects_is_not_proven():
    result = lost(round_trip(compared=3), "spec.colour")
    debt.settle([result], previous("spec.colour"), 1, min_objects=10)
    assert result.passed is None and result.evidence.startswith("not proven: only 3 objects")


def test_checks_of_an_upgrade_are_never_debt():
    result = CheckResult("upgrade", "release 1->2")
    result.fail("lost", found=[Found(Form(frozenset({"spec.colour"})), "lost")])
    assert not debt.settle(
        [result], {"upgrade:release 1->2": [Form(frozenset({"spec.colour"}))]}, 1
    )


def test_the_report_lists_debt_apart_and_it_does_not_fail_the_verdict(tmp_path):
    result = lost(round_trip(), "spec.colour")
    debts = debt.settle([result], previous("spec.colour"), 1)
    run = report.Report([result], "1.37", debt=debts)
    assert run.verdict == report.PASS
    report.write(tmp_path, run)
    written = json.loads((tmp_path / "report.json").read_text())
    assert written["debt"] == [
        {
            "release": 1,
            "check": "round-trip",
            "subject": PAIR,
            "pair": "",
            "paths": ["spec.colour"],
            "evidence": "v1->v2->v1 changed spec.colour",
            "fails": False,
        }
    ]
    md = (tmp_path / "report.md").read_text()
    assert "## Debt of earlier releases (not findings)" in md
    assert f"- release 1: round-trip [{PAIR}] spec.colour" in md


def test_a_pair_whose_failures_are_all_debt_is_not_proven_below_every_path():
    # Outside trial (43): 3 of 41 paths held, the others wiped by the webhook unseen, and
    # the pair shown as a pass because the only failure seen was the earlier release's.
    result = lost(round_trip(), "spec.colour")
    result.coverage = {
        "exercised": 3,
        "declared": 41,
        "uncovered": {"spec.rules": "its objects' round trips stopped at another path"},
    }
    assert debt.settle([result], previous("spec.colour"), 1, min_objects=10)
    assert result.passed is None, result
    assert result.evidence.startswith("not proven: schema paths 3/41 held; not held: spec.rules")
    assert "release 1's debt" in result.evidence


def test_an_unchanged_crds_paths_only_behind_its_debt_are_said_and_owed():
    # Real trials (kyma api-gateway, kuberay, opentelemetry-operator upgraded to themselves):
    # versions under strategy None that differ; every object holding spec.rules stops at the
    # loss release 1 has too. The CRD did not change: nothing is left to prove of it.
    result = lost(round_trip(), "spec.colour")
    result.coverage = {
        "exercised": 38,
        "declared": 41,
        "uncovered": {
            "spec.rules": path_coverage.STOPPED,
            # below a field lost whole (the loss release 1 makes too)
            "spec.hosts": f"{path_coverage.LOST_PARENT}spec.gateway whole first (named above)",
            # every object holding it valid at A, but not convertible (release 1's too)
            "spec.tls": "the schema's required refused all 4 objects tried with it alone",
        },
        "behind_a_failure": ["spec.hosts", "spec.rules", "spec.tls"],
    }
    unchanged = {"widgets.gate.example.com": "unchanged: identical"}
    assert debt.settle([result], {}, 1, min_objects=10, unchanged=unchanged)
    assert result.passed is True, result
    assert "schema paths 38/41 held, the others only behind release 1's debt: spec.rules" in (
        result.evidence
    )
    # a path not held for another reason still leaves it not proven, whatever its words
    other = lost(round_trip(), "spec.colour")
    other.coverage = {
        **result.coverage,
        "uncovered": {"spec.rules": path_coverage.STOPPED},
        "behind_a_failure": [],
    }
    debt.settle([other], {}, 1, min_objects=10, unchanged=unchanged)
    assert other.passed is None
    # a CRD the release changed: the same paths behind the same failures stay not proven
    changed = lost(round_trip(), "spec.colour")
    changed.coverage = dict(result.coverage)
    assert debt.settle([changed], previous("spec.colour"), 1, min_objects=10, unchanged={})
    assert changed.passed is None and changed.evidence.startswith("not proven: schema paths")


def crossplane_shaped_pair() -> tuple[CheckResult, CheckResult]:
    """Real trial (crossplane's XRD upgraded to itself, strategy None): v2->v1's round trips
    lost nothing, but every object holding spec.conversion.* was valid at v2 and could not be
    written back at v1 (a rule there refuses it): a convertibility failure, and those paths
    not held. The round trip is "not proven" by its coverage alone."""
    rt = round_trip()
    rt.evidence = "23 objects equal after v1->v2->v1"
    behind = path_coverage.BEHIND_NOT_CONVERTIBLE
    found = path_coverage.Coverage(
        ["spec.group", "spec.conversion.strategy", "spec.conversion.webhook.url"],
        uncovered={
            "spec.conversion.strategy": "the API server refused all 6 objects tried with it",
            "spec.conversion.webhook.url": "the API server refused all 6 objects tried with it",
        },
        behind_a_failure={
            "spec.conversion.strategy": behind,
            "spec.conversion.webhook.url": behind,
        },
    )
    path_coverage.settle(rt, found, "v1")
    assert rt.passed is None and rt.evidence.startswith("not proven: schema paths 1/3")
    conv = CheckResult("convertibility", PAIR)
    conv.counts = {"created": 30}
    evidence = "an object read at v2 cannot be created again as read: spec.conversion: Invalid"
    conv.fail(evidence, found=[Found(Form(frozenset({"spec.conversion"})), evidence)])
    return rt, conv


UNCHANGED = {"widgets.gate.example.com": "unchanged: identical"}


def test_an_unchanged_crds_pass_left_not_proven_by_paths_behind_another_rows_failure():
    rt, conv = crossplane_shaped_pair()
    assert debt.settle([rt, conv], {}, 1, min_objects=10, unchanged=UNCHANGED)
    assert conv.passed is True and "release 1's debt by construction" in conv.evidence
    assert rt.passed is True, rt
    assert rt.evidence == (
        "23 objects equal after v1->v2->v1; schema paths 1/3 held, the others only behind "
        "release 1's debt: spec.conversion.strategy, spec.conversion.webhook.url"
    )


def test_a_changed_crds_paths_behind_the_same_conversion_failure_stay_not_proven():
    # The same refusal, the same failure release 1 has (its convertibility is debt), but the
    # CRD changed: what its objects would do once converted is not known. Not proven.
    rt, conv = crossplane_shaped_pair()
    previous_conv = previous("spec.conversion", check="convertibility")
    assert debt.settle([rt, conv], previous_conv, 1, min_objects=10, unchanged={})
    assert conv.passed is True
    assert rt.passed is None and rt.evidence.startswith("not proven: schema paths 1/3")


def test_paths_behind_a_failure_that_is_not_shown_to_be_debt_stay_not_proven():
    # a path refused at creation (not behind a failure) beside them
    rt, conv = crossplane_shaped_pair()
    rt.coverage["uncovered"]["spec.group"] = "a CEL rule refused all 4 objects tried with it"
    debt.settle([rt, conv], {}, 1, min_objects=10, unchanged=UNCHANGED)
    assert conv.passed is True and rt.passed is None
    # the conversion failure is not one debt can know (no form): it stays a finding
    rt, conv = crossplane_shaped_pair()
    conv.fail("the webhook timed out")
    debt.settle([rt, conv], {}, 1, min_objects=10, unchanged=UNCHANGED)
    assert conv.passed is False and rt.passed is None
    # `debt: fail`: the debt fails, and nothing is owed
    rt, conv = crossplane_shaped_pair()
    debt.settle([rt, conv], {}, 1, fail_debt=True, min_objects=10, unchanged=UNCHANGED)
    assert conv.passed is False and rt.passed is None
    # no failure at all in the pair: nothing the paths are behind is debt
    rt, _ = crossplane_shaped_pair()
    assert not debt.settle([rt], {}, 1, min_objects=10, unchanged=UNCHANGED)
    assert rt.passed is None


# A convertibility failure known by its object (``same_write``): what release 1 did with
# the same write (the same body written at the same version), noted by its own round trips.


def refusal(*paths: str) -> NotConvertible:
    """A write as read refused at v2 naming ``paths``, as ``object_round_trip`` makes it."""
    line = f"created again at v2 as read there (dry run): 422 {', '.join(paths)}: Invalid value"
    return NotConvertible(f"cannot be created again: {line}", [line], [("read at v2", {})], paths)


def convertibility(**refused: NotConvertible) -> CheckResult:
    """The candidate's convertibility row, one failure per object (its key: its body)."""
    result = CheckResult("convertibility", PAIR)
    result.counts = {"created": 30}
    for key, failure in refused.items():
        found = Found(Form(failure.paths), failure.evidence, failure.details, [("o", {})], key)
        result.fail(found.evidence, *found.details, found=[found])
    return result


def writes(mine: dict, theirs: dict | None) -> dict:
    return {f"convertibility:{PAIR}": (mine, theirs)}


def test_an_object_release_1_refused_too_is_its_debt_whatever_field_it_is_refused_for():
    # kyma api-gateway 3.1.0 -> 3.1.1 (the documented fix): a mutated sample read at v2 is
    # refused for `maxAge: 0`, a field 3.1.0's refusals never named; 3.1.0 refused the same
    # object at v2 too (for its rules). Nothing a user could do before is refused now.
    now, before = refusal("spec.shelf"), refusal("spec.firing")
    forms = previous("spec.firing", check="convertibility")
    old_rule = convertibility(kiln=now)
    assert not debt.settle([old_rule], forms, 1) and old_rule.passed is False  # by paths
    result = convertibility(kiln=now)
    debts = debt.settle([result], forms, 1, writes=writes({"kiln": now}, {"kiln": before}))
    assert [(d.same_object, sorted(d.form.paths)) for d in debts] == [(True, ["spec.shelf"])]
    assert debts[0].evidence == (
        f"already refused under release 1: {before.evidence}; now also for spec.shelf: "
        f"{now.evidence}"
    )  # the field it is refused for now as well is said
    assert result.passed is True, result
    assert "spec.shelf (the same object already refused under release 1)" in result.evidence
    assert result.evidence.endswith("release 1 refused the same objects (listed apart)")
    assert debts[0].as_json()["same_object"] is True


def test_an_object_release_1_accepted_is_a_finding_whatever_paths_its_refusals_named():
    now = refusal("spec.firing")
    forms = previous("spec.firing", check="convertibility")  # release 1 refused others so
    result = convertibility(kiln=now)
    assert not debt.settle([result], forms, 1, writes=writes({"kiln": now}, {"kiln": None}))
    assert result.passed is False
    assert result.evidence.startswith("the same write went through under release 1, refused now")
    assert any("this release's doing: under release 1 the same object" in d for d in result.details)


def test_an_object_release_1_accepted_is_not_hidden_behind_one_it_refused_too():
    # One object is shown per failure: the first (refused under both) must not hide a later
    # one with the same paths that release 1 let through.
    first, later = refusal("spec.firing"), refusal("spec.firing")
    forms = previous("spec.firing", check="convertibility")
    result = convertibility(sample=first)
    mine = {"sample": first, "drawn": later, "kept": None}
    theirs = {"sample": refusal("spec.firing"), "drawn": None, "kept": None}
    debts = debt.settle([result], forms, 1, writes=writes(mine, theirs))
    assert [d.same_object for d in debts] == [True]
    assert result.passed is False, result
    assert result.evidence.startswith("the same write went through under release 1")
    assert [title for title, _ in result.objects] == [
        "refused now, accepted under release 1: read at v2",
        "release 1's debt: o",
    ]
    assert result.details[-1] == (
        "by object: 2 writes refused now; under release 1 1 of them refused too, 1 went "
        "through, 0 not written by its own round trips"
    )


def test_an_object_release_1_never_wrote_is_decided_by_its_paths_and_says_so():
    forms = previous("spec.firing", check="convertibility")
    now = refusal("spec.firing")
    result = convertibility(shrunk=now)
    debts = debt.settle([result], forms, 1, writes=writes({"shrunk": now}, {"other": None}))
    assert [d.same_object for d in debts] == [False] and result.passed is True
    assert "the per-object check was not made" in debts[0].evidence
    new = refusal("spec.shelf")
    result = convertibility(shrunk=new)
    assert not debt.settle([result], forms, 1, writes=writes({"shrunk": new}, {}))
    assert result.passed is False
    assert any("the per-object check was not made" in d for d in result.details), result.details


def test_a_failure_is_wholly_owed_only_when_the_previous_release_has_every_path_of_it():
    # Decides whether the search shows such a failure as drawn instead of shrinking it.
    earlier = [Form(frozenset({"spec.image"})), Form(frozenset({"spec.size"}))]
    assert debt.wholly_owed(Form(frozenset({"spec.image.tag", "spec.size"})), earlier)
    assert not debt.wholly_owed(Form(frozenset({"spec.image", "spec.colour"})), earlier)
    assert not debt.wholly_owed(Form(frozenset({"spec.image"})), [])  # nothing to owe to
    # A failure naming no path (an object that cannot be stored) is owed to one naming none.
    assert debt.wholly_owed(Form(frozenset()), [Form(frozenset())])
    assert not debt.wholly_owed(Form(frozenset()), earlier)


def test_a_loss_read_at_b_is_owed_only_to_one_the_previous_release_showed_at_b():
    # api-gateway 3.1.1 -> 3.1.0: the candidate loses `spec.gateway` when read at v2 (every
    # controller reading v2 sees it gone); 3.1.1 lost it only on the way back to v1beta1.
    at_b = Form(frozenset({"spec.gateway"}), at_b=frozenset({"spec.gateway"}))
    back_at_a = Form(frozenset({"spec.gateway"}))
    assert debt.split(at_b, [back_at_a]) == (None, at_b)
    assert debt.split(at_b, [at_b]) == (at_b, None)
    assert debt.split(back_at_a, [at_b]) == (back_at_a, None)  # worse before: owed
    # Only the part read at B is held apart: the rest of the failure stays owed.
    both = Form(frozenset({"spec.gateway", "spec.hosts"}), at_b=frozenset({"spec.gateway"}))
    old, new = debt.split(both, [Form(frozenset({"spec.gateway", "spec.hosts"}))])
    assert old == Form(frozenset({"spec.hosts"})) and new == at_b


def test_a_loss_read_at_b_the_earlier_schemas_explain_under_strategy_none_is_owed():
    result = lost(round_trip(), "spec.colour")
    result.found[0].form = Form(frozenset({"spec.colour"}), at_b=frozenset({"spec.colour"}))
    schemas_differ = {
        f"round-trip:{PAIR}": [Form(frozenset({"spec.size"}))],
        "schemas-vs-strategy:widgets.gate.example.com": [
            Form(frozenset({"spec.colour"}), "v1->v2")
        ],
    }
    debts = debt.settle([result], schemas_differ, 1, min_objects=10)
    assert [sorted(d.form.paths) for d in debts] == [["spec.colour"]]
    assert result.passed is True


def test_an_object_refused_for_no_field_both_times_is_named_as_the_same_object_alone():
    # capsule v0.2.1 -> v0.2.0: a status value the server cannot decode names no field.
    now, before = refusal(), refusal()
    result = convertibility(kiln=now)
    debt.settle(
        [result],
        previous(check="convertibility"),
        1,
        writes=writes({"kiln": now}, {"kiln": before}),
    )
    assert result.passed is True, result
    assert "not a finding: the same object already refused under release 1" in result.evidence


def test_an_earlier_releases_refusals_are_kept_by_what_judging_them_reads():
    from crdharness.gate.checks import same_write

    before = refusal("spec.firing")
    kept = same_write.kept({"kiln": before, "other": None})
    assert kept["other"] is None
    assert (kept["kiln"].evidence, kept["kiln"].paths) == (before.evidence, before.paths)
    assert kept["kiln"].shown == [] and before.shown  # the objects it showed are not kept
    now = refusal("spec.shelf")
    result = convertibility(kiln=now)
    forms = previous("spec.firing", check="convertibility")
    debts = debt.settle([result], forms, 1, writes=writes({"kiln": now}, kept))
    assert [d.same_object for d in debts] == [True] and result.passed is True


def test_the_candidates_refusals_release_1_made_too_are_kept_light_the_others_whole():
    from crdharness.gate.checks import same_write

    refused_both, through_before, never_made = (
        refusal("spec.firing"),
        refusal("spec.shelf"),
        refusal("spec.glaze"),
    )
    mine = {"both": refused_both, "through": through_before, "new": never_made, "ok": None}
    kept = same_write.kept_against(mine, {"both": refusal("spec.firing"), "through": None})
    assert kept["both"].shown == [] and kept["both"].paths == refused_both.paths  # debt
    # Shown if they become findings (went through before; made again later): whole.
    assert kept["through"] is through_before and kept["new"] is never_made
    assert kept["ok"] is None
    result = convertibility(both=refused_both, through=through_before)
    forms = previous("spec.firing", check="convertibility")
    theirs = {"both": refusal("spec.firing"), "through": None}
    debts = debt.settle([result], forms, 1, writes=writes(kept, theirs))
    assert [d.same_object for d in debts] == [True]  # "both", from its light copy
    assert result.passed is False  # the write that went through under release 1 is a finding
    assert [f.written_as for f in result.found] == ["through"], result.found
