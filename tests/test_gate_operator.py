"""The operator's answer (``--from-cluster``): what a cap left out comes first, one line per
object to fix, the cluster's own objects only, one numbering of releases, and advice from
evidence only (ratcheting where the same-content update passed)."""

from __future__ import annotations

from crdharness.gate.checks.upgrade_writes import RECREATE, RECREATE_STATUS, Refusal
from crdharness.gate.given.cluster_source import Capture, CapturedObject
from crdharness.gate.given.manifests import Release
from crdharness.gate.reporting import operator
from crdharness.gate.results import CheckResult

CRD = "tunnels.example.com"
MANIFEST = {
    "spec": {
        "group": "example.com",
        "names": {"plural": "tunnels"},
        "versions": [{"name": "v1beta1", "served": True, "storage": True}],
    }
}
CANDIDATE = Release(1, "release-2.yaml", {CRD: MANIFEST})
INVALID = (
    'Tunnel.example.com "{name}" is invalid: spec.mode: Unsupported value: "legacy": '
    'supported values: "direct", "relay"'
)
UNTOUCHED = "the source cluster was only read"


def _capture(names: list[str], held: int | None = None, cap: int | None = None) -> Capture:
    found = Capture("prod", "https://prod:6443", max_objects=cap, kubernetes="v1.37.0")
    found.crds = {CRD: MANIFEST}
    found.stored_versions = {CRD: ["v1beta1"]}
    found.objects = {CRD: [CapturedObject(CRD, "team-a", n, "v1beta1", {}, "1") for n in names]}
    found.totals = {CRD: held if held is not None else len(names)}
    return found


def _refused(label: str, write: str, name: str | None = None) -> str:
    message = INVALID.format(name=name or label.rpartition("/")[2])
    return f"{label}: {Refusal(write, 'v1beta1', 422, message).line}"


def _upgrade_failed(*evidence: str) -> CheckResult:
    result = CheckResult("upgrade", "release 1->2")
    result.fail(*evidence)
    return result


def test_a_cap_that_left_objects_out_is_the_first_line_whatever_the_verdict():
    capped = _capture(["a", "b"], held=5, cap=2)
    passed = CheckResult("upgrade", "release 1->2")
    passed.evidence = "2 objects read"
    lines = operator.answer(capped, CANDIDATE, [passed], {}, UNTOUCHED)
    assert lines[0] == (
        f"3 of 5 objects of {CRD} were not replayed (--max-objects 2); raise it to include them"
    )
    findings = {"team-a/a": [_refused("team-a/a", RECREATE)]}
    failed = operator.answer(capped, CANDIDATE, [_upgrade_failed("x")], findings, UNTOUCHED)
    assert failed[0] == lines[0]
    assert "cannot take release 2 (release-2.yaml)" in failed[1]
    assert failed[1].endswith(", and 3 objects were not replayed"), failed[1]
    every = operator.answer(_capture(["a"]), CANDIDATE, [passed], {}, UNTOUCHED)
    assert every[0].startswith("This cluster (context prod"), every[0]


def test_one_line_per_object_with_the_servers_message_once_and_the_writes_it_refused():
    label = "team-a/old-office"
    findings = {
        label: [
            _refused(label, "update with what was read"),
            _refused(label, "update with a changed annotation"),
            _refused(label, "server-side apply of the same content"),
            _refused(label, RECREATE, name="gate-recreated-x7k2p"),  # the gate's copy
        ]
    }
    refused = {label: {"update with what was read", RECREATE}}
    lines = operator.answer(
        _capture(["old-office"]),
        CANDIDATE,
        [_upgrade_failed("x")],
        findings,
        UNTOUCHED,
        "",
        refused,
    )
    mine = [line for line in lines if label in line and line.startswith("  - ")]
    assert len(mine) == 1, lines
    line = mine[0]
    assert line.startswith(
        f"  - {label}: update, annotation update, server-side apply, re-create at v1beta1 "
        "refused: 422 "
    ), line
    assert line.count("Unsupported value") == 1, line
    assert "gate-recreated" not in "\n".join(lines)
    written, _, _ = line.partition(" refused: ")
    assert len(written) <= len(f"  - {label}: ") + operator.WRITES


def test_the_candidate_is_named_as_the_table_names_it():
    # A history of three releases: in a --from-cluster run release 1 is the cluster and the
    # candidate (the history's third) release 2, in the table as in the answer.
    single = Release(1, "release-3.yaml", {CRD: MANIFEST})
    lines = operator.answer(_capture(["a"]), single, [], {}, UNTOUCHED)
    assert "can take release 2 (release-3.yaml)" in lines[0], lines
    assert (
        "In the report, release 1 is this cluster's CRDs as installed and release 2 "
        "(release-3.yaml) the candidate"
    ) in lines


