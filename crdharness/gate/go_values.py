"""One value in two spellings, as a Go webhook writes it back: ``metav1.Duration`` writes
``1h`` as ``1h0m0s`` (``go_durations``), and ``metav1.Time`` writes ``2024-05-01T10:00:00+02:00``
as ``2024-05-01T08:00:00Z`` (RFC 3339 in UTC, whole seconds). Both are the same value to any
reader, so a value compared with what was sent, or with a schema's ``default``, is compared as
Go parses it. Only re-spellings into Go's own form count: two arbitrary texts that happen to
mean the same are still a change, and a time that lost its fraction of a second is a loss.
"""

from __future__ import annotations

from datetime import datetime, timezone

from crdharness.gate import go_durations

GO_TIME = "%Y-%m-%dT%H:%M:%SZ"  # metav1.Time's MarshalJSON: RFC 3339, UTC, whole seconds


def _instant(text: str) -> datetime | None:
    if not isinstance(text, str) or len(text) < 20 or text[10] not in "Tt":
        return None
    try:
        # Python 3.10's fromisoformat reads no "Z"
        moment = datetime.fromisoformat(text[:-1] + "+00:00" if text[-1] in "Zz" else text)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


def time_respelt(before: object, after: object) -> bool:
    """Whether one of two RFC 3339 times is the other as ``metav1.Time`` writes it."""
    if not isinstance(before, str) or not isinstance(after, str) or before == after:
        return False
    a, b = _instant(before), _instant(after)
    if a is None or b is None or a != b:
        return False
    return a.astimezone(timezone.utc).strftime(GO_TIME) in (before, after)


def respelt(before: object, after: object) -> bool:
    """Whether ``after`` is ``before`` re-spelt as Go writes it (or the reverse)."""
    return go_durations.respelt(before, after) or time_respelt(before, after)


def same(before: object, after: object) -> bool:
    """Equal, or the same value in Go's spelling."""
    return before == after or respelt(before, after)
