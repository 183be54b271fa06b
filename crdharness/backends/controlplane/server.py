"""One process of the control plane: its command line, its log, its start, its health check
and its stop. ``EtcdServer`` and ``APIServer`` say only what differs (flags, health)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import requests

from crdharness.errors import HarnessError
from crdharness.polling import WaitTimeout, wait_for
from crdharness.processes import AttachedProcess, ManagedProcess


class ServerProcess:
    name = ""

    def __init__(self, binary: Path, log_path: Path):
        self.binary = binary
        self.log_path = log_path
        self.process: ManagedProcess | None = None

    def args(self) -> list[str]:
        raise NotImplementedError

    def healthy(self) -> bool:
        raise NotImplementedError

    def environment(self) -> dict[str, str] | None:
        """The process's environment: None, the caller's."""
        return None

    def launch(self, started: Callable[[ManagedProcess], None] = lambda process: None):
        """Start the process without waiting for it; ``started`` sees it at once (the
        control plane adopts it into its workspace and guardian before anything can fail)."""
        self.process = ManagedProcess(
            self.name, self.args(), self.log_path, env=self.environment()
        ).start()
        started(self.process)
        return self

    def attach(self, pid: int, created: float):
        """Take the process another run started (known by its identity) as this one's."""
        self.process = AttachedProcess(self.name, pid, created, self.log_path)
        return self

    def wait_healthy(self, timeout: float, what: str = "") -> None:
        """Wait until ``healthy()``; fail at once, with the end of its log, if it exits."""
        wait_until(self, self.healthy, timeout, what or f"{self.name} to be healthy")

    # -- the process -----------------------------------------------------------------------

    @property
    def pid(self) -> int:
        assert self.process is not None, f"{self.name} was never started"
        return self.process.pid

    def running(self) -> bool:
        return self.process is not None and self.process.running()

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()

    def discard(self) -> None:
        """Kill at once: the server's state goes with the workspace."""
        if self.process is not None:
            self.process.discard()

    def log_tail(self, lines: int = 20) -> str:
        return self.process.log_tail(lines) if self.process else "(never started)"


class _Exited(Exception):
    pass


class PortTaken(HarnessError):
    """A server could not bind its port: another process took it after it was chosen."""


def wait_until(process, condition: Callable[[], object], timeout: float, what: str) -> None:
    """Wait for ``condition``; fail at once, with its log, if ``process`` (a ServerProcess or
    a ManagedProcess) exits instead."""

    def ready_or_dead() -> bool:
        if not process.running():
            raise _Exited()
        return bool(condition())

    try:
        # Not listening yet, or not answering yet: wait; an exit ends it at once.
        retry = (requests.RequestException, OSError, ValueError)
        wait_for(ready_or_dead, timeout, what, interval=0.05, retry=retry)
    except _Exited:
        message = exit_message(process)
        raise (PortTaken if "address already in use" in message else HarnessError)(
            message
        ) from None
    except WaitTimeout as exc:
        raise HarnessError(f"{exc}; log: {process.log_path}") from None


def exit_message(process) -> str:
    tail = process.log_tail(40)
    if "address already in use" in tail:
        return (
            f"{process.name} could not bind its port (address already in use): another "
            "process took it; run again, or free the port"
        )
    last = " | ".join(tail.strip().splitlines()[-3:]) or "(empty log)"
    if isinstance(process, ServerProcess):
        process = process.process
    popen = getattr(process, "popen", None)  # None for a process another run started
    code = popen.returncode if popen is not None else "unknown"
    return f"{process.name} exited with code {code}; its log ends: {last}"
