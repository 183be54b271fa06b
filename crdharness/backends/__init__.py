"""Cluster backends: ``--cluster=local|kind|existing`` turned into a running ``Cluster``.

Each backend is one module with one ``Backend`` object: its name, the capabilities its
clusters declare (``crdharness.cluster``: etcd, control-planes, host-loopback, image-loader,
service-routing), and ``start(settings, report) -> Running``. A new backend (another
local-cluster tool, say) is a new module here and one line in ``REGISTRY``; the plugin, the
gate, the bundle and the tests ask its clusters for capabilities, never for its name.
"""

from __future__ import annotations

from crdharness.backends import existing, kind, local
from crdharness.backends.base import Backend, Running, Settings
from crdharness.backends.local import local_cluster, start_control_plane
from crdharness.errors import HarnessError
from crdharness.progress import Reporter

REGISTRY: dict[str, Backend] = {b.name: b for b in (local.BACKEND, kind.BACKEND, existing.BACKEND)}
BACKENDS = tuple(REGISTRY)  # the --cluster choices


def start(settings: Settings, report: Reporter) -> Running:
    backend = REGISTRY.get(settings.backend)
    if backend is None:
        raise HarnessError(
            f"unknown --cluster={settings.backend!r}; choose one of {', '.join(BACKENDS)}"
        )
    return backend.start(settings, report)


__all__ = [
    "BACKENDS",
    "REGISTRY",
    "Backend",
    "Running",
    "Settings",
    "local_cluster",
    "start",
    "start_control_plane",
]
