"""A run's temporary directory, and the sweep that removes those of dead runs.

Each workspace records who owns it and which processes it started (``owner.json``). A run
that starts sweeps the workspaces whose owner is gone — a belt to the guardian's braces, for
the rare case where both the test process and its guardian were killed.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from filelock import FileLock

from crdharness.processes import identity, is_alive, is_same, kill_if_same

PREFIX = "crdharness-"
OWNER_FILE = "owner.json"


class Workspace:
    def __init__(self, base: Path | None = None, owner: tuple[int, float] | None = None):
        """``owner``: the process whose end ends the workspace (default: this one; an xdist
        worker names the run's controller, which outlives it)."""
        self.path = Path(tempfile.mkdtemp(prefix=PREFIX, dir=base))
        me = owner or identity(os.getpid())
        self._write({"owner": list(me) if me else None, "children": []})

    @classmethod
    def open(cls, path: Path) -> Workspace:
        """A workspace another process created (an xdist worker, or a kept cluster)."""
        if not (path / OWNER_FILE).is_file():
            raise FileNotFoundError(f"{path} is not a crdharness workspace")
        opened = cls.__new__(cls)
        opened.path = path
        return opened

    # Several processes may add children to one workspace: read-modify-write under a lock.
    def _lock(self) -> FileLock:
        return FileLock(str(self.path / (OWNER_FILE + ".lock")))

    def _read(self) -> dict:
        return json.loads((self.path / OWNER_FILE).read_text())

    def _write(self, record: dict) -> None:
        scratch = self.path / (OWNER_FILE + f".{os.getpid()}")
        scratch.write_text(json.dumps(record))
        scratch.replace(self.path / OWNER_FILE)  # readers never see half a file

    def adopt(self, pid: int) -> None:
        """Remember child ``pid`` so a later sweep can stop it if this run dies."""
        child = identity(pid)
        if child:
            with self._lock():
                record = self._read()
                record["children"].append(list(child))
                self._write(record)

    def keep(self) -> None:
        """Mark this workspace as kept on purpose (``--keep-cluster``): sweeps leave it alone."""
        with self._lock():
            self._write({**self._read(), "kept": True})

    @property
    def kept(self) -> bool:
        return bool(self._read().get("kept"))

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def sweep_stale(base: Path | None = None) -> list[Path]:
    """Stop the processes and remove the workspaces of runs that are no longer alive."""
    removed = []
    for candidate in Path(base or tempfile.gettempdir()).glob(f"{PREFIX}*"):
        try:
            record = json.loads((candidate / OWNER_FILE).read_text())
        except (OSError, ValueError):
            continue  # not ours, or still being created
        owner = record.get("owner")
        if record.get("kept"):
            continue
        if owner and is_alive(owner[0]) and is_same(*owner):
            continue
        for pid, created in reversed(record.get("children", [])):
            kill_if_same(pid, created)
        shutil.rmtree(candidate, ignore_errors=True)
        removed.append(candidate)
    return removed


def stop_kept(path: Path) -> None:
    """Stop the processes of a workspace (kept by ``--keep-cluster``, or shared by xdist
    workers), newest first, and remove it."""
    try:
        record = json.loads((path / OWNER_FILE).read_text())
    except (OSError, ValueError):
        record = {}
    for pid, created in reversed(record.get("children", [])):
        kill_if_same(pid, created)
    shutil.rmtree(path, ignore_errors=True)


def kept_workspaces(base: Path | None = None) -> list[Path]:
    found = []
    for candidate in Path(base or tempfile.gettempdir()).glob(f"{PREFIX}*"):
        try:
            if json.loads((candidate / OWNER_FILE).read_text()).get("kept"):
                found.append(candidate)
        except (OSError, ValueError):
            continue
    return found
