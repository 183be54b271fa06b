"""The gate's own failures (a bug in it, a cluster gone): each stops only the checks it was
deciding, which become "not proven" with the cause and where it was raised, never a finding
of the release (``CheckResult.not_finished``)."""

from __future__ import annotations

import traceback
from collections.abc import Iterator
from contextlib import contextmanager

from crdharness.gate.results import CheckResult


def cause_of(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}"[:400] if text else type(exc).__name__


def where_raised(exc: BaseException) -> str:
    """The innermost frame of the harness's own code, for the engineer who reads the bug."""
    frames = [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if "crdharness" in f.filename and f.filename != __file__  # not where it was caught
    ]
    if not frames:
        return "raised outside the harness"
    frame = frames[-1]
    return f"raised at {frame.filename.rsplit('crdharness/', 1)[-1]}:{frame.lineno} ({frame.name})"


@contextmanager
def contained(*results: CheckResult) -> Iterator[None]:
    """Run one check's work; an exception of the gate's own ends only ``results`` (not
    proven) and the phase goes on with its other checks. A timeout (``GateTimeout``, not an
    ``Exception``) still ends the phase."""
    try:
        yield
    except Exception as exc:
        for result in results:
            result.not_finished(cause_of(exc), where_raised(exc))
