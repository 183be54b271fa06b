"""Wait for a condition with a deadline, and say what was awaited when it never came."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class WaitTimeout(AssertionError):
    """A condition did not become true in time (an AssertionError, so tests fail, not error)."""


def wait_for(
    condition: Callable[[], T | None],
    timeout: float,
    what: str,
    interval: float = 0.05,
    last_seen: Callable[[], str] | None = None,
    retry: tuple[type[BaseException], ...] = (),
) -> T:
    """Poll ``condition`` until it returns something truthy, and return that.

    An exception of a ``retry`` type counts as "not yet" (the thing may not exist yet, the
    server may still be starting); the last one is reported if the deadline passes. Any other
    exception ends the wait at once: a 422 is an answer, not something to wait 30 s for.
    """
    deadline = time.monotonic() + timeout
    last_error: BaseException | None = None
    while True:
        try:
            result = condition()
            if result:
                return result
        except retry as exc:
            last_error = exc
        if time.monotonic() >= deadline:
            detail = ""
            if last_seen is not None:
                detail = f"; last seen: {last_seen()}"
            elif last_error is not None:
                detail = f"; last error: {type(last_error).__name__}: {last_error}"
            raise WaitTimeout(f"timed out after {timeout:g}s waiting for {what}{detail}")
        time.sleep(interval)
