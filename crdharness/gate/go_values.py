"""One value in two spellings, as a Go webhook writes it back: ``metav1.Duration`` writes
``1h`` as ``1h0m0s`` (``go_durations``), ``metav1.Time`` writes ``2024-05-01T10:00:00+02:00``
as ``2024-05-01T08:00:00Z`` (RFC 3339 in UTC, whole seconds), and ``resource.Quantity``
writes its canonical form (``1.5Gi`` as ``1536Mi``, ``1000`` as ``1k``, the number ``7`` as
``"7"``). Each is the same value to any reader, so a value compared with what was sent, or
with a schema's ``default``, is compared as Go parses it. Only re-spellings into Go's own
form count: two arbitrary texts that happen to mean the same are still a change, and a time
that lost its fraction of a second is a loss.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from decimal import Decimal, InvalidOperation

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


# resource.Quantity's grammar (k8s.io/apimachinery/pkg/api/resource): a number, then a binary
# suffix, a decimal one, or a decimal exponent. Written here: no Python library implements it.
QUANTITY = re.compile(
    r"([+-]?(?:\d+\.?\d*|\.\d+))(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?\d+)?"
)
BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


def _quantity(text: str) -> tuple[Decimal, str] | None:
    """(value, format: "binary", "decimal" or "exponent"), as Quantity parses ``text``."""
    match = QUANTITY.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        return None
    try:
        number, suffix = Decimal(match.group(1)), match.group(2) or ""
    except InvalidOperation:
        return None
    if suffix in BINARY:
        return number * Decimal(1024) ** BINARY[suffix], "binary"
    if suffix in DECIMAL:
        return number.scaleb(DECIMAL[suffix]), "decimal"
    return number.scaleb(int(suffix[1:])), "exponent"


def canonical_quantity(value: Decimal, form: str) -> str:
    """``Quantity.String()`` of a value parsed in ``form`` (to nano precision)."""
    if form == "binary" and value == value.to_integral_value() and abs(value) >= 1024:
        power = max(n for n in range(7) if value % Decimal(1024) ** n == 0)
        if power:
            suffix = next(s for s, n in BINARY.items() if n == power)
            return f"{int(value / Decimal(1024) ** power)}{suffix}"
        return str(int(value))
    exponent = -9
    while exponent < 18 and value % Decimal(1).scaleb(exponent + 3) == 0 and value:
        exponent += 3
    if not value:
        exponent = 0
    mantissa = int(value.scaleb(-exponent))
    if form == "exponent":
        return f"{mantissa}e{exponent}" if exponent else str(mantissa)
    suffix = next(s for s, n in DECIMAL.items() if n == exponent)
    return f"{mantissa}{suffix}"


def quantity_respelt(before: object, after: object) -> bool:
    """Whether one is the other as ``resource.Quantity`` writes it: its canonical form, or a
    JSON number answered as its canonical string (``7`` as ``"7"``)."""
    if isinstance(before, bool) or isinstance(after, bool) or before == after:
        return False
    for text, other in ((before, after), (after, before)):
        if isinstance(other, (int, float)) and isinstance(text, str):
            number = _quantity(str(other))
            return number is not None and canonical_quantity(*number) == text
    if not isinstance(before, str) or not isinstance(after, str):
        return False
    a, b = _quantity(before), _quantity(after)
    if a is None or b is None or a[0] != b[0]:
        return False
    return canonical_quantity(*a) == after or canonical_quantity(*b) == before


def respelt(before: object, after: object) -> bool:
    """Whether ``after`` is ``before`` re-spelt as Go writes it (or the reverse)."""
    return (
        go_durations.respelt(before, after)
        or time_respelt(before, after)
        or quantity_respelt(before, after)
    )


def same(before: object, after: object) -> bool:
    """Equal, or the same value in Go's spelling."""
    return before == after or respelt(before, after)
