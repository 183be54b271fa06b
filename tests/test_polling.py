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
