"""The failure bundle: everything needed to understand a failed run, written only then.

Contents: the control-plane logs, the webhooks' logs and review records, every CRD and every
custom resource (YAML), the etcd keys of each CRD's objects with their stored versions, and
the backend's own logs where it has them (``kind export logs``). The path is printed at the
end of the run.
"""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import yaml

from crdharness import paths
from crdharness.cluster import Cluster


def write(
    cluster: Cluster, extra_files: list[Path], root: Path | None = None, objects: bool = True
) -> Path:
    """The bundle of a failed run; without ``objects``, no custom resource is written (their
    stored versions in etcd are, without their values)."""
    bundle = _new_directory(
        root or paths.artifacts(), f"failure-bundle-{time.strftime('%Y%m%d-%H%M%S')}"
    )
    for name, log in cluster.logs.items():
        if log.exists():
            shutil.copy(log, bundle / f"{name}.log")
    for path in extra_files:
        if path.exists():
            shutil.copy(path, bundle / f"{path.parent.name}-{path.name}")
    _write_cluster_state(cluster, bundle, objects)
    if cluster.export_logs is not None:
        cluster.export_logs(bundle / "cluster-logs")
    return bundle


CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
LIST_PAGE = 500  # objects per list request, as kubectl pages them


class _Unread(Exception):
    """A list request the API server did not answer with a page: what it said instead."""


def _write_cluster_state(cluster: Cluster, bundle: Path, with_objects: bool = True) -> None:
    """crds.yaml, objects.yaml and etcd-stored-versions.yaml, written CRD by CRD: a
    provider's thousand CRDs (66 MB of YAML) are never all in memory at once."""
    files = ["crds.yaml", "etcd-stored-versions.yaml", *(["objects.yaml"] if with_objects else [])]
    with contextlib.ExitStack() as stack:
        out = {name: stack.enter_context((bundle / name).open("w")) for name in files}
        try:
            for crd in _pages(cluster, CRDS):
                _write_crd(cluster, crd, out)
        except (_Unread, OSError) as exc:  # requests' errors are OSErrors
            (bundle / "crds.error.txt").write_text(f"{exc}\n")
        for name, file in out.items():
            if file.tell() == 0:
                file.write("[]\n" if name == "crds.yaml" else "{}\n")


def _write_crd(cluster: Cluster, crd: dict, out: dict) -> None:
    """One CRD into each file: crds.yaml is a list, the others map CRD names to what they
    hold, so each file is the concatenation of one entry per CRD."""
    name, spec = crd["metadata"]["name"], crd["spec"]
    out["crds.yaml"].write(_dump([crd]))
    if "objects.yaml" in out:
        out["objects.yaml"].write(_dump({name: _objects_of(cluster, crd)}))
    stored: dict = {}
    if cluster.etcd is not None:
        prefix = f"/registry/{spec['group']}/{spec['names']['plural']}/"
        try:
            stored = {
                kv.key: {"apiVersion": kv.api_version, "mod_revision": kv.mod_revision}
                for kv in cluster.etcd.list(prefix)
            }
        except Exception as exc:
            stored = {"unreadable": {"error": str(exc)}}
    out["etcd-stored-versions.yaml"].write(_dump({name: stored}))


def _objects_of(cluster: Cluster, crd: dict) -> list | str:
    """Every object of ``crd`` in all namespaces, read at its storage version (at its first
    served version when that is not served), or what the API server said instead. One list
    request per CRD: a ``kubectl get`` each took 6.5 minutes on a provider's 966 CRDs."""
    spec = crd["spec"]
    served = [v["name"] for v in spec["versions"] if v.get("served")]
    storage = [v["name"] for v in spec["versions"] if v.get("storage")]
    if not served:
        return "no version served: nothing to read"
    version = storage[0] if storage and storage[0] in served else served[0]
    try:
        return list(_pages(cluster, f"/apis/{spec['group']}/{version}/{spec['names']['plural']}"))
    except (_Unread, OSError) as exc:
        return str(exc)


def _pages(cluster: Cluster, url: str) -> Iterator[dict]:
    """The items of a list, page by page (``LIST_PAGE`` each)."""
    params = {"limit": LIST_PAGE}
    while True:
        try:
            got = cluster.http.get(url, params=params)
        except OSError as exc:
            raise _Unread(f"GET {url}: {exc}") from exc
        if got.status_code != 200:
            raise _Unread(f"GET {url}: {got.status_code} {got.text.strip()}")
        page = got.json()
        yield from page.get("items") or []
        cont = (page.get("metadata") or {}).get("continue")
        if not cont:
            return
        params = {"limit": LIST_PAGE, "continue": cont}


def _dump(data) -> str:
    """YAML through libyaml where PyYAML has it: a cluster's tens of thousands of keys take
    seconds, not half a minute, in the pure-Python emitter."""
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return yaml.dump(data, Dumper=dumper, sort_keys=False)


def _new_directory(parent: Path, name: str) -> Path:
    """``parent/name``, made now: a run failing in the same second as another (parallel
    sessions sharing artifacts/) gets ``name-2``, never the other's bundle."""
    parent.mkdir(parents=True, exist_ok=True)
    for attempt in range(1, 1000):
        path = parent / (name if attempt == 1 else f"{name}-{attempt}")
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path
    raise FileExistsError(f"{parent / name}: 999 bundles of the same second already there")
