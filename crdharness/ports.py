"""Loopback ports: pick a free one, or explain who holds a busy one."""

from __future__ import annotations

import socket

from crdharness.errors import HarnessError
from crdharness.processes import port_holder

LOOPBACK = "127.0.0.1"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return sock.getsockname()[1]


def claim(port: int | None, what: str, option: str) -> int:
    """``port`` if it is free (a free one if None); a clear error if it is taken."""
    if port is None:
        return free_port()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((LOOPBACK, port))
        except OSError as exc:
            holder = port_holder(port) or "another process"
            raise HarnessError(
                f"port {port} on {LOOPBACK}, wanted for {what}, is busy (held by {holder}): "
                f"stop that process or pick another port with {option} (or omit it for a free one)"
            ) from exc
    return port


def hold(port: int) -> socket.socket:
    """Bind ``port`` without listening: connections to it are refused, and no other process
    can take it until the socket is closed."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind((LOOPBACK, port))
    except OSError as exc:
        sock.close()
        raise HarnessError(f"port {port} was taken as soon as it was freed: {exc}") from exc
    return sock
