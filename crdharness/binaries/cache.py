"""The per-user binary cache: where it is, one lock per entry, atomic installs.

Layout (one directory per component and version, like envtest's asset directories)::

    ~/.cache/crdharness/
        kubernetes-v1.37.2/{kube-apiserver,kubectl}
        etcd-v3.6.16/etcd
        locks/<entry>.lock

An entry appears by ``os.replace`` of a fully written sibling directory, so an interrupted
build or download never leaves a half binary where a later run would use it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

from crdharness.progress import Reporter, to_stderr
from crdharness.untimed import untimed

ENV_VAR = "CRDHARNESS_CACHE"
# A cold build of kube-apiserver takes minutes (many more on a loaded machine); a second run
# waits for it rather than building the same thing twice, for as long as it takes: the lock
# is the kernel's (fcntl), so it is released when its holder dies and a wait cannot outlive
# a crashed run. It says every so often what it waits for.
LOCK_NOTICE_SECONDS = 60
# Entries of an older source digest no run used for this long are removed (``prune_unused``).
UNUSED_DAYS = 14.0


def cache_root() -> Path:
    if os.environ.get(ENV_VAR):
        return Path(os.environ[ENV_VAR]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "crdharness"


def entry_dir(name: str) -> Path:
    return cache_root() / name


@contextmanager
def locked(name: str, report: Reporter = to_stderr) -> Iterator[None]:
    """Hold the lock of cache entry ``name``; two runs that start at once take turns."""
    locks = cache_root() / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(locks / f"{name}.lock"))
    waited = 0
    with untimed(f"the cache entry {name}"):
        while True:
            try:
                lock.acquire(timeout=LOCK_NOTICE_SECONDS)
                break
            except Timeout:
                waited += LOCK_NOTICE_SECONDS
                report(
                    f"{name}: another run is building it (lock {lock.lock_file}); waiting "
                    f"({waited // 60} min so far)"
                )
    try:
        yield
    finally:
        lock.release()


@contextmanager
def staging_dir(name: str) -> Iterator[Path]:
    """A scratch directory beside entry ``name`` (same file system, so the install is atomic)."""
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{name}.partial-", dir=root))
    try:
        yield scratch
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def install(name: str, built: Path) -> Path:
    """Atomically make directory ``built`` the cache entry ``name`` (replacing a bad one)."""
    target = entry_dir(name)
    if target.exists():
        # Rename the old entry out of the way first: os.replace cannot replace a non-empty dir.
        graveyard = target.with_name(f".{name}.old-{os.getpid()}")
        os.replace(target, graveyard)
        shutil.rmtree(graveyard, ignore_errors=True)
    os.replace(built, target)
    return target


def mark_used(name: str) -> None:
    """Note that entry ``name`` was used now (its directory's mtime), for ``prune_unused``."""
    # a read-only cache still serves; its entries are only never pruned
    with contextlib.suppress(OSError):
        os.utime(entry_dir(name))


def prune_unused(prefix: str, keep: str, days: float = UNUSED_DAYS) -> list[str]:
    """Remove the entries named ``prefix``* other than ``keep`` that no run used for ``days``:
    each change of a source-digested entry (the validator) builds a new one beside the old.
    A binary still running keeps working (Linux frees it when it exits); a checkout that
    needs an entry pruned here builds it again. Returns the names removed."""
    root = cache_root()
    cutoff = time.time() - days * 86400
    removed = []
    for entry in sorted(root.glob(f"{prefix}*")) if root.is_dir() else []:
        if entry.name == keep or not entry.is_dir() or entry.stat().st_mtime > cutoff:
            continue
        shutil.rmtree(entry, ignore_errors=True)
        removed.append(entry.name)
    return removed
