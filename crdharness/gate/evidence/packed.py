"""Values kept compressed: JSON, zlib-compressed, where JSON gives the value back exactly.

Why: the gate keeps many large JSON values for the whole run — the bodies and smallest values
drawn per schema (``schema_memo``), and each old object as last read at every served version
(``upgrade_objects.Written``). A provider's objects are a few kilobytes of JSON each, seven
times that as Python objects, and the upgrade keeps ~10,000 of them at two or three versions
(upjet's whole release: the gate's Python grew past 1.4 GB). Compressed they are about a
kilobyte. Each caller gets its own copy (parsed again), so none can change what is kept.
"""

from __future__ import annotations

import copy
import json
import zlib
from collections.abc import Iterator, MutableMapping
from typing import Any

import orjson


class Packed:
    """A value kept: compressed JSON where JSON gives it back equal (else the value itself,
    copied for each caller: a tuple, a NaN)."""

    __slots__ = ("_data", "_how")

    RAW, JSON, ORJSON = 0, 1, 2  # the value itself; JSON text by ``json``; by ``orjson``

    def __init__(self, data: Any, how: int) -> None:
        self._data, self._how = data, how

    @classmethod
    def of(cls, value: Any) -> Packed:
        try:
            text = json.dumps(value, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError):
            return cls(value, cls.RAW)
        if json.loads(text) != value:  # a tuple, a key that is not a string
            return cls(value, cls.RAW)
        return cls(zlib.compress(text.encode(), 1), cls.JSON)

    @classmethod
    def of_json(cls, value: dict) -> Packed:
        """A value parsed from JSON (an API server's answer): JSON gives it back exactly.
        Through orjson (each old object read is kept so, at every version, on every read);
        ``json`` for what orjson refuses to write (an integer beyond 64 bits, which orjson
        would read back as a float)."""
        try:
            return cls(zlib.compress(orjson.dumps(value), 1), cls.ORJSON)
        except orjson.JSONEncodeError:
            text = json.dumps(value, separators=(",", ":"))
            return cls(zlib.compress(text.encode(), 1), cls.JSON)

    def value(self) -> Any:
        if self._how == self.ORJSON:
            return orjson.loads(zlib.decompress(self._data))
        if self._how == self.JSON:
            return json.loads(zlib.decompress(self._data))
        return copy.deepcopy(self._data)


class PackedReads(MutableMapping[str, dict]):
    """version -> an object as read there (an API server's answer), kept packed: each get is
    the caller's own copy."""

    __slots__ = ("_kept",)

    def __init__(self, reads: dict[str, dict] | None = None) -> None:
        self._kept: dict[str, Packed] = {}
        for version, body in (reads or {}).items():
            self[version] = body

    def __getitem__(self, version: str) -> dict:
        return self._kept[version].value()

    def __setitem__(self, version: str, body: dict) -> None:
        self._kept[version] = Packed.of_json(body)

    def __delitem__(self, version: str) -> None:
        del self._kept[version]

    def __iter__(self) -> Iterator[str]:
        return iter(self._kept)

    def __len__(self) -> int:
        return len(self._kept)

    def __contains__(self, version: object) -> bool:
        return version in self._kept
