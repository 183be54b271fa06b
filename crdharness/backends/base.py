"""What every backend is: a ``Backend`` starts clusters from ``Settings``, and the
``Running`` it returns stops them or keeps them running."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from crdharness.cluster import Cluster
from crdharness.progress import Reporter


@dataclass
class Settings:
    backend: str = "local"
    k8s_version: str | None = None
    assets_dir: str | None = None
    watch_cache: bool = True
    apiserver_port: int | None = None
    etcd_port: int | None = None
    extra_apiserver_flags: list[str] = field(default_factory=list)  # local backend only
    # Local backend: keep the control plane for the next run and reuse a matching kept one.
    reuse: bool = False
    # Local backend under xdist: share the control plane called ``shared_key`` with the
    # run's other workers through ``shared_dir``; ``owner`` (the run's controller) ends it.
    shared_dir: Path | None = None
    shared_key: str = "session"
    owner: tuple[int, float] | None = None


@dataclass
class Running:
    cluster: Cluster
    stop: Callable[[], None]
    keep: Callable[[], str]  # leave it running; returns how to reach it


@dataclass(frozen=True)
class Backend:
    name: str  # as --cluster names it
    capabilities: frozenset[str]  # what every cluster it starts can do
    start: Callable[[Settings, Reporter], Running]
