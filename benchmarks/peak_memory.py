"""The peak resident memory of a process and everything it starts, by kind of process (the
gate's Python, kube-apiserver, etcd, a webhook), sampled while it runs, and the CPU seconds
each kind used (as last sampled: what a process uses in its last interval is missed). A
benchmark's figure, never a test's: sampling misses peaks shorter than its interval. On a
machine other work loads, CPU seconds compare between runs where wall times do not."""

from __future__ import annotations

import threading
from collections import defaultdict

import psutil

INTERVAL = 0.25  # seconds between samples
MIB = 1024 * 1024


class PeakMemory:
    """Started with the process's pid; ``stop()`` returns the peaks in MiB: each kind of
    process's, and the whole tree's at one moment."""

    def __init__(self, pid: int) -> None:
        self._root = psutil.Process(pid)
        self._peaks: defaultdict[str, int] = defaultdict(int)
        self._cpu: dict[int, tuple[str, float]] = {}  # pid -> (kind, CPU seconds so far)
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._done.wait(INTERVAL):
            try:
                tree = [self._root, *self._root.children(recursive=True)]
            except psutil.Error:
                return  # the process ended
            now: defaultdict[str, int] = defaultdict(int)
            for process in tree:
                try:
                    kind = _kind(process.name())
                    now[kind] += process.memory_info().rss
                    used = process.cpu_times()
                    self._cpu[process.pid] = (kind, used.user + used.system)
                except psutil.Error:
                    continue  # ended between the listing and the reading
            for kind, rss in now.items():
                self._peaks[kind] = max(self._peaks[kind], rss)
            self._peaks["whole tree"] = max(self._peaks["whole tree"], sum(now.values()))

    def stop(self) -> dict[str, float]:
        self._done.set()
        self._thread.join()
        return {kind: round(rss / MIB, 1) for kind, rss in sorted(self._peaks.items())}

    def cpu_seconds(self) -> dict[str, float]:
        """CPU seconds (user and system) per kind of process, once stopped."""
        used: defaultdict[str, float] = defaultdict(float)
        for kind, seconds in self._cpu.values():
            used[kind] += seconds
        return {kind: round(seconds, 1) for kind, seconds in sorted(used.items())}


def _kind(name: str) -> str:
    for kind in ("kube-apiserver", "etcd", "python"):
        if kind in name:
            return kind
    return "other"
