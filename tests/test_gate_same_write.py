"""A convertibility failure judged by its object (``checks.same_write``), on a real control
plane: the examples in ``examples/gate/same-write`` run as a user runs them. Release 1's own
round trips (its own webhook, while installed) note how each write ended; the candidate's
refusal of the same write is release 1's debt where release 1 refused it too, and the
candidate's finding where release 1 let it through, whatever paths each names."""

from pathlib import Path

import pytest

from tests.gate_cli import gate_example, row

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "gate" / "same-write"
PAIR = "kilns.samewrite.example.com v1->v2"
pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def gate(tmp_path: Path, example: str) -> tuple[int, dict, str]:
    return gate_example(EXAMPLES / example, tmp_path)


def test_a_write_release_1_refused_too_is_its_debt_though_refused_for_another_field(tmp_path):
    # The candidate's v2 refuses a Kiln the webhook answers with `firing: ""` naming
    # spec.shelf, which no refusal under release 1 named: by paths, a finding. The same
    # Kiln (the user's sample, the same drawn objects) was refused at v2 under release 1
    # too: listed apart with both reasons, and the gate passes.
    code, report, output = gate(tmp_path, "gate-refused-before.yaml")
    assert code == 0, output[-3000:]
    conv = row(report, "convertibility", PAIR)
    assert conv["status"] == "pass", conv
    assert "(the same object already refused under release 1)" in conv["evidence"], conv
    owed = [d for d in report["debt"] if d["subject"] == PAIR]
    assert [(d["same_object"], d["paths"]) for d in owed] == [
        (True, ["spec.firing", "spec.shelf"])
    ], owed
    evidence = owed[0]["evidence"]
    assert evidence.startswith("already refused under release 1: "), evidence
    before, now = evidence.split("; now also for spec.shelf: ")  # the field it adds, said
    assert "spec.firing" in before and "spec.shelf" not in before, evidence
    assert "spec.shelf: Invalid value: an empty firing leaves the shelf cold" in now, evidence
    md = (tmp_path / "gate" / "report.md").read_text()
    assert f"convertibility [{PAIR}] spec.firing, spec.shelf: already refused under" in md
    assert "debt of release 1 (not findings): 2" in output


def test_a_write_release_1_let_through_is_a_finding_though_its_refusals_named_the_field(
    tmp_path,
):
    # Release 1 refused Kilns without firing for spec.firing; the candidate's webhook
    # empties every firing at v2, so it refuses those and also Kilns holding a firing,
    # which release 1 let through: by paths, all release 1's debt; by object, a finding.
    code, report, output = gate(tmp_path, "gate-refused-now.yaml")
    assert code == 1, output[-3000:]
    conv = row(report, "convertibility", PAIR)
    assert conv["status"] == "FAIL", conv
    assert conv["evidence"].startswith(
        "the same write went through under release 1, refused now: "
    ), conv["evidence"]
    assert "spec.firing" in conv["evidence"]
    assert any(t.startswith("refused now, accepted under release 1: ") for t in conv["objects"])
    # the sample, refused under both, is still release 1's debt, listed apart
    owed = [d for d in report["debt"] if d["subject"] == PAIR]
    assert [d["same_object"] for d in owed] == [True], owed


def test_a_refused_write_release_1s_round_trips_never_made_is_made_again_under_it(tmp_path):
    # Release 1 keeps v1's spec schemaless, so its own round trips never draw a `glazing`
    # there; the candidate declares it, and its Kilns glazed otherwise than with g are refused
    # at v2. Those same writes, made again under release 1's CRD, are refused there too:
    # release 1's debt by object, not a finding.
    code, report, output = gate(tmp_path, "gate-preserved-before.yaml")
    pair = "kilns.replay.example.com v1->v2"
    conv = row(report, "convertibility", pair)
    assert conv["status"] == "pass", conv
    assert any("were made again under it" in d for d in conv["details"]), conv["details"]
    owed = [d for d in report["debt"] if d["subject"] == pair]
    assert [(d["same_object"], d["paths"]) for d in owed] == [(True, ["spec.glazing"])], owed
    assert owed[0]["evidence"].startswith("already refused under release 1: "), owed
    assert code != 1, output[-3000:]


def test_a_refused_write_made_again_under_release_1_that_goes_through_is_a_finding(tmp_path):
    # Release 1's v2 has no rule on `glazing` yet: the same writes go through under it, so
    # the candidate's refusals are its own doing.
    code, report, output = gate(tmp_path, "gate-preserved-rule-added.yaml")
    conv = row(report, "convertibility", "kilns.replay.example.com v1->v2")
    assert conv["status"] == "FAIL", conv
    assert conv["evidence"].startswith("the same write went through under release 1"), conv
    assert code == 1, output[-3000:]
