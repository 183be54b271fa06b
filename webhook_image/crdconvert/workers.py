"""Several server processes on one port: one Python process uses one core, and the API
server sends many small reviews at once (every read, write and LIST of a converted CRD).

The parent binds the listening socket (so a busy port is one error, before anything forks),
forks the workers, and supervises them: SIGTERM or SIGINT stops them all; a worker that dies
on its own stops the rest, and the parent exits non-zero, so whoever runs the webhook sees it
fail. Workers die with the parent (PR_SET_PDEATHSIG) even when it is killed outright.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import sys
from collections.abc import Callable

PR_SET_PDEATHSIG = 1


def usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise SystemExit(f"crdconvert: cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _die_with_parent() -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass  # not Linux: the parent's SIGTERM handler still stops the workers


def run(count: int, sock: socket.socket, serve: Callable[[socket.socket], None], log) -> int:
    """Run ``serve(sock)`` in ``count`` forked workers until told to stop; the exit status."""
    parent = os.getpid()
    workers: dict[int, int] = {}
    for number in range(count):
        pid = os.fork()
        if pid == 0:
            _die_with_parent()
            if os.getppid() != parent:  # the parent died before the line above
                os._exit(1)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            try:
                serve(sock)
            except BaseException as exc:  # report, then leave at once
                print(f"crdconvert: worker {number} failed: {exc!r}", file=sys.stderr, flush=True)
                os._exit(1)
            os._exit(0)
        workers[pid] = number
    sock.close()  # the workers hold it now

    stopping = False

    def stop(signum, frame) -> None:
        nonlocal stopping
        stopping = True
        for pid in workers:
            _signal(pid, signal.SIGTERM)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    status = 0
    while workers:
        try:
            pid, code = os.wait()
        except ChildProcessError:
            break
        number = workers.pop(pid, None)
        if number is None:
            continue
        if not stopping:
            log(f"worker {number} exited unexpectedly ({_describe(code)}); stopping the others")
            status = 1
            stop(None, None)
    return status


def _signal(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)


def _describe(code: int) -> str:
    if os.WIFSIGNALED(code):
        return f"signal {os.WTERMSIG(code)}"
    return f"status {os.WEXITSTATUS(code)}"
