"""One structured log line (JSON) per review, and per rejected request.

The e2e suite reads these records to tell which conversions the API server asked for.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import IO

from crdconvert import json_codec


def object_summary(obj) -> dict:
    if not isinstance(obj, dict):
        return {"invalid": True}
    metadata = obj["metadata"] if isinstance(obj.get("metadata"), dict) else {}
    summary: dict = {"name": metadata.get("name"), "apiVersion": obj.get("apiVersion")}
    for key in ("namespace", "uid", "resourceVersion"):
        if metadata.get(key):
            summary[key] = metadata[key]
    return summary


class RecordSink:
    def __init__(self, stream: IO[bytes] | None = None):
        self._stream = stream or sys.stdout.buffer
        self._lock = threading.Lock()
        self._second, self._stamp = -1, b""

    def _line_start(self) -> bytes:
        # Formatted once a second: at one object per review this is a review's hot path.
        second = int(time.time())
        if second != self._second:
            self._second = second
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(second))
            self._stamp = b'{"time":"%s",' % stamp.encode()
        return self._stamp

    def write(self, record: dict) -> None:
        """Append ``record`` with the time as its first key."""
        # Spliced in as bytes rather than by copying the record into a new dict.
        start = self._line_start()
        line = (start + json_codec.dumps(record)[1:] if record else start[:-1] + b"}") + b"\n"
        with self._lock:
            self._stream.write(line)
            self._stream.flush()

    @classmethod
    def to_file(cls, path: str) -> RecordSink:
        return cls(open(path, "ab", buffering=0))
