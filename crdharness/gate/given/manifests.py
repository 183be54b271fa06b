"""The user's manifests: CRD releases, admission webhook configurations, sample objects.

Files or directories of YAML or JSON, multi-document, read as kubectl reads them
(``crdharness.manifests_yaml``); whatever else they hold (the Deployments and Services of
``kustomize build`` or ``helm template``) is ignored. Then the
one place that rewrites a manifest's ``clientConfig`` so the API server reaches the webhook
the gate runs.
"""

from __future__ import annotations

import contextlib
import copy
import gc
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from crdharness import manifests_yaml
from crdharness.errors import HarnessError
from crdharness.gate.given.config import WebhookSpec

CRD_API = "apiextensions.k8s.io/v1"
ADMISSION_KINDS = ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")
SUFFIXES = (".yaml", ".yml", ".json")
Reach = Callable[[str], dict]  # webhook path -> clientConfig


def files(paths: list[Path]) -> list[Path]:
    """The files these paths name: a file itself, a directory's YAML/JSON files, sorted."""
    found: list[Path] = []
    for path in paths:
        found += (
            sorted(p for p in path.rglob("*") if p.suffix in SUFFIXES) if path.is_dir() else [path]
        )
    return found


def documents(paths: list[Path]) -> list[tuple[Path, dict]]:
    """Every object in these files (directories: their YAML/JSON files, sorted), as kubectl
    reads them: a list's items, and mappings only (a kustomization without kind is one)."""
    return [
        (file, obj)
        for file in files(paths)
        for obj in manifests_yaml.read(file)
        if isinstance(obj, dict)
    ]


@dataclass
class Release:
    """One entry of the history: the CRDs as that release ships them, and the webhook it
    runs under where it names its own (``crds[i].webhook``; else the top-level one)."""

    index: int
    label: str  # where it came from, for the report
    # CRD name -> manifest. Not in repr(): pytest's report of a Ctrl-C repr()s each frame's
    # arguments, and 2,000 CRDs (100 MB of manifests) took minutes to stop.
    crds: dict[str, dict] = field(default_factory=dict, repr=False)
    webhook: WebhookSpec | None = None

    def versions(self, crd: str) -> list[dict]:
        return self.crds[crd]["spec"]["versions"] if crd in self.crds else []

    def version(self, crd: str, name: str) -> dict | None:
        """The ``spec.versions`` entry ``name`` of ``crd``, if this release has it."""
        return next((v for v in self.versions(crd) if v["name"] == name), None)

    def entry(self, crd: str, name: str) -> dict:
        """The ``spec.versions`` entry ``name`` of ``crd``, which this release has."""
        found = self.version(crd, name)
        if found is None:
            raise KeyError(f"{crd} has no version {name} in release {self.index + 1}")
        return found

    def served(self, crd: str) -> list[str]:
        return [v["name"] for v in self.versions(crd) if v.get("served")]

    def names(self, crd: str) -> list[str]:
        return [v["name"] for v in self.versions(crd)]

    def storage(self, crd: str) -> str:
        return next(v["name"] for v in self.versions(crd) if v.get("storage"))

    def deprecated(self, crd: str) -> dict[str, str | None]:
        """Deprecated served versions -> their custom warning (None: the default text)."""
        return {
            v["name"]: v.get("deprecationWarning")
            for v in self.versions(crd)
            if v.get("served") and v.get("deprecated")
        }

    def subset(self, names: list[str]) -> Release:
        """This release with only the CRDs ``names``."""
        return Release(self.index, self.label, {n: self.crds[n] for n in names}, self.webhook)

    def strategy(self, crd: str) -> str:
        return (self.crds[crd]["spec"].get("conversion") or {}).get("strategy", "None")


@dataclass(frozen=True, eq=False)  # hashed by identity: pytest keeps its plugins in sets
class ReadHistory:
    """A history the command line has already read (``--shard`` reads it to find its
    share), handed to the pytest session as a plugin: a provider's 4,000 files read once."""

    releases: list[Release]


def load_history(
    history: list[list[Path]], root: Path, webhooks: dict[int, WebhookSpec] | None = None
) -> list[Release]:
    with _kept_for_the_run():
        return _load_history(history, root, webhooks)


