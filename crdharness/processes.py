"""Child processes that are always stopped.

Two layers make sure no kube-apiserver, etcd or webhook outlives the run that started it:

1. ``ManagedProcess.stop()``, called by fixture teardown (passing or failing session, Ctrl-C,
   and SIGTERM, which the pytest plugin turns into an ordinary interrupt);
2. the ``guardian`` process, which notices at once when the test process dies without
   cleaning up (SIGKILL) and stops its children, and the stale-workspace sweep at the next
   start, for the case where the guardian was killed too.

There is deliberately no ``PR_SET_PDEATHSIG``: ``--keep-cluster`` must be able to leave the
processes running after the test process exits.

Children run in their own session so a Ctrl-C in the terminal reaches only the test process,
which then stops them in order (API server before etcd) instead of all dying at once.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import psutil


def identity(pid: int) -> tuple[int, float] | None:
    """(pid, start time): a pid alone may be reused by an unrelated process."""
    try:
        return pid, started_at(pid)
    except psutil.Error:
        return None


def started_at(pid: int) -> float:
    """When ``pid`` started, in seconds since boot on Linux. Not psutil's ``create_time()``:
    that adds the boot time, which the kernel derives from the wall clock, so a clock step
    (NTP after a VM resumes) moves every process's start by whole seconds, and another
    process's sweep then took live runs for dead ones and deleted their workspaces."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError as gone:
        raise psutil.NoSuchProcess(pid) from gone
    except OSError:
        return psutil.Process(pid).create_time()  # no procfs (macOS): the wall-clock time
    # Field 22 counts clock ticks since boot; the command name before it may hold spaces.
    ticks = int(stat.rpartition(")")[2].split()[19])
    return ticks / os.sysconf("SC_CLK_TCK")


def is_same(pid: int, created: float) -> bool:
    """True if ``pid`` is still the process that started at ``created``."""
    try:
        return abs(started_at(pid) - created) <= 0.01
    except psutil.Error:
        return False


def kill_if_same(pid: int, created: float, grace: float = 5.0, polite: bool = True) -> None:
    """SIGTERM, then SIGKILL (``polite=False``: SIGKILL at once), process ``pid`` if it is
    still the one that started at ``created``."""
    try:
        process = psutil.Process(pid)
        if not is_same(pid, created):
            return
        if polite:
            process.terminate()
        if not polite or not _ended(process, grace):
            process.kill()
            _ended(process, grace)
        if process.ppid() == os.getpid():
            process.wait(grace)  # our own child: reap it
    except psutil.Error:
        return


def _ended(process: psutil.Process, timeout: float) -> bool:
    """True once ``process`` is gone or a zombie. A zombie has stopped running; reaping it is
    its parent's job — for an orphan (a process another worker or run started), PID 1's, which
    in some containers takes seconds — so waiting for it to vanish would wait for nothing."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if process.status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)


class ManagedProcess:
    """One long-running child whose output goes to a log file."""

    def __init__(
        self,
        name: str,
        args: Sequence[str],
        log_path: Path,
        env=None,
        cwd: Path | None = None,
        whole_group: bool = False,
    ):
        self.name = name
        self.cwd = cwd
        # Stop every process of its group, not only the one started (``go run``, ``sh -c``).
        self.whole_group = whole_group
        self.args = [str(a) for a in args]
        self.log_path = log_path
        self.env = env
        self.popen: subprocess.Popen | None = None

    def start(self) -> ManagedProcess:
        with self.log_path.open("ab") as log:
            self.popen = subprocess.Popen(
                self.args,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.env,
                cwd=self.cwd,
                start_new_session=True,
            )
        return self

    @property
    def pid(self) -> int:
        assert self.popen is not None, f"{self.name} was never started"
        return self.popen.pid

    def running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def log_tail(self, lines: int = 20) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, grace: float = 10.0) -> None:
        """Stop politely, then firmly; safe to call twice or on a process that already exited."""
        if self.popen is None:
            return
        if self.whole_group:
            created = identity(self.popen.pid)
            kill_group_if_same(self.popen.pid, created[1] if created else 0.0, grace)
            self.popen.poll()
            return
        if self.popen.poll() is not None:
            return
        self.popen.terminate()
        try:
            self.popen.wait(grace)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait(grace)

    def discard(self, reap: float = 10.0) -> None:
        """Kill at once (SIGKILL) and reap: for a server whose state is thrown away with it,
        where a polite stop only waits (kube-apiserver's graceful shutdown takes 1-3 s)."""
        if self.popen is None or self.whole_group:
            self.stop()
            return
        if self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait(reap)


class AttachedProcess(ManagedProcess):
    """A process another run (or another xdist worker) started, known by its identity: it can
    be watched and stopped, but not waited for as a child."""

    def __init__(self, name: str, pid: int, created: float, log_path: Path):
        super().__init__(name, [], log_path)
        self._identity = (pid, created)

    @property
    def pid(self) -> int:
        return self._identity[0]

    def running(self) -> bool:
        return identity(self._identity[0]) == self._identity and is_alive(self._identity[0])

    def stop(self, grace: float = 10.0) -> None:
        kill_if_same(*self._identity, grace=grace)

    def discard(self, reap: float = 10.0) -> None:
        kill_if_same(*self._identity, grace=reap, polite=False)


def command_line(pid: int) -> list[str] | None:
    try:
        return psutil.Process(pid).cmdline()
    except psutil.Error:
        return None


def port_holder(port: int) -> str | None:
    """Who listens on TCP ``port`` (for error messages), or None if nobody we can see."""
    try:
        connections = psutil.net_connections(kind="tcp")
    except psutil.Error:
        return None
    for conn in connections:
        if conn.laddr and conn.laddr.port == port and conn.status == psutil.CONN_LISTEN:
            if conn.pid:
                try:
                    return f"pid {conn.pid} ({psutil.Process(conn.pid).name()})"
                except psutil.Error:
                    return f"pid {conn.pid}"
            return "another process"
    return None


def kill_group_if_same(pid: int, created: float, grace: float = 5.0) -> None:
    """Like ``kill_if_same``, for the whole process group ``pid`` leads: a user's command
    such as ``go run`` forks the program it builds, and that child must stop too."""
    import os
    import signal

    if psutil.pid_exists(pid) and not is_same(pid, created):
        return  # the pid is another process now; a gone leader's group may still run
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, grace)):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        except PermissionError:
            return
        members = [p for p in psutil.process_iter() if _group_of(p) == pid]
        _, alive = psutil.wait_procs(members, timeout=wait)
        if not alive:
            return


def _group_of(process: psutil.Process) -> int | None:
    import os

    try:
        return os.getpgid(process.pid)
    except OSError:
        return None


def is_alive(pid: int) -> bool:
    """True if ``pid`` runs (a zombie waiting to be reaped has stopped running)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
