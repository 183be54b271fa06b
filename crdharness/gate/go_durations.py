"""Go's ``time.Duration`` text: a webhook built on ``metav1.Duration`` reads ``"1h"`` and writes
it back as ``"1h0m0s"`` — the same duration, spelt as ``Duration.String`` spells it. Only that
re-spelling is recognised: both texts must parse as Go durations of the same length, and one
of them must be Go's own spelling, so a field that merely holds two different strings is
still a change.

Written here rather than taken from a library: the grammar is Go's ``time.ParseDuration``
(a sign, then decimal numbers each with a unit ns, us, µs, ms, s, m, h) and its ``String``,
neither of which Python's libraries implement.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

UNITS = {  # nanoseconds per unit
    "ns": Decimal(1),
    "us": Decimal(1_000),
    "µs": Decimal(1_000),
    "μs": Decimal(1_000),
    "ms": Decimal(1_000_000),
    "s": Decimal(1_000_000_000),
    "m": Decimal(60_000_000_000),
    "h": Decimal(3_600_000_000_000),
}
PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse(text: str) -> int | None:
    """Nanoseconds, as Go's ``time.ParseDuration`` reads ``text``; None if it does not."""
    if not isinstance(text, str) or not text:
        return None
    sign, body = (-1, text[1:]) if text[0] == "-" else (1, text.lstrip("+"))
    if body == "0":
        return 0
    position, total = 0, Decimal(0)
    for match in PART.finditer(body):
        if match.start() != position:
            return None
        try:
            total += Decimal(match.group(1)) * UNITS[match.group(2)]
        except InvalidOperation:
            return None
        position = match.end()
    if position != len(body) or position == 0:
        return None
    return sign * int(total)


def go_string(nanoseconds: int) -> str:
    """``time.Duration(nanoseconds).String()``."""
    if nanoseconds == 0:
        return "0s"
    sign = "-" if nanoseconds < 0 else ""
    n = abs(nanoseconds)
    if n < 1_000_000_000:  # below a second: the largest unit that keeps it >= 1
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if n >= size:
                return sign + _decimal(n, size) + unit
    hours, rest = divmod(n, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    seconds = _decimal(rest, 1_000_000_000) + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{seconds}"
    if minutes:
        return f"{sign}{minutes}m{seconds}"
    return sign + seconds


def _decimal(n: int, size: int) -> str:
    whole, fraction = divmod(n, size)
    if not fraction:
        return str(whole)
    digits = len(str(size)) - 1
    return f"{whole}.{str(fraction).rjust(digits, '0').rstrip('0')}"


def respelt(before: object, after: object) -> bool:
    """Whether ``after`` is ``before`` as a Go duration re-spelt (or the reverse): the same
    length, different text, one of them Go's own spelling."""
    if not isinstance(before, str) or not isinstance(after, str) or before == after:
        return False
    a, b = parse(before), parse(after)
    if a is None or a != b:
        return False
    return go_string(a) in (before, after)