def test_objects_the_gate_made_up_never_appear():
    made_up = _upgrade_failed(
        "upgrade of gate-history/r2-v1beta1-4 refused: 422 spec.mode: Unsupported value"
    )
    deprecation = CheckResult("deprecation", "release 2")
    deprecation.fail("get of rt-v1beta1-v1-3 at v1beta1 did not warn")
    lines = operator.answer(_capture(["a"]), CANDIDATE, [made_up, deprecation], {}, UNTOUCHED)
    told = "\n".join(lines)
    assert (
        "r2-v1beta1-4" not in told and "rt-v1beta1-v1-3" not in told and "gate-history" not in told
    )
    assert (
        "cannot take release 2 (release-2.yaml): the release fails on objects the gate" in lines[0]
    )


def test_ratcheting_is_said_only_where_the_same_content_update_passed():
    ratcheted, stuck, unknown = "team-a/archive", "team-a/old-office", "team-a/lab"
    findings = {label: [_refused(label, RECREATE)] for label in (ratcheted, stuck, unknown)}
    refused = {ratcheted: {RECREATE}, stuck: {"update with what was read", RECREATE}}
    lines = operator.answer(
        _capture(["archive", "old-office", "lab"]),
        CANDIDATE,
        [_upgrade_failed("x")],
        findings,
        UNTOUCHED,
        "",
        refused,
    )
    by_object = {
        label: next(line for line in lines if line.startswith(f"  - {label}:"))
        for label in findings
    }
    assert (
        "ratchets" in by_object[ratcheted]
        and "leave spec.mode unchanged still pass" in by_object[ratcheted]
    )
    assert (
        "can only be read or deleted until fixed (set spec.mode to what the release accepts)"
        in by_object[stuck]
    )
    assert "ratchet" not in by_object[stuck]
    assert "ratchet" not in by_object[unknown] and "until fixed" not in by_object[unknown]
    assert sum("ratchet" in line for line in lines) == 1, lines


def test_objects_no_write_is_accepted_for_come_first_and_every_one_is_in_the_fix_list():
    labels = [f"team-a/t{i:02d}" for i in range(25)]
    findings = {label: [_refused(label, RECREATE)] for label in labels}
    refused = {label: {RECREATE} for label in labels}
    refused["team-a/t24"] = {"update with what was read", RECREATE}
    fixes = operator.fix_list(findings, refused)
    assert next(iter(fixes)) == "team-a/t24" and set(fixes) == set(labels)
    lines = operator.answer(
        _capture([label.rpartition("/")[2] for label in labels]),
        CANDIDATE,
        [_upgrade_failed("x")],
        findings,
        UNTOUCHED,
        "",
        refused,
    )
    listed = [line for line in lines if line.startswith("  - ")]
    assert listed[0].startswith("  - team-a/t24:") and "until fixed" in listed[0]
    assert listed[-1].startswith("  - and 5 more (every one: report.md's 'Objects to fix'")


def test_a_re_create_refused_after_refused_writes_claims_no_ratcheting():
    alone = Refusal(RECREATE, "v1", 422, "invalid").line
    after_others = Refusal(RECREATE, "v1", 422, "invalid", alone=False).line
    assert "pass only because the API server ratchets" in alone
    assert "ratchet" not in after_others


def test_a_status_only_refusal_names_the_status_field_to_fix():
    # The server words a oneOf's cause under `status`, then the path below it; the line
    # names the field the value is at (as it does for spec), and what is refused.
    label = "team-b/status-bad-ip"
    message = (
        'Tunnel.example.com "gate-recreated-vlf8x" is invalid: [status: Invalid value: "": '
        '"addresses[0]" must validate one and only one schema (oneOf). Found none valid, '
        'status: Invalid value: "": "addresses[0].value" must validate at least one schema '
        '(anyOf), status.addresses[0].value: Invalid value: "pending": addresses[0].value in '
        'body must be of type ipv4: "pending", <nil>: Invalid value: null: some validation '
        "rules were not checked because the object was invalid]"
    )
    finding = f"{label}: {Refusal(RECREATE_STATUS, 'v1beta1', 422, message).line}"
    fixes = operator.fix_list({label: [finding]}, {label: {RECREATE_STATUS}})
    line = fixes[label]
    assert line.startswith("status written to a new copy at v1beta1 refused: 422 "), line
    assert line.endswith(
        " — its status written anew (a controller setting it on a new copy, a restore with "
        "status) is refused, while its own status update passes only because the API server "
        "ratchets validation of unchanged values: fix status.addresses[0].value"
    ), line
    assert line.count("ratchets") == 1, line
    refused = {label: {"status update through /status"}}
    status_update = Refusal("status update through /status", "v1beta1", 422, message).line
    stuck = operator.fix_list({label: [f"{label}: {status_update}"]}, refused)[label]
    assert stuck.endswith(
        "every write of its status is refused, its controller's too: set "
        "status.addresses[0].value to what the release accepts"
    ), stuck


def test_the_fields_named_are_the_servers_causes_deepest_first_seen():
    assert operator.refused_fields(
        'x is invalid: [spec.addresses: Invalid value: "array": must be unique, '
        'spec.addresses[1].value: Invalid value: "x": bad, spec: Invalid value: "": '
        '"listeners[0]" must validate]'
    ) == ["spec.addresses", "spec.addresses[1].value", "spec.listeners[0]"]
