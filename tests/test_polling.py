"""``wait_for``: an unexpected exception ends the wait at once and says what it was; only what
the caller names counts as "not yet"."""

import pytest

from crdharness.polling import WaitTimeout, wait_for


class Refused(Exception):
    pass


def test_an_unexpected_exception_ends_the_wait_at_once():
    calls = []

    def condition():
        calls.append(1)
        raise Refused("422 spec.port: Invalid value")

    with pytest.raises(Refused, match="422"):
        wait_for(condition, 30, "the object to be written")
    assert len(calls) == 1


def test_an_exception_the_caller_names_is_retried_until_the_condition_holds():
    answers = iter([ConnectionError("refused"), ConnectionError("refused"), "ready"])

    def condition():
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert wait_for(condition, 5, "the server", interval=0, retry=(ConnectionError,)) == "ready"


def test_a_timeout_names_what_was_awaited_and_the_last_retried_error():
    def condition():
        raise ConnectionError("connection refused")

    with pytest.raises(WaitTimeout) as raised:
        wait_for(condition, 0.05, "the webhook to listen", interval=0.01, retry=(OSError,))
    assert str(raised.value) == (
        "timed out after 0.05s waiting for the webhook to listen; "
        "last error: ConnectionError: connection refused"
    )


def test_a_tally_says_how_far_and_how_fast_at_most_every_few_seconds(monkeypatch):
    from crdharness import progress

    now = [100.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: now[0])
    said: list[str] = []
    tally = progress.Tally(said.append, "replayed", 10, every=5.0)
    for _ in range(4):
        now[0] += 1.0
        tally.add()
    assert said == []  # 4 s: nothing yet
    now[0] += 1.0
    tally.add()
    assert said == ["replayed: 5 of 10 (1/s, 5s)"]
    tally.add()
    assert len(said) == 1  # not again within the next 5 s
    tally.finish()
    assert said[-1] == "replayed: 6 of 10 (1/s, 5s)"
