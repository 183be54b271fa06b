"""Child processes a test starts die with the process that started them."""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def dies_with_parent() -> None:
    """``preexec_fn``: the child gets SIGTERM when the test process that started it dies.

    An xdist worker stopped mid-test (SIGTERM, SIGKILL, a timeout) would otherwise leave a
    gate or an inner pytest session running on its own, holding its kube-apiserver, etcd and
    webhook for as long as its work takes (seen: an hour). On SIGTERM those stop their own
    children in order. Only the tests use this: the harness itself must be able to leave a
    cluster running (``--keep-cluster``)."""
    if sys.platform != "linux":
        return
    parent = os.getppid()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # the parent died before prctl took effect
        os.kill(os.getpid(), signal.SIGTERM)
