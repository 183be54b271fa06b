"""A webhook's re-spelling: a difference a round trip found back at A that is the same
meaning in another field, not a loss (``CheckResult.respelt``; a finding only under
``strict``)."""

from __future__ import annotations

import re

from crdharness.gate import diff, go_values
from crdharness.gate.api import Answer

TOUCH = "gate.crdharness.io/round-trip"  # the annotation the gate's write at B adds


def respelt(found: list[diff.Difference], at_b: Answer, after_b: Answer) -> bool:
    """Whether the differences a round trip found back at A are the webhook's re-spelling,
    not a loss: the object reads exactly the same at B before and after the round trip; each
    value that appeared or changed at A is the one B held at that same path (the meaning came
    back from B: a deprecated ``regex: true`` answered as its successor's ``matchType: "=~"``,
    which B reads); and each old spelling lost at A is one B does not hold. A value B never
    showed (a status B does not declare, changed on the way back) or a field B holds and A
    lost stays a loss, as does a field only lost, and a label or annotation the user wrote
    changed (the webhook's own are set apart before: ``annotation_objects``)."""
    if any(d.path.startswith("metadata.") for d in found):
        return False  # a user's label or annotation is data of its own, never a spelling
    # (The write at B sent the object read there with the gate's annotation added.)
    if diff.differences(
        diff.comparable(at_b.body, ignore_annotations=(TOUCH,)),
        diff.comparable(after_b.body, ignore_annotations=(TOUCH,)),
    ):
        return False
    at_b_leaves = diff.leaves(at_b.body)
    moved = False
    lost = [d.path for d in found if d.change == "lost"]
    successors = [d.path for d in found if d.change != "lost"]
    for d in found:
        if d.change == "lost":
            if any(diff.at_or_under(p, d.path) for p in at_b_leaves):
                return False  # B holds it: lost on the way back
            continue
        # Both by the path below d.path: "" for the value itself, "name", "[0].name".
        came = {
            p[len(d.path) :].removeprefix("."): v
            for p, v in at_b_leaves.items()
            if diff.at_or_under(p, d.path)
        }
        new = diff.leaves(d.after)
        if not came or set(came) != set(new):
            return False
        if not all(go_values.same(came[k], v) for k, v in new.items()):
            return False
        moved = moved or not diff.zero_or_all_zero(d.after)
    # An old spelling's successor is beside it (``regex`` and ``matchType`` in one matcher),
    # not an annotation that appeared elsewhere in the object.
    return moved and all(_beside(path, successors) for path in lost)


def _beside(path: str, others: list[str]) -> bool:
    """Whether one of ``others`` is in the object that holds ``path`` (not the root)."""
    parent = re.sub(r"(\.[^.\[\]]+|\[\d+\])$", "", path)
    return parent != path and any(diff.at_or_under(o, parent) for o in others)
