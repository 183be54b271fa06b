"""Several server processes on one port: one Python process uses one core, and the API
server sends many small reviews at once (every read, write and LIST of a converted CRD).

The parent binds the listening socket (so a busy port is one error, before anything forks),
forks the workers, hands each accepted connection to the next worker, and supervises them:
SIGTERM or SIGINT stops them all; a worker that dies on its own stops the rest, and the
parent exits non-zero, so whoever runs the webhook sees it fail. Workers die with the parent
(PR_SET_PDEATHSIG) even when it is killed outright.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import selectors
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
    """Run ``serve(channel)`` in ``count`` forked workers until told to stop; the exit status.

    The parent accepts the connections and hands them to the workers in turn, each over its
    ``channel`` (a Unix socket; see ``receive_connections``). Workers accepting on the shared
    socket themselves took connections greedily: one often took all four of a benchmark's,
    and the other core stayed idle."""
    parent = os.getpid()
    workers: dict[int, int] = {}
    channels: list[socket.socket] = []
    for number in range(count):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            _die_with_parent()
            if os.getppid() != parent:  # the parent died before the line above
                os._exit(1)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            for other in (sock, ours, *channels):
                other.close()
            try:
                serve(theirs)
            except BaseException as exc:  # report, then leave at once
                print(f"crdconvert: worker {number} failed: {exc!r}", file=sys.stderr, flush=True)
                os._exit(1)
            os._exit(0)
        theirs.close()
        channels.append(ours)
        workers[pid] = number

    stopping = False

    def stop(signum, frame) -> None:
        nonlocal stopping
        stopping = True
        for pid in workers:
            _signal(pid, signal.SIGTERM)

    # Signals wake the select() below through this pipe; SIGCHLD says a worker ended.
    wakeup_read, wakeup_write = os.pipe()
    os.set_blocking(wakeup_read, False)
    os.set_blocking(wakeup_write, False)
    signal.set_wakeup_fd(wakeup_write)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    sock.setblocking(False)
    events = selectors.DefaultSelector()
    events.register(sock, selectors.EVENT_READ)
    events.register(wakeup_read, selectors.EVENT_READ)
    status, turn = 0, 0
    while workers:
        for key, _ in events.select():
            if key.fileobj is sock:
                turn = _hand_over(sock, channels, turn)
            else:
                with contextlib.suppress(BlockingIOError):
                    os.read(wakeup_read, 512)
        if stopping and sock.fileno() != -1:
            events.unregister(sock)
            sock.close()  # no new connections; the workers finish theirs
        for pid, code in _ended_children():
            ended = workers.pop(pid, None)
            if ended is not None and not stopping:
                log(f"worker {ended} exited unexpectedly ({_describe(code)}); stopping the others")
                status = 1
                stop(None, None)
    return status


def _hand_over(sock: socket.socket, channels: list[socket.socket], turn: int) -> int:
    """Accept what is waiting and give each connection to the next worker; the next turn."""
    while True:
        try:
            connection, _ = sock.accept()
        except (BlockingIOError, InterruptedError):
            return turn
        except OSError:  # e.g. out of file descriptors: it stays queued for the next round
            return turn
        # Once sent, the worker has its own copy of the descriptor; a worker that is gone
        # (the send fails) is noticed through SIGCHLD.
        with connection, contextlib.suppress(OSError):
            socket.send_fds(channels[turn], [b"c"], [connection.fileno()])
        turn = (turn + 1) % len(channels)


def _ended_children():
    while True:
        try:
            pid, code = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        yield pid, code


def _signal(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)


def _describe(code: int) -> str:
    if os.WIFSIGNALED(code):
        return f"signal {os.WTERMSIG(code)}"
    return f"status {os.WEXITSTATUS(code)}"


def receive_connections(channel: socket.socket, accept: Callable[[socket.socket], None]) -> bool:
    """A worker's side of ``run``: pass each connection waiting on ``channel`` to ``accept``;
    False once the parent has closed the channel."""
    while True:
        try:
            message, descriptors, _, _ = socket.recv_fds(channel, 1, 8)
        except (BlockingIOError, InterruptedError):
            return True
        if not message and not descriptors:
            return False
        for descriptor in descriptors:
            accept(socket.socket(fileno=descriptor))
