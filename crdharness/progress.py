"""Progress lines for long work (builds, downloads, cluster start), so no wait is silent."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

Reporter = Callable[[str], None]


def to_stderr(line: str) -> None:
    print(f"[crdharness] {line}", file=sys.__stderr__, flush=True)


def _elapsed(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


@contextmanager
def phase(report: Reporter, what: str, heartbeat: float = 15.0) -> Iterator[None]:
    """Report ``what`` when it starts, every ``heartbeat`` seconds while it runs, and at its end."""
    start = time.monotonic()
    report(f"{what} ...")
    finished = threading.Event()

    def beat() -> None:
        while not finished.wait(heartbeat):
            report(f"{what} ... still running ({_elapsed(time.monotonic() - start)} elapsed)")

    ticker = threading.Thread(target=beat, name="progress-heartbeat", daemon=True)
    ticker.start()
    try:
        yield
    except BaseException:
        report(f"{what}: failed after {_elapsed(time.monotonic() - start)}")
        raise
    finally:
        finished.set()
        ticker.join()
    report(f"{what}: done in {_elapsed(time.monotonic() - start)}")


class Tally:
    """Many items of work, counted as they end (from any thread): at most every ``every``
    seconds a line says how many of ``total`` are done and how fast, so a run over a few
    seconds is never silent; ``finish`` says the whole when it took that long."""

    def __init__(self, report: Reporter, what: str, total: int, every: float = 5.0):
        self.report, self.what, self.total, self.every = report, what, total, every
        self.done = 0
        self.started = self.said = time.monotonic()
        self._lock = threading.Lock()

    def add(self, count: int = 1) -> None:
        with self._lock:
            self.done += count
            now = time.monotonic()
            if now - self.said < self.every:
                return
            self.said = now
            line = self._line(now)
        self.report(line)

    def finish(self) -> None:
        now = time.monotonic()
        if now - self.started >= self.every:
            self.report(self._line(now))

    def _line(self, now: float) -> str:
        seconds = max(now - self.started, 1e-6)
        return (
            f"{self.what}: {self.done} of {self.total} ({self.done / seconds:.0f}/s, "
            f"{_elapsed(seconds)})"
        )
