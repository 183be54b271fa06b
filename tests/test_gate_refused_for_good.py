"""A write the API server refused for its own validation is not made again to see whether
the refusal repeats (``upgrade_writes.refused_for_good``): only refusals a busy machine or a
webhook may answer otherwise are tried twice before they count (issue 42)."""

from __future__ import annotations

import pytest

from crdharness.gate.checks.upgrade_writes import RECREATE, UPDATE, Refusal, refused_for_good


def refusal(status: int, message: str = "spec.size: Invalid value") -> Refusal:
    return Refusal(RECREATE, "v1", status, message)


@pytest.mark.parametrize("status", [400, 422])
def test_the_api_servers_own_validation_answers_for_good(status):
    assert refused_for_good([refusal(status), Refusal(UPDATE, "v1", 422, "x")], False)


@pytest.mark.parametrize(
    ("refused", "through_webhooks", "why"),
    [
        ([refusal(429, "Too many requests")], False, "a busy machine"),
        ([refusal(500, "conversion webhook failed")], False, "a webhook's failure"),
        ([refusal(504, "timeout")], False, "a time-out"),
        ([refusal(422), refusal(429)], False, "one of them may pass again"),
        ([refusal(422)], True, "a conversion or admission webhook answers between"),
        (
            [refusal(400, 'admission webhook "v.example.com" denied the request')],
            False,
            "an admission webhook's answer",
        ),
        ([], False, "nothing refused"),
    ],
)
def test_anything_else_is_tried_again(refused, through_webhooks, why):
    assert not refused_for_good(refused, through_webhooks), why
