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
