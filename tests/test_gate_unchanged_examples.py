"""The unchanged-CRD rule and "not proven" for the gate's own inability, on the real gate
(``examples/gate/unchanged/``): a real API server and etcd, run as a user runs it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.gate_cli import gate_example

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "gate" / "unchanged"
CHECKUP = "checkups.unchanged.gate.example.com"
SENSOR = "sensors.unchanged.gate.example.com"
pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def gate(tmp_path: Path, gate_file: str, *args: str) -> tuple[int, dict, str]:
    return gate_example(EXAMPLE / gate_file, tmp_path, *args)


def rows(report: dict) -> dict[str, dict]:
    return {f"{c['check']}[{c['subject']}]": c for c in report["checks"]}


def test_a_descriptions_only_release_is_one_row_and_nothing_of_it_is_judged_again(tmp_path):
    code, report, output = gate(tmp_path, "gate.yaml")
    assert code == 0, output[-3000:]
    found = rows(report)
    assert found[f"unchanged[{CHECKUP}]"]["status"] == "pass"
    assert found[f"unchanged[{CHECKUP}]"]["evidence"].startswith(
        "unchanged: documentation only (since release 1; strategy None): not judged again"
    )
    assert not [k for k in found if k.startswith(("round-trip", "convertibility", "schemas-vs"))]
    upgrade = found["upgrade[release 1->2]"]
    assert upgrade["status"] == "pass" and "listed only" in upgrade["evidence"], upgrade
    assert not report["refused_objects"]  # nothing drawn, nothing sent
    assert report["changes"] == []


def test_a_byte_identical_release_owes_what_its_own_checks_find_to_release_1(tmp_path):
    code, report, output = gate(tmp_path, "gate-identical.yaml")
    assert code == 0, output[-3000:]
    assert rows(report)[f"unchanged[{CHECKUP}]"]["evidence"].startswith("unchanged: identical")
    # Judged again, with release 1's own round trips not run (only convertibility selected):
    # the failure v1->v2 finds is an object release 1's round trips did not hold, and still
    # its debt by construction: no FAIL (exit 2 only for the checks deselected).
    (tmp_path / "full").mkdir()
    code, report, output = gate(
        tmp_path / "full", "gate-identical.yaml", "--full", "--", "-k", "convertibility"
    )
    assert code == 2, output[-3000:]
    found = rows(report)
    assert not [k for k, c in found.items() if c["status"] == "FAIL"], output[-3000:]
    undecided = {c["evidence"] for c in found.values() if c["status"] == "not proven"}
    assert undecided == {"not proven: not run (deselected)"}
    refused_again = found[f"convertibility[{CHECKUP} v1->v2]"]
    assert refused_again["status"] == "pass"
    assert refused_again["evidence"].startswith("release 1's debt by construction (unchanged: ")
    assert [(d["check"], d["subject"]) for d in report["debt"]] == [
        ("convertibility", f"{CHECKUP} v1->v2")
    ]
    assert "release 1 was not run through" in report["debt_not_evaluated"]


def test_no_object_could_be_created_is_not_proven_exit_2_never_a_failure(tmp_path):
    code, report, output = gate(tmp_path, "gate-never-valid.yaml")
    assert code == 2, output[-3000:]
    assert report["verdict"] == "NOT PROVEN"
    for check in ("round-trip", "convertibility"):
        for a, b in (("v1", "v2"), ("v2", "v1")):
            row = rows(report)[f"{check}[{SENSOR} {a}->{b}]"]
            assert row["status"] == "not proven", row
            evidence = row["evidence"]
            assert evidence.startswith(f"not proven: no object could be created at {a}: ")
            assert "objects refused (100 %), by: " in evidence, evidence
            assert "the token must be both a and b" in evidence, evidence


def test_under_strategy_none_a_changed_crd_of_its_group_leaves_an_unchanged_one_alone(
    tmp_path,
):
    code, report, output = gate(tmp_path, "gate-group.yaml")
    assert code == 0, output[-3000:]
    found = rows(report)
    assert found[f"unchanged[{CHECKUP}]"]["status"] == "pass"
    assert not [k for k in found if CHECKUP in k and not k.startswith("unchanged")]
    upgrade = found["upgrade[release 1->2]"]
    assert upgrade["status"] == "pass", upgrade
    # Nothing of it written under either release (the upgrade says so), so release 1's own
    # defect on a v1 checkup is never met: no hazard of it.
    assert f"{CHECKUP}: no objects written for it (unchanged: " in "\n".join(upgrade["details"])
    assert not [h for h in report["hazards"] if CHECKUP in h], report["hazards"]
    # Hypothesis's caches (it drew the rota's objects) go to the harness's cache, never into
    # the working directory.
    assert not (tmp_path / ".hypothesis").exists()


RELAY = "relays.unchanged.gate.example.com"


def test_paths_behind_an_unchanged_crds_own_conversion_defect_are_its_debt(tmp_path):
    # v2 objects holding spec.delivery are refused when written back at v1 (v1's own rule):
    # release 1's convertibility defect. The v2->v1 round trips lose nothing but hold none of
    # those paths; the CRD is release 1's byte for byte, so they are behind its debt.
    code, report, output = gate(tmp_path, "gate-relay.yaml")
    assert code == 0, output[-3000:]
    found = rows(report)
    owed = found[f"convertibility[{RELAY} v2->v1]"]
    assert owed["status"] == "pass" and owed["evidence"].startswith(
        "release 1's debt by construction (unchanged: identical"
    )
    back = found[f"round-trip[{RELAY} v2->v1]"]
    assert back["status"] == "pass", back
    assert back["evidence"].endswith(
        "; schema paths 1/3 held, the others only behind release 1's debt: "
        "spec.delivery.mode, spec.delivery.hook.url"
    ), back["evidence"]
    assert back["coverage"]["behind_a_failure"] == {
        "spec.delivery.hook.url": "valid at A, but not convertible",
        "spec.delivery.mode": "valid at A, but not convertible",
    }


def test_a_changed_crds_paths_behind_the_same_defect_stay_not_proven(tmp_path):
    # The same relay with a new optional field: the refusal is still release 1's debt (its
    # own round trips meet it), but the changed CRD's paths behind it are not proven.
    code, report, output = gate(tmp_path, "gate-relay-changed.yaml")
    assert code == 2, output[-3000:]
    found = rows(report)
    owed = found[f"convertibility[{RELAY} v2->v1]"]
    assert owed["status"] == "pass" and owed["evidence"].startswith("release 1's debt, ")
    back = found[f"round-trip[{RELAY} v2->v1]"]
    assert back["status"] == "not proven", back
    assert back["evidence"].startswith("not proven: schema paths 2/4 at v2 went through"), back
    assert not [k for k, c in found.items() if c["status"] == "FAIL"], output[-3000:]


KITCHEN = "kitchens.unchanged.gate.example.com"


def test_paths_below_a_field_taking_any_json_go_round_where_ratcheting_writes_back(tmp_path):
    # Each version lacks the field the other requires: what is read is written back only by
    # the API server's ratcheting, which cannot follow an object's unknown keys in
    # spec.oven.settings[].value (any JSON). Its paths are held by objects with a scalar there.
    code, report, output = gate(tmp_path, "gate-kitchen.yaml")
    assert code == 0, output[-3000:]
    found = rows(report)
    for pair in ("v1->v2", "v2->v1"):
        coverage = found[f"round-trip[{KITCHEN} {pair}]"]["coverage"]
        assert (coverage["exercised"], coverage["declared"]) == (3, 3), coverage
