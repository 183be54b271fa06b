"""Go's duration text as ``metav1.Duration`` re-spells it (``gate.go_durations``), checked
against what Go's ``time.ParseDuration`` and ``Duration.String`` give for the same input."""

import pytest

from crdharness.gate import go_durations


@pytest.mark.parametrize(
    ("text", "nanoseconds", "go"),
    [
        ("1h", 3_600_000_000_000, "1h0m0s"),
        ("90m", 5_400_000_000_000, "1h30m0s"),
        ("1m30s", 90_000_000_000, "1m30s"),
        ("1.5s", 1_500_000_000, "1.5s"),
        ("500ms", 500_000_000, "500ms"),
        ("1500us", 1_500_000, "1.5ms"),
        ("2µs", 2_000, "2µs"),
        ("0", 0, "0s"),
        ("-1h30m", -5_400_000_000_000, "-1h30m0s"),
        ("1h0.5m", 3_630_000_000_000, "1h0m30s"),
    ],
)
def test_parse_and_spell_as_go_does(text, nanoseconds, go):
    assert go_durations.parse(text) == nanoseconds
    assert go_durations.go_string(nanoseconds) == go


@pytest.mark.parametrize("text", ["", "1", "h", "1d", "1h ", "gate-value", "1.2.3s", "5 m"])
def test_what_go_refuses_is_no_duration(text):
    assert go_durations.parse(text) is None


def test_only_a_re_spelling_of_the_same_length_into_gos_own_text_is_one():
    assert go_durations.respelt("1h", "1h0m0s")
    assert go_durations.respelt("1h0m0s", "60m")  # one of the two is Go's spelling
    assert not go_durations.respelt("60m", "3600s")  # neither is: some other program's
    assert not go_durations.respelt("1h", "2h0m0s")  # another length: a change
    assert not go_durations.respelt("1h", "1h")
    assert not go_durations.respelt("fast", "slow")
    assert not go_durations.respelt(1, "1s")
