"""JSON values the gate copies, and keys by their content, hundreds of thousands of times on a
provider's release (every object drawn, repaired, sent and compared): through orjson, which
does either ~10x faster than ``copy.deepcopy`` and ``json.dumps``; with the standard library
for what orjson refuses (an integer beyond 64 bits, drawn for a bound; a key that is not a
string). As when the gate sends an object (``api.encoded``), a float NaN becomes null: no
object the API server holds has one, and drawn floats exclude it."""

from __future__ import annotations

import copy
import json
from typing import Any, TypeVar

import orjson

Value = TypeVar("Value")


def copied(value: Value) -> Value:
    """A deep copy of JSON data (dicts, lists, strings, numbers, booleans, None)."""
    try:
        return orjson.loads(orjson.dumps(value))
    except (orjson.JSONEncodeError, TypeError):
        return copy.deepcopy(value)


def content_text(value: Any, default=str) -> bytes:
    """``value`` as text that is the same for the same content, whatever its keys' order
    (``default``: how a value JSON has no type for is written)."""
    try:
        return orjson.dumps(
            value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=default
        )
    except (orjson.JSONEncodeError, TypeError):
        return json.dumps(value, sort_keys=True, separators=(",", ":"), default=default).encode()
