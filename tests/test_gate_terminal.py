"""The terminal's failure blocks: a failure is folded into one line only when it is the same
as one shown above (the same check, paths and kind of evidence; identical evidence where it
names no path), and a ``paths:`` line names only the schema paths of the failures themselves:
never a version, nor a note the check added (what the server restores, latency)."""

from __future__ import annotations

from crdharness.gate.reporting.terminal import failure_block
from crdharness.gate.results import CheckResult, Form, Found

CRD = "widgets.example.com"
DURATION = (
    "an object valid at v1alpha1 cannot be created: conversion webhook for example.com/"
    'v1alpha1, Kind=Widget failed: time: invalid duration "gate-value"'
)
CRASH = (
    "an object valid at v1beta1 cannot be read at v1alpha1: Internal error occurred: "
    "StorageError: corrupt object, Code: 7: conversion webhook for example.com/v1beta1, "
    "Kind=Widget failed: an error on the server (\"gate proxy: ('Connection aborted.', "
    "RemoteDisconnected('Remote end closed connection without response'))\")"
)


def _convertibility(subject: str, evidence: str) -> CheckResult:
    """As round_trips records one: a form without paths (its pair is its subject)."""
    result = CheckResult("convertibility", subject)
    detail = f"GET at v1alpha1: 500 {evidence}"
    return result.fail(evidence, detail, found=[Found(Form(), evidence, [detail])])


def _round_trip(subject: str, evidence: str, *paths: str) -> CheckResult:
    result = CheckResult("round-trip", subject)
    details = [f"{p}: lost (was true)" for p in paths]
    return result.fail(evidence, *details, found=[Found(Form(frozenset(paths)), evidence, details)])


def _blocks(*results: CheckResult) -> list[list[str]]:
    shown: dict = {}
    return [failure_block(result, shown) for result in results]


def test_failures_without_paths_are_not_folded_unless_their_evidence_is_the_same():
    duration = _convertibility(f"{CRD} v1alpha1->v1beta1", DURATION)
    crash = _convertibility(f"{CRD} v1beta1->v1alpha1", CRASH)
    again = _convertibility(f"{CRD} v1alpha2->v1beta1", DURATION)
    first, second, third = _blocks(duration, crash, again)
    assert second[0] == f"FAIL convertibility [{CRD} v1beta1->v1alpha1]", second
    assert "RemoteDisconnected" in second[1] and "same" not in "\n".join(second)
    assert not any(line.startswith("  paths:") for line in first + second), first + second
    assert third == [
        f"FAIL convertibility [{CRD} v1alpha2->v1beta1]: the same failure as "
        f"[{CRD} v1alpha1->v1beta1] above"
    ]


def test_a_version_the_evidence_names_is_no_path():
    # Even where the check gave no form (a failure only its text says).
    result = CheckResult("convertibility", f"{CRD} v1beta1->v1alpha1").fail(CRASH)
    block = failure_block(result, {})
    assert not any(line.startswith("  paths:") for line in block), block


def test_the_same_paths_with_another_kind_of_evidence_are_not_folded():
    subject = f"{CRD} v1->v2"
    back = _round_trip(subject, "written at v1, read back at v1: changed spec.flag", "spec.flag")
    through = _round_trip(subject, "v1->v2->v1 changed spec.flag", "spec.flag")
    first, second = _blocks(back, through)
    assert "  paths: spec.flag" in first and "  paths: spec.flag" in second, second
    assert len(second) > 1, second


def test_the_same_failure_of_another_crd_is_folded_naming_the_one_above():
    lost = "v1beta1->v1alpha1->v1beta1 changed spec.provider.a, spec.provider.b"
    stores = _round_trip(f"stores.example.com {'v1beta1->v1alpha1'}", lost, "spec.provider.b")
    stores.found[0].form = Form(frozenset({"spec.provider.a", "spec.provider.b"}))
    cluster = _round_trip("clusterstores.example.com v1beta1->v1alpha1", lost, "spec.provider.a")
    cluster.found[0].form = stores.found[0].form
    first, second = _blocks(stores, cluster)
    assert "  paths: spec.provider.a, spec.provider.b" in first, first
    assert second == [
        "FAIL round-trip [clusterstores.example.com v1beta1->v1alpha1]: the same failure as "
        "[stores.example.com v1beta1->v1alpha1] above (paths: spec.provider.a, spec.provider.b)"
    ]


