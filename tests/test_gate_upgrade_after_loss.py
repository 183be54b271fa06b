"""An old object the gate's own writes under the earlier release emptied through a webhook
(a required field lost) is refused again under the next release with the same schema: that
refusal follows from the loss (named where it is made), not from the upgrade (seen on a real
webhook that empties an object's spec when it is written at its oldest version after a write
at the newest)."""

from __future__ import annotations

from types import SimpleNamespace

from crdharness.gate.checks.upgrade_objects import WEBHOOKS_OWN, Written, after_earlier_loss
from crdharness.gate.checks.upgrade_writes import RECREATE, Refusal

SCHEMA = {"name": "v2", "schema": {"openAPIV3Schema": {"type": "object"}}}
REQUIRED = "spec.gateway: Required value, spec.hosts: Required value"


def release(index: int, entry: dict) -> SimpleNamespace:
    return SimpleNamespace(index=index, version=lambda crd, version: entry)


def judged(lost: set[str], earlier: dict = SCHEMA, message: str = REQUIRED) -> str:
    ctx = SimpleNamespace(releases=[release(0, earlier), release(1, SCHEMA)])
    obj = Written("things.example.com", "v1", "r1-v1-5", "ns", lost_earlier=lost)
    refusal = Refusal(RECREATE, "v2", 422, f'Thing "r1-v1-5" is invalid: [{message}]')
    return after_earlier_loss(ctx, ctx.releases[1], obj, "v2", refusal)


def test_a_refusal_naming_only_fields_lost_earlier_with_the_same_schema_is_not_a_finding():
    line = judged({"spec.gateway", "spec.hosts", "spec.rules"})
    assert line.startswith(WEBHOOKS_OWN) and "under release 1 already" in line, line
    assert judged({"spec"})  # lost with their parent


def test_a_refusal_the_earlier_loss_does_not_explain_stays_a_finding():
    assert judged({"spec.gateway"}) == ""  # spec.hosts was not lost before
    assert judged(set()) == ""
    assert judged({"spec.gateway", "spec.hosts"}, message="Internal error occurred") == ""
    changed = {"name": "v2", "schema": {"openAPIV3Schema": {"type": "object", "required": []}}}
    assert judged({"spec.gateway", "spec.hosts"}, earlier=changed) == ""  # schema changed
