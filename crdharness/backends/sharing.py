"""One local control plane for several test processes.

- **xdist workers of one run** share the session's control plane (and the one without watch
  cache) instead of each starting their own: tests isolate themselves by API group, so they
  can run side by side on one API server. The first worker that needs it starts it under a
  file lock and the others attach. The run's controller process owns it: it stops it when the
  session ends (``stop_shared``), and a guardian stops it if the controller dies first.
- **Successive runs** (``--reuse-cluster``, for the edit-test loop) reuse a kept control plane
  whose binaries, version and flags match this run's — checked on the running processes, not
  assumed — and keep it again at the end; ``python -m crdharness down`` stops it.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from filelock import FileLock

from crdharness import workspace
from crdharness.backends.controlplane import PLANE_FILE, ControlPlane, ControlPlaneOptions
from crdharness.binaries import cache
from crdharness.binaries.assets import Assets
from crdharness.binaries.versions import Release
from crdharness.errors import HarnessError
from crdharness.progress import Reporter


def attach_or_start(
    directory: Path,
    key: str,
    binaries: Assets,
    release: Release,
    options: ControlPlaneOptions,
    owner: tuple[int, float],
    report: Reporter,
) -> ControlPlane:
    """The control plane called ``key`` in the run's shared ``directory``: attached to if a
    sibling started it, else started here on behalf of ``owner`` (the run's controller)."""
    directory.mkdir(parents=True, exist_ok=True)
    pointer = directory / f"{key}.workspace"
    with FileLock(str(directory / f"{key}.lock")):
        if pointer.exists():
            plane = ControlPlane.attach(
                Path(pointer.read_text()), binaries, release, options, report
            )
            report(f"attached to the run's shared control plane ({key}) at {plane.server_url}")
            return plane
        plane = ControlPlane(binaries, release, options, report, owner=owner).start()
        pointer.write_text(str(plane.path))
        return plane


def shared_workspaces(directory: Path) -> list[Path]:
    """The workspaces of the control planes the run's workers shared."""
    return [Path(p.read_text()) for p in sorted(directory.glob("*.workspace"))]


def stop_shared(directory: Path) -> list[Path]:
    """End of the run (the controller): stop the shared control planes, side by side (each
    kube-apiserver takes about a second to shut down)."""
    running = [path for path in shared_workspaces(directory) if path.exists()]
    with ThreadPoolExecutor(max_workers=max(1, len(running))) as pool:
        list(pool.map(workspace.stop_kept, running))
    return running


def keep_shared(directory: Path) -> list[Path]:
    """End of the run with ``--keep-cluster``: leave the shared control planes running."""
    kept = []
    for path in shared_workspaces(directory):
        if path.exists():
            workspace.Workspace.open(path).keep()
            kept.append(path)
    return kept


def reuse_or_start(
    binaries: Assets, release: Release, options: ControlPlaneOptions, report: Reporter
) -> ControlPlane:
    """``--reuse-cluster``: a kept control plane that matches this run, or a new one, kept."""
    locks = cache.cache_root() / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    with FileLock(str(locks / "reuse-cluster.lock")):
        unsuitable = []
        for path in workspace.kept_workspaces():
            if not (path / PLANE_FILE).is_file():
                continue  # kept by --keep-cluster before planes had records
            try:
                plane = ControlPlane.attach(path, binaries, release, options, report)
            except HarnessError as exc:
                unsuitable.append(f"{path.name}: {exc}")
                continue
            report(
                f"reusing the control plane kept in {path} ({release.git_version} at "
                f"{plane.server_url}; binaries, flags and readiness checked)"
            )
            return plane
        why = f" (kept ones differ: {'; '.join(unsuitable)})" if unsuitable else ""
        report(f"no kept control plane to reuse{why}; starting one and keeping it")
        plane = ControlPlane(binaries, release, options, report).start()
        plane.keep()
        return plane
