"""What an old object's read after the upgrade may show that is no finding: a value its new
conversion carries from what the object holds (a fix), and the webhook's own annotation."""

from crdharness.gate import diff
from crdharness.gate.checks import upgrade_reads
from crdharness.gate.checks.upgrade_objects import Written


def old_object(**held) -> Written:
    obj = Written("apirules.example.com", "v1beta1", "kept1-v1beta1-0", "ns")
    obj.seen["v1beta1"] = {"spec": held}
    return obj


def test_a_value_appearing_at_another_version_that_the_object_holds_is_carried_now():
    obj = old_object(gateway="kyma-system/gw", host="a.example.com")
    # api-gateway 3.1.1 reads into v2 what 3.1.0 left out: the same values, another path too.
    assert upgrade_reads._carried_now(
        obj, "v2", diff.Difference("spec.gateway", "added", None, "kyma-system/gw")
    )
    assert upgrade_reads._carried_now(
        obj, "v2", diff.Difference("spec.hosts", "added", None, ["a.example.com"])
    )
    # With the zero values of the Go struct it was copied into.
    copied = {"name": "a.example.com", "external": False}
    assert upgrade_reads._carried_now(obj, "v2", diff.Difference("spec.svc", "added", None, copied))


def test_a_value_from_nowhere_changed_or_zero_stays_a_finding():
    obj = old_object(gateway="kyma-system/gw")
    new = diff.Difference("spec.timeout", "added", None, 30)
    assert not upgrade_reads._carried_now(obj, "v2", new)
    changed = diff.Difference("spec.gateway", "changed", "other/gw", "kyma-system/gw")
    assert not upgrade_reads._carried_now(obj, "v2", changed)
    assert not upgrade_reads._carried_now(obj, "v2", diff.Difference("spec.x", "added", None, ""))
    # At the version it was written at, any change is the upgrade's.
    same_version = diff.Difference("spec.gateway", "added", None, "kyma-system/gw")
    assert not upgrade_reads._carried_now(obj, "v1beta1", same_version)
    # An object the upgrade already changed elsewhere is not excused.
    obj.findings.append("kept1-v1beta1-0 at v1beta1: spec.gateway: lost")
    assert not upgrade_reads._carried_now(obj, "v2", same_version)


def test_only_an_annotation_that_appeared_is_the_webhooks_own():
    own = upgrade_reads._webhooks_own_annotation
    assert own(diff.Difference("metadata.annotations.example.com/kept", "added", None, "x"))
    assert own(diff.Difference("metadata.annotations", "added", None, {"example.com/k": "x"}))
    assert not own(diff.Difference("metadata.annotations.example.com/k", "lost", "x", None))
    assert not own(diff.Difference("metadata.annotations.example.com/k", "changed", "x", "y"))
    assert not own(diff.Difference("spec.x", "added", None, "x"))
