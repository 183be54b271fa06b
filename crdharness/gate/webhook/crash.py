"""A webhook that crashed or hung on a review, named as such.

When the webhook closes the connection without answering (a Go handler's panic: net/http
logs it and drops the connection; or the process died), refuses the connection (it is not
running), or does not answer before kube-apiserver's 30 s limit, the API server only says
``StorageError: corrupt object … RemoteDisconnected`` or ``context deadline exceeded``. The
recording proxy knows better: it answers the API server with a message that says what the
webhook did and quotes the first lines its log printed from that moment (a Go ``panic:`` and
its first frames), so every finding that quotes the server's message names the crash.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import requests

# Lines that start what a Go program prints when it panics or dies, or a Python traceback.
# (Go's runtime and net/http print these at a line's start, after the log's timestamp at
# most; a JSON log line that merely mentions a panic is not one.)
CRASH_START = re.compile(
    r"^(?:[\d/: .]+)?(?:panic: |http: panic serving|fatal error: |goroutine \d+ \[)"
    r"|^Traceback \(most recent call last\)"
)
EXCERPT_LINES = 4  # the panic's line and its first frames
LINE_CHARACTERS = 160


# How requests says the peer closed a connection it had accepted without an answer.
DROPPED = ("RemoteDisconnected", "Connection aborted", "Connection reset", "EOF occurred")


def what_happened(exc: requests.RequestException, timeout: float) -> str:
    """What the webhook did, from how the proxy's call to it failed. Only a dropped
    connection or a timeout is called a crash or a hang; anything else (refused, TLS) keeps
    the client's own words, which the start-up hints read."""
    if isinstance(exc, requests.Timeout) and not isinstance(exc, requests.ConnectTimeout):
        return f"hung on this review (no answer in {timeout:g} s)"
    text = str(exc)
    if not isinstance(exc, requests.exceptions.SSLError) and any(d in text for d in DROPPED):
        return "crashed on this review (it closed the connection without answering)"
    return f"could not be reached: {text}"


@dataclass
class WebhookLog:
    """The webhook's own output file (a command webhook's stdout and stderr)."""

    path: Path

    def offset(self) -> int:
        try:
            return self.path.stat().st_size
        except OSError:
            return 0

    def excerpt_since(self, offset: int) -> list[str]:
        """The first lines of a crash printed after ``offset``: from its first panic (or
        traceback) line on; none without one (other requests' log lines are no evidence)."""
        try:
            with self.path.open("rb") as log:
                log.seek(offset)
                printed = log.read(64 * 1024).decode(errors="replace").splitlines()
        except OSError:
            return []
        printed = [line.rstrip() for line in printed if line.strip()]
        start = next((i for i, line in enumerate(printed) if CRASH_START.search(line)), None)
        if start is None:
            return []
        return [line[:LINE_CHARACTERS] for line in printed[start : start + EXCERPT_LINES]]


def exited(code: int) -> str:
    """What the webhook did, when its process is gone: every review after the one it died on
    meets a closed port ("connection refused"), which alone names nothing."""
    how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
    return f"is no longer running (its process exited, {how})"


def message(happened: str, excerpt: list[str], log: WebhookLog | None) -> str:
    """The proxy's answer to the API server (which quotes it in its own error)."""
    said = f"gate proxy: the webhook {happened}"
    if happened.startswith("could not be reached"):
        return said
    if excerpt and happened.startswith("is no longer running"):
        return f"{said}; the first crash its log printed: {' | '.join(excerpt)}"
    if excerpt:
        return f"{said}; its log from that moment: {' | '.join(excerpt)}"
    if log is None:
        return f"{said}; the gate does not hold its log"
    return f"{said}; its log printed no panic from that moment"
