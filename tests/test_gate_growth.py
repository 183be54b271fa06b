"""Which old objects the history sets apart as growing with each write (issue 43, capsule):
a list a write under the earlier release grew once and then held (a webhook giving
``owners: []`` one zero item) is no witness of growth; one that grew again at the same
version, read at the same version, is."""

from __future__ import annotations

from crdharness.gate.checks.upgrade_objects import Written
from crdharness.gate.checks.upgrade_rewrites import note_growth

OWNERS = "spec.owners"


def written() -> Written:
    return Written("tenants.example.com", "v1beta1", "t-1", None)


def test_a_list_grown_once_then_held_is_no_growth():
    obj = written()
    note_growth(obj, "v1alpha1", "v1alpha1", [OWNERS])  # the first write: one zero owner
    note_growth(obj, "v1alpha1", "v1beta1", [OWNERS])  # the same write, read elsewhere
    note_growth(obj, "v1beta1", "v1alpha1", [])  # the later writes leave it as it is
    assert obj.grown == set()


def test_a_list_grown_by_a_second_write_grows_with_each():
    obj = written()
    note_growth(obj, "v1alpha1", "v1alpha1", [OWNERS])
    note_growth(obj, "v1alpha1", "v1alpha1", [OWNERS])  # the next write appends again
    assert obj.grown == {("v1alpha1", OWNERS)}
