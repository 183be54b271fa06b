"""A watchdog that cleans up after a test process that died without cleaning up itself.

The test process starts it in a session of its own and keeps a pipe to its stdin open. It
tells the guardian what to clean (``watch <pid> <start time>``, ``group <pid> <start time>``
for a whole process group, ``remove <path>``, ``container <name>``), and ``release`` when it
has cleaned up itself. If the pipe closes without ``release`` — the test process was killed —
the guardian stops the watched processes and removes the paths.

A control plane shared by xdist workers outlives the worker that started it: that worker names
the run's controller as the ``owner <pid> <start time>``, and the guardian then waits for the
owner to end instead. Either way it also stops every process a removed workspace lists as its
child (another worker may have added one), and leaves alone a workspace marked kept.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from crdharness.processes import is_alive, is_same, kill_group_if_same, kill_if_same


class Guardian:
    """The test-process side: a handle on the running guardian."""

    def __init__(self) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "crdharness.guardian"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            text=True,
        )

    @property
    def pid(self) -> int:
        return self._proc.pid

    def _say(self, line: str) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.write(line + "\n")
        self._proc.stdin.flush()

    def watch(self, pid: int, created: float) -> None:
        self._say(f"watch {pid} {created!r}")

    def watch_group(self, pid: int, created: float) -> None:
        """Watch the whole process group that ``pid`` leads."""
        self._say(f"group {pid} {created!r}")

    def owner(self, pid: int, created: float) -> None:
        """Clean up when process ``pid`` ends, not when this process does."""
        self._say(f"owner {pid} {created!r}")

    def remove(self, path: Path) -> None:
        self._say(f"remove {path}")

    def remove_container(self, name: str) -> None:
        self._say(f"container {name}")

    def release(self) -> None:
        """Everything is cleaned up: let the guardian exit without doing anything."""
        if self._proc.poll() is None:
            self._say("release")
            assert self._proc.stdin is not None
            self._proc.stdin.close()
            self._proc.wait(10)


def _gone(process: tuple[int, float]) -> bool:
    return not is_same(*process) or not is_alive(process[0])


def _workspace_record(path: Path) -> dict:
    try:
        return json.loads((path / "owner.json").read_text())
    except (OSError, ValueError):
        return {}


class _Orders:
    """What the test process said, read from stdin on a thread of its own."""

    def __init__(self) -> None:
        self.watched: list[tuple[int, float, bool]] = []
        self.paths: list[Path] = []
        self.containers: list[str] = []
        self.owner: tuple[int, float] | None = None
        self.released = False

    def read(self) -> None:
        for line in sys.stdin:
            command, _, argument = line.strip().partition(" ")
            if command in ("owner", "watch", "group"):
                pid, created = argument.split()
                process = (int(pid), float(created))
                if command == "owner":
                    self.owner = process
                else:
                    self.watched.append((*process, command == "group"))
            elif command == "remove":
                self.paths.append(Path(argument))
            elif command == "container":
                self.containers.append(argument)
            elif command == "release":
                self.released = True
                return


class _Stopped(Exception):
    """The guardian itself was told to stop (SIGTERM, SIGHUP)."""


def _stop(signum: int, frame: object) -> None:
    raise _Stopped


def main() -> None:
    orders = _Orders()
    # A signal to the guardian itself ends the run too (a CI runner cancelling a job, or a
    # `pkill -f` of the run's python, reaches the whole tree at once: seen leaving two control
    # planes behind): it cleans up what it watches before it goes, unless released.
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGHUP, _stop)
    reader = threading.Thread(target=orders.read, daemon=True)
    reader.start()
    try:
        # Until stdin closes — or, for a shared control plane, until its owner is gone, even
        # while the process that started it still lives (an xdist worker outlives a killed
        # controller by a few seconds).
        while reader.is_alive() and not (orders.owner and _gone(orders.owner)):
            reader.join(0.5)
        if orders.released:
            return
        while orders.owner and not _gone(orders.owner):
            time.sleep(0.5)
    except _Stopped:
        reader.join(0.1)  # an order already read (its line taken from the pipe) takes effect
        if orders.released:
            return
    for signum in (signal.SIGTERM, signal.SIGHUP):  # the clean-up runs to its end
        signal.signal(signum, signal.SIG_IGN)
    _clean_up(orders)


def _clean_up(orders: _Orders) -> None:
    records = [_workspace_record(path) for path in orders.paths]
    if any(record.get("kept") for record in records):
        return  # kept on purpose (--keep-cluster, --reuse-cluster): `crdharness down` ends it
    # The test process (or owner) is gone without cleaning up. Newest first, like a teardown.
    for record in records:
        for pid, created in reversed(record.get("children", [])):
            kill_if_same(pid, created)
    for pid, created, group in reversed(orders.watched):
        (kill_group_if_same if group else kill_if_same)(pid, created)
    for name in orders.containers:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, check=False, timeout=60)
    for path in orders.paths:
        shutil.rmtree(path, ignore_errors=True)


if __name__ == "__main__":
    main()
