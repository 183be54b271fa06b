"""One gate run: the cluster, the user's releases and webhook, and the check results.

``GateRun`` holds the state and the helpers every phase uses (writing objects, counting what
the server refused); the phases live in their own modules (``history`` with ``deprecation``,
``roundtrip``, ``conduct``) and each runs once, when a check needs it.
"""

from __future__ import annotations

import itertools
import time
from collections import Counter

from crdharness.binaries.versions import Release as KubernetesRelease
from crdharness.cluster import Cluster
from crdharness.gate import objects
from crdharness.gate.api import Answer, Resource, call, read_crd
from crdharness.gate.conduct import ConductCheck
from crdharness.gate.config import GateConfig
from crdharness.gate.deprecation import DeprecationChecks
from crdharness.gate.history import HistoryPhase
from crdharness.gate.kubernetes_upgrade import KubernetesUpgradeCheck
from crdharness.gate.manifests import Release
from crdharness.gate.results import CheckResult, NotConvertible
from crdharness.gate.roundtrip import CandidatePhase
from crdharness.progress import Reporter


class GateRun(
    HistoryPhase, DeprecationChecks, CandidatePhase, ConductCheck, KubernetesUpgradeCheck
):
    def __init__(
        self,
        cluster: Cluster,
        config: GateConfig,
        releases: list[Release],
        samples: dict[str, list[dict]],
        report: Reporter,
        webhook=None,
        kubernetes_path: list[KubernetesRelease] | None = None,
    ):
        self.cluster = cluster
        self.config = config
        self.releases = releases
        self.samples = samples
        self.report = report
        self.webhook = webhook
        self.kubernetes_path = kubernetes_path or []  # oldest (running) first; see plan
        self.results: dict[str, CheckResult] = {}
        self._phases_done: set[str] = set()
        self._names = itertools.count()
        self.history_completed = False
        self.refused = Counter()  # why generated objects were refused, over the whole run
        self.timings: dict[str, float] = {}  # seconds per phase (and set-up steps), for the report
        self.refused_examples: dict[str, str] = {}  # reason -> the server's message, once

    @property
    def candidate(self) -> Release:
        return self.releases[-1]

    def result(self, check: str, subject: str) -> CheckResult:
        key = f"{check}:{subject}"
        if key not in self.results:
            self.results[key] = CheckResult(check, subject)
        return self.results[key]

    def run(self, phase: str) -> None:
        if phase in self._phases_done:
            return
        self._phases_done.add(phase)
        started = time.perf_counter()
        try:
            phases = {
                "history": self._history,
                "candidate": self._candidate,
                "conduct": self._conduct,
                "kubernetes": self._kubernetes,
            }
            phases[phase]()
        finally:
            self.timings[phase] = round(time.perf_counter() - started, 2)

    def _name(self, prefix: str) -> str:
        return f"{prefix}-{next(self._names)}"

    def _pointed(self, manifest: dict) -> dict:
        if self.webhook is None:
            return manifest
        from crdharness.gate.manifests import point_conversion

        return point_conversion(manifest, self.webhook.reach, self.config.webhook)

    def _stored_versions(self, name: str) -> list[str]:
        crd = read_crd(self.cluster, name)
        return list(((crd or {}).get("status") or {}).get("storedVersions") or [])

    def _resource(self, crd: str) -> Resource:
        for release in reversed(self.releases):
            if crd in release.crds:
                return Resource.of(release.crds[crd])
        raise KeyError(crd)

    def _create(self, manifest, entry, version, name, namespace, body) -> dict | None:
        """Create an object (and its status, through the subresource); None if refused."""
        resource = Resource.of(manifest)
        obj = self._object(manifest, version, name, namespace, body)
        created = call(self.cluster, "POST", resource.path(version, namespace), obj)
        if created.status >= 500:  # the input was fine; storing it failed (conversion)
            raise NotConvertible(
                f"an object valid at {version} cannot be created: {created.message}",
                [f"POST at {version}: {created.status} {created.message}"],
                [(f"sent at {version}", obj)],
            )
        if not created.ok:
            self._count_refusal(created)
            return None
        if "status" in body and (entry.get("subresources") or {}).get("status") is not None:
            put = self._write_with_retry(
                resource.path(version, namespace, name) + "/status",
                lambda current: {**current, "status": body["status"]},
                read_path=resource.path(version, namespace, name),
            )
            if not put.ok:
                self._count_refusal(put, "status ")
                call(self.cluster, "DELETE", resource.path(version, namespace, name))
                return None
            return put.body
        return created.body

    def _object(self, manifest, version, name, namespace, body) -> dict:
        body = dict(body)
        labels = body.pop(objects.LABELS, None)
        obj = objects.manifest(manifest, version, name, namespace, body)
        if labels:
            obj["metadata"]["labels"] = labels
        return obj

    def _count_refusal(self, answer: Answer, what: str = "") -> None:
        if "admission webhook" in answer.message:
            why = f"{what}refused by an admission webhook"
        else:
            why = f"{what}refused by the API server's validation ({answer.status})"
        self.refused[why] += 1
        # One message per reason, so the user sees why (and can write samples that pass).
        self.refused_examples.setdefault(why, answer.message[:300])

    def _write_with_retry(self, path: str, change, read_path: str | None = None) -> Answer:
        """PUT ``change(current)``, reading the object again after a conflict: the user's
        controllers (a manager's reconcilers run beside its webhook) may write it meanwhile."""
        answer = None
        for _ in range(5):
            current = call(self.cluster, "GET", read_path or path)
            if not current.ok:
                return current
            answer = call(self.cluster, "PUT", path, change(current.body))
            if answer.status != 409:
                return answer
        return answer
