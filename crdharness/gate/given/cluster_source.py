"""A running cluster as the gate's starting point (``--from-cluster``): the gate's CRDs as
that cluster has them installed (spec and ``status.storedVersions``) and its custom objects,
read with GET and LIST only.

Nothing here can write: the connection (``source_http``) refuses every method but GET before
a request leaves, and no etcd is asked; which objects are read is ``source_selection``'s. The
objects are kept in memory for the run (the local control plane that replays them lives in
the run's temporary workspace); what the gate reports of them is their names, the paths and
the server's messages (``redaction``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import yaml

from crdharness.errors import HarnessError
from crdharness.gate import redaction
from crdharness.gate.given.manifests import Release
from crdharness.gate.given.source_http import ReadOnlyHttp, get_json, pages
from crdharness.gate.given.source_selection import choose, written_at

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
# Server-written metadata, and what a restore would not carry: the objects are made anew.
DROPPED_METADATA = (
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "managedFields",
    "selfLink",
    "ownerReferences",  # the owners' uids exist only on that cluster
    "finalizers",  # nothing here would remove them
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"  # the object again


@dataclass
class CapturedObject:
    crd: str
    namespace: str | None
    name: str
    version: str  # written at: its last writer's apiVersion, where served; else as listed
    body: dict  # the object as read at ``version``, without server-written metadata
    resource_version: str  # as read: unchanged after the run, or something wrote it
    # Replayed as they are: an entry naming a version the candidate removes breaks every
    # server-side apply of the object (kubernetes/kubernetes#111937).
    managed_fields: list[dict] = field(default_factory=list)

    @property
    def label(self) -> str:
        """How findings name it: ``namespace/name``."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


@dataclass
class Capture:
    """What the gate read of the source cluster."""

    context: str
    server: str
    crds: dict[str, dict] = field(default_factory=dict)  # name -> as installed (no status)
    stored_versions: dict[str, list[str]] = field(default_factory=dict)
    crd_resource_versions: dict[str, str] = field(default_factory=dict)
    objects: dict[str, list[CapturedObject]] = field(default_factory=dict)
    totals: dict[str, int] = field(default_factory=dict)  # objects the cluster holds (listed)
    missing: list[str] = field(default_factory=list)  # gate CRDs the cluster does not have
    namespaces: list[str] = field(default_factory=list)  # empty: all
    kubernetes: str = ""  # what the source's /version says, e.g. "v1.36.4"
    max_objects: int | None = None  # the cap per CRD the user set (None: every object)

    @property
    def object_count(self) -> int:
        return sum(len(found) for found in self.objects.values())

    def _held(self) -> str:
        """How many objects the cluster holds, and how many were replayed under a cap."""
        held = self.object_count + self.left_out
        return f"{held} ({self.object_count} replayed)" if self.left_out else str(held)

    @property
    def truncated(self) -> dict[str, tuple[int, int]]:
        """CRDs with more objects than were replayed: name -> (replayed, held)."""
        return {
            name: (len(self.objects.get(name, [])), total)
            for name, total in self.totals.items()
            if total > len(self.objects.get(name, []))
        }

    @property
    def left_out(self) -> int:
        """Objects the cluster holds that ``max_objects`` left out of the replay."""
        return sum(held - replayed for replayed, held in self.truncated.values())

    def describe(self) -> str:
        """One line: this cluster, what it holds of the gate's CRDs."""
        stored = "; ".join(f"{n}: {', '.join(v)}" for n, v in self.stored_versions.items())
        where = f" in namespace {', '.join(self.namespaces)} only" if self.namespaces else ""
        crds = f"{len(self.crds)} CRD{'' if len(self.crds) == 1 else 's'}"
        return (
            f"context {self.context} ({self.server}, Kubernetes {self.kubernetes or '?'}), "
            f"{self._held()} objects of {crds}{where}, storedVersions {stored or 'none'}"
        )


