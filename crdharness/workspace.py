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

from crdharness.processes import identity, is_alive, kill_if_same

PREFIX = "crdharness-"
OWNER_FILE = "owner.json"


class Workspace:
    def __init__(self, base: Path | None = None):
        self.path = Path(tempfile.mkdtemp(prefix=PREFIX, dir=base))
        me = identity(os.getpid())
        self._record = {"owner": list(me) if me else None, "children": []}
        self._save()

    def _save(self) -> None:
        (self.path / OWNER_FILE).write_text(json.dumps(self._record))

    def adopt(self, pid: int) -> None:
        """Remember child ``pid`` so a later sweep can stop it if this run dies."""
        child = identity(pid)
        if child:
            self._record["children"].append(list(child))
            self._save()

    def keep(self) -> None:
        """Mark this workspace as kept on purpose (``--keep-cluster``): sweeps leave it alone."""
        self._record["kept"] = True
        self._save()

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
        if owner and is_alive(owner[0]) and identity(owner[0]) == tuple(owner):
            continue
        for pid, created in reversed(record.get("children", [])):
            kill_if_same(pid, created)
        shutil.rmtree(candidate, ignore_errors=True)
        removed.append(candidate)
    return removed


def stop_kept(path: Path) -> None:
    """Stop the processes of a workspace kept by ``--keep-cluster``, and remove it."""
    record = json.loads((path / OWNER_FILE).read_text())
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