@contextlib.contextmanager
def _kept_for_the_run():
    """Python's cycle collector paused while manifests are read, and what was read kept out
    of its later passes (``gc.freeze``): parsed YAML holds no cycles and lives for the whole
    run, yet each pass walks all of it — reading upjet's 4,058 CRD files took 40 s with the
    collector, 22 s without, and every later pass of a run walked its millions of objects."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
        gc.freeze()


def _load_history(
    history: list[list[Path]], root: Path, webhooks: dict[int, WebhookSpec] | None
) -> list[Release]:
    releases = []
    for index, paths in enumerate(history):
        label = ", ".join(_relative(p, root) for p in paths)
        release = Release(index, label, webhook=(webhooks or {}).get(index))
        for file, doc in documents(paths):
            if doc.get("kind") != "CustomResourceDefinition":
                continue
            if doc.get("apiVersion") != CRD_API:
                raise HarnessError(
                    f"{file}: CRD {doc.get('metadata', {}).get('name')} is "
                    f"{doc.get('apiVersion')}; only {CRD_API} is served by current clusters"
                )
            name = (doc.get("metadata") or {}).get("name")
            if not name:
                raise HarnessError(f"{file}: a CustomResourceDefinition without metadata.name")
            release.crds[name] = interned(doc)
        if not release.crds:
            raise HarnessError(f"release {index + 1} ({label}) holds no CustomResourceDefinition")
        releases.append(release)
    return releases


SHARED_STRING = 40  # characters: keys, types, formats, enum values; not descriptions


def interned(value):
    """``value`` with its keys and short strings interned: a provider's 4,000 CRD files
    repeat ``type``, ``properties``, ``description``... hundreds of thousands of times (upjet
    v2.6.0's 2,043 CRDs: 233 MiB parsed, 134 MiB interned)."""
    if isinstance(value, dict):
        return {sys.intern(k) if isinstance(k, str) else k: interned(v) for k, v in value.items()}
    if isinstance(value, list):
        return [interned(v) for v in value]
    if isinstance(value, str) and len(value) < SHARED_STRING:
        return sys.intern(value)
    return value


def missing_webhook(releases: list[Release]) -> str:
    """What to say when a release converts through a webhook and the gate file names none to
    run: which releases, and, where the candidate itself needs none (it dropped its webhook),
    how to give an earlier release its own."""
    using = [r for r in releases if r.webhook is None and uses_webhook(r, None)]
    if not using:
        return "`admission:` is given, but the gate file has no `webhook:` saying how to run it"
    named = ", ".join(f"release {r.index + 1} ({r.label})" for r in using)
    line = f"{named} converts through a webhook, but the gate file has no `webhook:` saying "
    line += "how to run it"
    if using[-1] is not releases[-1]:  # the candidate converts without one
        path = using[0].label if ", " not in using[0].label else "..."
        line += (
            "; the candidate needs none, so give each release that does its own webhook: "
            f"`crds: [{{path: {path}, webhook: {{command: ...}}}}, ...]` (README, "
            '"A webhook per release")'
        )
    return line


def admission_configurations(paths: list[Path]) -> list[dict]:
    configurations = [doc for _, doc in documents(paths) if doc.get("kind") in ADMISSION_KINDS]
    if paths and not configurations:
        raise HarnessError(
            f"admission: {', '.join(map(str, paths))} hold no "
            "ValidatingWebhookConfiguration or MutatingWebhookConfiguration"
        )
    return configurations


def samples_by_crd(paths: list[Path], releases: list[Release]) -> dict[str, list[dict]]:
    """Sample objects, sorted by the CRD (of any release) that serves their group and kind."""
    by_group_kind: dict[tuple[str, str], str] = {}
    for release in releases:
        for name, crd in release.crds.items():
            spec = crd["spec"]
            by_group_kind[(spec["group"], spec["names"]["kind"])] = name
    samples: dict[str, list[dict]] = {}
    named = {path for path in paths if not path.is_dir()}
    for file, doc in documents(paths):
        group = str(doc.get("apiVersion", "")).rpartition("/")[0]
        owner = by_group_kind.get((group, str(doc.get("kind"))))
        if owner is None and file not in named:
            continue  # a directory also holds other things (kustomization.yaml, ...)
        if owner is None:
            raise HarnessError(
                f"{file}: sample {doc.get('apiVersion')} {doc.get('kind')} is not served by "
                "any CRD of the history"
            )
        samples.setdefault(owner, []).append(doc)
    return samples


def _relative(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


# -- reaching the webhook ------------------------------------------------------------------


def point_conversion(crd: dict, reach: Reach, spec) -> dict:
    """A copy of ``crd`` whose conversion webhook is the gate's, at the path its manifest
    names. ``reach(path)`` is the clientConfig (a URL or a Service, with the caBundle). A
    manifest without a conversion stanza gets one when ``spec.convert`` names it (the
    kustomize patch the user applies at deploy time)."""
    pointed = copy.deepcopy(crd)
    conversion = pointed["spec"].get("conversion")
    if conversion is None and spec is not None and spec.converts(crd):
        conversion = pointed["spec"]["conversion"] = {
            "strategy": "Webhook",
            "webhook": {"conversionReviewVersions": list(spec.review_versions)},
        }
    if not conversion or conversion.get("strategy") != "Webhook":
        return pointed
    webhook = conversion.setdefault("webhook", {})
    webhook.setdefault("conversionReviewVersions", list(spec.review_versions) if spec else ["v1"])
    webhook["clientConfig"] = client_config(webhook.get("clientConfig") or {}, reach, spec)
    return pointed


def point_admission(configuration: dict, reach: Reach, spec) -> dict:
    pointed = copy.deepcopy(configuration)
    for hook in pointed.get("webhooks") or []:
        hook["clientConfig"] = client_config(hook.get("clientConfig") or {}, reach, spec)
    return pointed


def client_config(original: dict, reach: Reach, spec=None) -> dict:
    """The clientConfig reaching the gate's webhook at the path the original named (a
    Service's ``path``, or a URL's path), else the configured default path."""
    return reach(webhook_path(original, spec))


def webhook_path(original: dict, spec=None) -> str:
    path = None
    if "service" in original:
        path = original["service"].get("path")
    elif "url" in original:
        from urllib.parse import urlsplit

        path = urlsplit(original["url"]).path or None
    return path or (spec.path if spec is not None else "/")


def url_reach(base_url: str, ca_bundle: str) -> Reach:
    """Reach a webhook by URL (the local backend: the recording proxy on 127.0.0.1)."""
    return lambda path: {"url": base_url.rstrip("/") + path, "caBundle": ca_bundle}


def uses_webhook(release: Release, spec) -> bool:
    return any(
        release.strategy(name) == "Webhook" or (spec is not None and spec.converts(crd))
        for name, crd in release.crds.items()
    )