def capture(
    http: ReadOnlyHttp,
    context: str,
    crd_names: list[str],
    namespaces: list[str],
    max_objects: int | None = None,
    kubernetes: str = "",
) -> Capture:
    """Read the CRDs ``crd_names`` and their objects (in ``namespaces``, or all; every one
    unless ``max_objects`` caps them per CRD). ``kubernetes``: the source's version, as
    ``source_http.reach`` read it."""
    found = Capture(context, http.base_url, namespaces=list(namespaces))
    found.kubernetes, found.max_objects = kubernetes, max_objects
    for name in crd_names:
        crd = get_json(http, f"{CRDS}/{name}")
        if crd is None:
            found.missing.append(name)
            continue
        found.stored_versions[name] = list((crd.get("status") or {}).get("storedVersions") or [])
        found.crd_resource_versions[name] = crd["metadata"].get("resourceVersion", "")
        found.crds[name] = installed_manifest(crd)
        listed = _listed(http, found.crds[name], namespaces)
        found.totals[name] = len(listed)
        chosen = choose(listed, max_objects)
        found.objects[name] = [_captured(http, name, found.crds[name], item) for item in chosen]
    return found


def installed_manifest(crd: dict) -> dict:
    """A CRD as a manifest that installs it again: without status and server metadata."""
    metadata = {k: v for k, v in crd["metadata"].items() if k in ("name", "labels", "annotations")}
    _drop_last_applied(metadata)
    return {
        "apiVersion": crd.get("apiVersion", "apiextensions.k8s.io/v1"),
        "kind": "CustomResourceDefinition",
        "metadata": metadata,
        "spec": crd["spec"],
    }


def _listed_version(crd: dict) -> str:
    """The version to LIST at: the storage version where served, else the first served."""
    versions = crd["spec"]["versions"]
    storage = next(v for v in versions if v.get("storage"))
    if storage.get("served"):
        return storage["name"]
    served = [v["name"] for v in versions if v.get("served")]
    if not served:
        name = crd["metadata"]["name"]
        raise HarnessError(f"{name} serves no version: its objects cannot be read")
    return served[0]


def _collection(crd: dict, version: str, namespace: str | None) -> str:
    spec = crd["spec"]
    base = f"/apis/{spec['group']}/{version}"
    if namespace and spec.get("scope", "Namespaced") == "Namespaced":
        base += f"/namespaces/{namespace}"
    return f"{base}/{spec['names']['plural']}"


def _listed(http: ReadOnlyHttp, crd: dict, namespaces: list[str]) -> list[dict]:
    version = _listed_version(crd)
    namespaced = crd["spec"].get("scope", "Namespaced") == "Namespaced"
    places = namespaces if namespaces and namespaced else [None]
    return [item for place in places for item in pages(http, _collection(crd, version, place))]


def _captured(http: ReadOnlyHttp, crd_name: str, crd: dict, item: dict) -> CapturedObject:
    served = [v["name"] for v in crd["spec"]["versions"] if v.get("served")]
    version = written_at(item, served)
    metadata = item["metadata"]
    namespace = metadata.get("namespace")
    if item["apiVersion"].rpartition("/")[2] != version:
        path = f"{_collection(crd, version, namespace)}/{metadata['name']}"
        item = get_json(http, path) or item  # gone meanwhile: as listed
        version = item["apiVersion"].rpartition("/")[2]
    return CapturedObject(
        crd_name,
        namespace,
        metadata["name"],
        version,
        _stripped(item),
        metadata.get("resourceVersion", ""),
        list(metadata.get("managedFields") or []),
    )


def _stripped(item: dict) -> dict:
    metadata = {k: v for k, v in item["metadata"].items() if k not in DROPPED_METADATA}
    _drop_last_applied(metadata)
    return {**item, "metadata": metadata}


def _drop_last_applied(metadata: dict) -> None:
    """kubectl's copy of the object in an annotation: the object again, not a field."""
    annotations = metadata.pop("annotations", None) or {}
    kept = {k: v for k, v in annotations.items() if k != LAST_APPLIED}
    if kept:
        metadata["annotations"] = kept


