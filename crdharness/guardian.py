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
import subprocess
import sys
import time
from pathlib import Path

from crdharness.processes import identity, is_alive, kill_group_if_same, kill_if_same


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


def _wait_until_gone(pid: int, created: float) -> None:
    while identity(pid) == (pid, created) and is_alive(pid):
        time.sleep(0.5)


def _workspace_record(path: Path) -> dict:
    try:
        return json.loads((path / "owner.json").read_text())
    except (OSError, ValueError):
        return {}


def main() -> None:
    watched: list[tuple[int, float, bool]] = []
    paths: list[Path] = []
    containers: list[str] = []
    owner: tuple[int, float] | None = None
    for line in sys.stdin:
        command, _, argument = line.strip().partition(" ")
        if command == "owner":
            pid, created = argument.split()
            owner = (int(pid), float(created))
        elif command == "watch":
            pid, created = argument.split()
            watched.append((int(pid), float(created), False))
        elif command == "group":
            pid, created = argument.split()
            watched.append((int(pid), float(created), True))
        elif command == "remove":
            paths.append(Path(argument))
        elif command == "container":
            containers.append(argument)
        elif command == "release":
            return
    if owner is not None:
        _wait_until_gone(*owner)
    records = [_workspace_record(path) for path in paths]
    if any(record.get("kept") for record in records):
        return  # kept on purpose (--keep-cluster, --reuse-cluster): `crdharness down` ends it
    # The test process (or owner) is gone without cleaning up. Newest first, like a teardown.
    for record in records:
        for pid, created in reversed(record.get("children", [])):
            kill_if_same(pid, created)
    for pid, created, group in reversed(watched):
        (kill_group_if_same if group else kill_if_same)(pid, created)
    for name in containers:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, check=False, timeout=60)
    for path in paths:
        shutil.rmtree(path, ignore_errors=True)


if __name__ == "__main__":
    main()
