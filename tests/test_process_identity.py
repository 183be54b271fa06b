"""A process's identity survives a step of the wall clock.

A run records its own and its children's (pid, start time); another run's sweep compares them
to decide whether the owner is still alive. psutil's ``create_time()`` adds the boot time, which
the kernel derives from the wall clock: after a clock step (NTP once a VM resumes) every start
time moved by whole seconds, live runs looked dead, and their workspaces were deleted under them.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from crdharness import processes
from crdharness.workspace import Workspace, sweep_stale


@pytest.fixture
def clock_stepped(monkeypatch: pytest.MonkeyPatch) -> None:
    """psutil's boot time moves 3 s, as it does when the wall clock is stepped."""
    stepped = psutil.boot_time() + 3.0
    monkeypatch.setattr(psutil._psplatform, "boot_time", lambda: stepped)
    monkeypatch.setattr(psutil, "boot_time", lambda: stepped)


def test_live_run_keeps_its_workspace_across_a_clock_step(tmp_path: Path, request) -> None:
    workspace = Workspace(base=tmp_path)  # owned by this (live) process, identity recorded now
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        workspace.adopt(child.pid)
        request.getfixturevalue("clock_stepped")
        assert sweep_stale(tmp_path) == []
        assert workspace.path.is_dir(), "a live run's workspace was swept after a clock step"
        assert child.poll() is None, "a live run's child was killed after a clock step"
    finally:
        child.kill()
        child.wait()


def test_dead_runs_workspace_is_swept_and_its_child_stopped(tmp_path: Path) -> None:
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    owner = (ended.pid, processes.started_at(ended.pid) if psutil.pid_exists(ended.pid) else 1.0)
    workspace = Workspace(base=tmp_path, owner=owner)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        workspace.adopt(child.pid)
        assert sweep_stale(tmp_path) == [workspace.path]
        assert child.wait(30) is not None  # stopped by the sweep (SIGTERM)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_start_time_counts_from_boot_not_from_the_wall_clock(request) -> None:
    me = processes.identity(psutil.Process().pid)
    request.getfixturevalue("clock_stepped")
    assert processes.identity(psutil.Process().pid) == me
    assert processes.is_same(*me)  # type: ignore[misc]
