"""JSON in and out: orjson when installed (the image has it), the standard library otherwise."""

from __future__ import annotations

try:
    import orjson

    def loads(data: bytes):
        return orjson.loads(data)

    def dumps(value) -> bytes:
        return orjson.dumps(value)

    DecodeError = orjson.JSONDecodeError
except ImportError:  # pragma: no cover - exercised where orjson is absent
    import json

    def loads(data: bytes):
        return json.loads(data)

    def dumps(value) -> bytes:
        return json.dumps(value, separators=(",", ":")).encode()

    DecodeError = ValueError  # type: ignore[misc, assignment]  # orjson's is one too
