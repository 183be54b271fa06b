"""One gate run: the cluster, the user's releases and webhook, and the check results.

``GateRun`` holds the state and the helpers every phase uses (writing objects, counting what
the server refused); the phases live in their own modules (``history`` with ``deprecation``
and ``migration``, ``roundtrip``, ``conduct``) and each runs once, when a check needs it.

Every planned check ends with a decision: a phase that raises (the gate's own failure, a
timeout) turns each check it had not decided into a failure that says why, and a check the
run never reached says so ("not proven"); none is left showing pass without evidence.
"""

from __future__ import annotations

import itertools
import time
import traceback
from collections import Counter

from crdharness.binaries.versions import Release as KubernetesRelease
from crdharness.cluster import Cluster
from crdharness.gate import objects
from crdharness.gate.api import Answer, Resource, call, read_crd, write_with_retry
from crdharness.gate.conduct import ConductCheck
from crdharness.gate.config import GateConfig
from crdharness.gate.deprecation import DeprecationChecks
from crdharness.gate.expectations import ExpectationChecks
from crdharness.gate.history import HistoryPhase
from crdharness.gate.kubernetes_upgrade import KubernetesUpgradeCheck
from crdharness.gate.manifests import Release
from crdharness.gate.plan import PlannedCheck
from crdharness.gate.results import CheckResult, NotConvertible
from crdharness.gate.roundtrip import CandidatePhase
from crdharness.progress import Reporter


class GateRun(
    HistoryPhase,
    DeprecationChecks,
    CandidatePhase,
    ExpectationChecks,
    ConductCheck,
    KubernetesUpgradeCheck,
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
        planned: list[PlannedCheck] | None = None,
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
        self.planned = planned or []
        self.refused_crds: set[str] = set()  # CRDs a release could not install: left out after
        self.stored_after: dict[int, dict[str, list[str]]] = {}  # release -> storedVersions
        self.phase_errors: dict[str, str] = {}  # phase -> why it could not finish
        self.deadline = time.monotonic() + config.timeout
        self.running_phase: str | None = None  # the innermost phase under way
        self.in_progress: set[str] = set()  # see working_on
        self.found: dict[tuple[str, str], list[dict]] = {}  # (crd, version) -> failing bodies
        self.lost_paths: dict[str, set[str]] = {}  # crd -> paths its round trips lost

    @property
    def candidate(self) -> Release:
        return self.releases[-1]

    def planned_check(self, check: str, subject: str) -> bool:
        return any(p.check == check and p.subject == subject for p in self.planned)

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
        outer, self.running_phase = self.running_phase, phase
        try:
            self.check_deadline(f"the {phase} phase")
            phases = {
                "history": self._history,
                "candidate": self._candidate,
                "conduct": self._conduct,
                "kubernetes": self._kubernetes,
            }
            phases[phase]()
        except (Exception, GateTimeout) as exc:  # the gate's own failure becomes the checks'
            self.phase_errors[phase] = _cause(exc)
            self._fail_undecided(phase, exc)
        finally:
            self.running_phase = outer
            self.timings[phase] = round(time.perf_counter() - started, 2)

    def check_deadline(self, what: str) -> None:
        """Raise if the run's ``timeout:`` has passed (checked between steps)."""
        if time.monotonic() >= self.deadline:
            raise GateTimeout(
                f"the gate's time ran out ({self.config.timeout:g} s, `timeout:` in the gate "
                f"file) before {what}"
            )

    def working_on(self, *keys: str) -> None:
        """The checks the phase is deciding now (``check:subject``): if it raises, these fail
        even where they already hold some evidence."""
        self.in_progress = set(keys)

    def _fail_undecided(self, phase: str, exc: BaseException) -> None:
        """After ``phase`` raised: every check of it not decided, or under way, fails."""
        cause = _cause(exc)
        where = _where(exc)
        for planned in self.planned:
            if planned.phase != phase:
                continue
            result = self.result(planned.check, planned.subject)
            if result.passed is False or (_decided(result) and planned.key not in self.in_progress):
                continue
            result.passed = True  # so fail() makes this the headline
            result.fail(f"the gate could not finish this check: {cause}", where)

    def decision(self, planned: PlannedCheck) -> CheckResult:
        """The result of a planned check; one the run never reached says why."""
        result = self.results.get(planned.key)
        if result is not None and _decided(result):
            return result
        result = self.result(planned.check, planned.subject)
        result.passed = None
        if planned.phase not in self._phases_done:
            result.evidence = "not proven: not run (deselected)"
        elif planned.phase == "history" and self.refused_crds:
            result.evidence = (
                f"not proven: not reached ({', '.join(sorted(self.refused_crds))} could not be "
                "installed: see install)"
            )
        else:
            result.evidence = "not proven: the run did not decide it"
        return result

    def decide_all(self) -> list[CheckResult]:
        """Every planned check's result (in plan order), then any other result."""
        planned = [self.decision(p) for p in self.planned]
        keys = {p.key for p in self.planned}
        return planned + [r for key, r in self.results.items() if key not in keys]

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

    def sample_bodies(self, crd: str, version: str) -> list[dict]:
        """The user's samples of ``crd`` written at ``version``, as bodies to create."""
        return [
            objects.sample_body(s)
            for s in self.samples.get(crd, [])
            if s["apiVersion"].endswith(f"/{version}")
        ]

    def _resource(self, crd: str) -> Resource:
        for release in reversed(self.releases):
            if crd in release.crds:
                return Resource.of(release.crds[crd])
        raise KeyError(crd)

    def _create(
        self, manifest, entry, version, name, namespace, body, refusals: list | None = None
    ) -> dict | None:
        """Create an object (and its status, through the subresource); None if refused.
        A refusal is counted as refused input, or, given ``refusals``, added to it (the
        caller judges it)."""
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
            if refusals is not None:
                refusals.append(created)
            else:
                self._count_refusal(created)
            return None
        if "status" in body and objects.has_status(entry):
            put = write_with_retry(
                self.cluster,
                resource.path(version, namespace, name) + "/status",
                lambda current: {**current, "status": body["status"]},
                read_path=resource.path(version, namespace, name),
                current=created.body,
            )
            if not put.ok:
                if refusals is not None:
                    refusals.append(put)
                else:
                    self._count_refusal(put, "status ")
                call(self.cluster, "DELETE", resource.path(version, namespace, name))
                return None
            return put.body
        return created.body

    def _object(self, manifest, version, name, namespace, body) -> dict:
        return objects.manifest(manifest, version, name, namespace, body)

    def _count_refusal(self, answer: Answer, what: str = "") -> None:
        if "admission webhook" in answer.message:
            why = f"{what}refused by an admission webhook"
        else:
            why = f"{what}refused by the API server's validation ({answer.status})"
        self.refused[why] += 1
        # One message per reason, so the user sees why (and can write samples that pass).
        self.refused_examples.setdefault(why, answer.message[:300])


class GateTimeout(BaseException):
    """The run's ``timeout:`` passed. A BaseException, like KeyboardInterrupt: the waits
    inside a phase retry on ordinary exceptions and must not swallow this one."""


def _decided(result: CheckResult) -> bool:
    return result.passed is not True or bool(result.evidence)


def _cause(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}"[:400] if text else type(exc).__name__


def _where(exc: BaseException) -> str:
    """The innermost frame of the harness's own code, for the engineer who reads the bug."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "crdharness" in f.filename]
    if not frames:
        return "raised outside the harness"
    frame = frames[-1]
    return f"raised at {frame.filename.rsplit('crdharness/', 1)[-1]}:{frame.lineno} ({frame.name})"
