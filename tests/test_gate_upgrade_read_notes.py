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


def test_a_value_read_again_as_it_was_written_is_carried_now_at_any_version():
    # capsule v0.2.1 converts the status v0.2.0 dropped: read as written, at the version too.
    obj = old_object()
    obj.sent = {"status": {"size": 7, "namespaces": ["a"]}}
    for version in ("v1beta1", "v1alpha1"):
        size = diff.Difference("status.size", "changed", 0, 7)
        assert upgrade_reads._carried_now(obj, version, size)
        names = diff.Difference("status.namespaces", "added", None, ["a"])
        assert upgrade_reads._carried_now(obj, version, names)
    assert not upgrade_reads._carried_now(
        obj, "v1beta1", diff.Difference("status.size", "changed", 0, 8)
    )
    assert not upgrade_reads._carried_now(
        obj, "v1beta1", diff.Difference("status.size", "lost", 7, None)
    )


def test_a_value_from_nowhere_changed_or_zero_stays_a_finding():
    obj = old_object(gateway="kyma-system/gw")
    new = diff.Difference("spec.timeout", "added", None, 30)
    assert not upgrade_reads._carried_now(obj, "v2", new)
    changed = diff.Difference("spec.gateway", "changed", "other/gw", "kyma-system/other")
    assert not upgrade_reads._carried_now(obj, "v2", changed)
    assert not upgrade_reads._carried_now(obj, "v2", diff.Difference("spec.x", "added", None, ""))
    # An object the upgrade already changed elsewhere is not excused by a value found
    # at another path.
    obj.findings.append("kept1-v1beta1-0 at v1beta1: spec.gateway: lost")
    elsewhere = diff.Difference("spec.gw", "added", None, "kyma-system/gw")
    assert not upgrade_reads._carried_now(obj, "v2", elsewhere)


def test_only_an_annotation_that_appeared_is_the_webhooks_own():
    own = upgrade_reads._webhooks_own_annotation
    assert own(diff.Difference("metadata.annotations.example.com/kept", "added", None, "x"))
    assert own(diff.Difference("metadata.annotations", "added", None, {"example.com/k": "x"}))
    assert not own(diff.Difference("metadata.annotations.example.com/k", "lost", "x", None))
    assert not own(diff.Difference("metadata.annotations.example.com/k", "changed", "x", "y"))
    assert not own(diff.Difference("spec.x", "added", None, "x"))


def test_a_sample_is_named_as_the_user_knows_it_too():
    obj = Written("apirules.example.com", "v1beta1", "r1-v1beta1-0", "ns", sample=True)
    obj.sample_name = "checkout-route"
    assert obj.label == "r1-v1beta1-0 (your sample checkout-route)"
    assert Written("apirules.example.com", "v1beta1", "r1-v1beta1-1", "ns").label == "r1-v1beta1-1"