def test_a_notes_path_is_not_named_as_the_failures():
    # webhook-conduct: every failure an unreachable webhook; a note says what the server
    # restores (not misconduct), naming metadata.creationTimestamp.
    problems = [
        f"review u{i} (1 objects to example.com/v1alpha1): unreachable: ('Connection "
        "aborted.', RemoteDisconnected('Remote end closed connection'))"
        for i in range(3)
    ]
    result = CheckResult("webhook-conduct", "webhook")
    result.fail(f"3 misbehaving answers of 90: {problems[0]}", *problems)
    result.details.insert(0, "latency per review (through the proxy): p50 4.9 ms")
    result.details.insert(
        1,
        "metadata the server restores: 38 answers (e.g. metadata.creationTimestamp: appeared "
        "(null)): kube-apiserver copies back every metadata field but labels and annotations",
    )
    block = failure_block(result, {})
    assert not any("creationTimestamp" in line for line in block), block
    assert not any(line.startswith("  paths:") for line in block), block


def test_every_failures_paths_are_named_and_no_note_added_beside_them():
    # upgrade: one object's part after another; a part that passed adds only a note.
    result = CheckResult("upgrade", "release 1->2")
    for i, path in enumerate(["spec.mode", "spec.port", "spec.a", "spec.b", "spec.c"]):
        part = result.part()
        line = f"team-a/o{i}: update with what was read at v1: 422 x: {path}: Required value"
        part.fail(line, line)
        result.add(part)
    status = result.part()
    line = (
        "team-b/s: the same status written through /status to a new copy at v1: 422 Gateway "
        '"s" is invalid: status.addresses[0].value: Invalid value: "pending": must be ipv4'
    )
    status.fail(line, line)
    status.details.append("team-b/s: status.phase: lost (was <value>) read through v2, a note")
    result.add(status)
    noted = result.part()
    noted.details.append("team-c/n: spec.legacy: lost (was <value>) under release 1: a hazard")
    result.add(noted)
    paths = next(line for line in failure_block(result, {}) if line.startswith("  paths:"))
    assert paths == ("  paths: spec.mode, spec.port, spec.a, spec.b, spec.c (+1 more)"), paths
    result.objects = []
    from crdharness.gate.reporting import terminal

    assert terminal.failure_paths(result)[-1] == "status.addresses[].value"
    assert "spec.legacy" not in terminal.failure_paths(result)
    assert "status.phase" not in terminal.failure_paths(result)


def test_webhook_conducts_block_names_no_path_the_server_restores():
    # The check itself: answers the webhook never gave, beside answers whose metadata the
    # server restores (Go's creationTimestamp: null).
    from types import SimpleNamespace

    from crdharness.gate.checks import conduct
    from crdharness.gate.webhook.proxy import Exchange

    def review(uid: str) -> dict:
        objects = [{"apiVersion": "example.com/v1", "metadata": {"name": "a", "uid": "1"}}]
        request = {"uid": uid, "desiredAPIVersion": "example.com/v2", "objects": objects}
        return {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "request": request,
        }

    back = [
        {
            "apiVersion": "example.com/v2",
            "metadata": {"name": "a", "uid": "1", "creationTimestamp": None},
        }
    ]
    answer = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "response": {"uid": "u1", "result": {"status": "Success"}, "convertedObjects": back},
    }
    aborted = (
        "the webhook crashed on this review (it closed the connection without answering); "
        "its log from that moment: panic: runtime error: index out of range"
    )
    exchanges = [
        Exchange("/convert", review("u1"), 200, answer, 0.01),
        Exchange("/convert", review("u2"), 0, None, 0.01, error=aborted),
        Exchange("/convert", review("u3"), 0, None, 0.01, error=aborted),
    ]
    result = CheckResult("webhook-conduct", "webhook")
    ctx = SimpleNamespace(
        webhook=SimpleNamespace(proxy=SimpleNamespace(exchanges=exchanges)),
        config=SimpleNamespace(webhook=None),
        releases=[],  # no release before it: nothing is debt
        release_webhooks={},
        result=lambda check, subject: result,
    )
    conduct.run(ctx)  # type: ignore[arg-type]
    assert result.passed is False and any("creationTimestamp" in d for d in result.details)
    block = failure_block(result, {})
    assert "crashed on this review" in block[1], block
    assert not any(line.startswith("  paths:") for line in block), block


def test_paths_other_failures_name_are_not_shown_as_the_headlines():
    subject = f"{CRD} v1beta1->v1alpha1"
    result = _convertibility(subject, CRASH)  # its form names no path
    other = "an object valid at v1beta1 cannot be read at v1alpha1: spec.owner.kind refused"
    result.fail(other, found=[Found(Form(frozenset({"spec.owner.kind"})), other)])
    block = failure_block(result, {})
    assert (
        block[1].startswith("  an object valid at v1beta1 cannot be read") and "Storage" in block[1]
    )
    assert "  paths of its other failures: spec.owner.kind" in block, block
    # A headline that names its paths keeps the plain label.
    lost = _round_trip(subject, "v1beta1->v1alpha1->v1beta1 changed spec.flag", "spec.flag")
    assert "  paths: spec.flag" in failure_block(lost, {})