def changed_since(http: ReadOnlyHttp, found: Capture) -> list[str]:
    """What changed on the source since it was read (resourceVersions): nothing, unless
    another client wrote meanwhile — the gate itself cannot."""
    changed = []
    for name, version in found.crd_resource_versions.items():
        crd = get_json(http, f"{CRDS}/{name}")
        now = (crd or {}).get("metadata", {}).get("resourceVersion")
        if now != version:
            changed.append(f"CRD {name}: resourceVersion {version} -> {now}")
    for name, objects in found.objects.items():
        # One paged LIST, not a GET per object: a cluster holds tens of thousands of them.
        namespaces = sorted({obj.namespace for obj in objects if obj.namespace})
        listed = {
            (item["metadata"].get("namespace"), item["metadata"]["name"]): item["metadata"].get(
                "resourceVersion"
            )
            for item in _listed(http, found.crds[name], namespaces)
        }
        for obj in objects:
            now = listed.get((obj.namespace, obj.name))
            if now != obj.resource_version:
                was = obj.resource_version
                changed.append(f"{name} {obj.label}: resourceVersion {was} -> {now}")
    return changed


def rbac(crds: dict[str, dict], name: str = "crdharness-gate-reader") -> str:
    """The read-only ClusterRole the gate needs on a source cluster: get on exactly these
    CRDs, get and list on their objects."""
    by_group: dict[str, list[str]] = {}
    for crd in crds.values():
        spec = crd["spec"]
        by_group.setdefault(spec["group"], []).append(spec["names"]["plural"])
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": [
            {
                "apiGroups": ["apiextensions.k8s.io"],
                "resources": ["customresourcedefinitions"],
                "resourceNames": sorted(crds),
                "verbs": ["get"],
            },
            *(
                {"apiGroups": [group], "resources": sorted(plurals), "verbs": ["get", "list"]}
                for group, plurals in sorted(by_group.items())
            ),
        ],
    }
    return yaml.safe_dump(role, sort_keys=False)


@dataclass(eq=False)  # a pytest plugin: hashed by identity
class Source:
    """A source cluster for one gate run: what was read of it, and the connection that
    checks, at the end, that nothing on it changed. Handed to the gate's pytest plugin."""

    capture: Capture
    http: ReadOnlyHttp
    show_values: bool = False

    def untouched(self) -> str:
        """One line: the source was only read (every resourceVersion as it was), or what
        changed meanwhile (another client's doing: the gate cannot write)."""
        try:
            changed = changed_since(self.http, self.capture)
        except HarnessError as exc:
            return f"the source cluster could not be read again to prove it untouched: {exc}"
        if changed:
            return (
                "the gate only read the source cluster, but something else wrote to it "
                f"meanwhile: {'; '.join(changed[:5])}"
            )
        crds = len(self.capture.crds)
        return (
            f"the source cluster was only read (GET and LIST, no etcd): its "
            f"{self.capture.object_count} objects and {crds} CRD{'' if crds == 1 else 's'} "
            "keep their resourceVersions"
        )

    def releases(self, history: list[Release]) -> list[Release]:
        """The run's history: the cluster's CRDs as release 1, the candidate as release 2."""
        if not self.capture.crds:
            raise HarnessError(
                f"--from-cluster: the cluster ({self.capture.context}) has none of "
                f"{', '.join(sorted(history[-1].crds))} installed: nothing of it to upgrade"
            )
        candidate = history[-1]
        return [
            Release(0, f"the cluster ({self.capture.context})", dict(self.capture.crds)),
            Release(1, candidate.label, candidate.crds),
        ]

    def secrets(self) -> set[str]:
        """The values of every Secret-like field of the captured objects."""
        found: set[str] = set()
        for crd, captured in self.capture.objects.items():
            versions = {v["name"]: v for v in self.capture.crds[crd]["spec"]["versions"]}
            for obj in captured:
                schema = (versions.get(obj.version, {}).get("schema") or {}).get("openAPIV3Schema")
                found |= redaction.secret_values(obj.body, schema)
        return found
