"""What one gate run knows and writes down: the cluster, the user's releases, samples and
webhook, and every check's result. One ``GateContext`` is passed to each phase's ``run(ctx)``;
it holds the helpers every phase uses (naming, creating objects, counting refusals) and
nothing about the order phases run in (``gate.phases.runner``).
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import json
import math
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from crdharness.binaries.versions import Release as KubernetesRelease
from crdharness.cluster import Cluster
from crdharness.gate import diff, go_values, subjects
from crdharness.gate.api import Answer, Resource, call, write_with_retry
from crdharness.gate.evidence import names, objects, refusal, schemas, unchanged
from crdharness.gate.evidence.changes import Change
from crdharness.gate.evidence.hazard_errors import Hazards
from crdharness.gate.given.config import GateConfig
from crdharness.gate.given.manifests import Release, point_conversion
from crdharness.gate.redaction import Redaction
from crdharness.gate.results import CheckResult, Debt, Form, NotConvertible
from crdharness.gate.run.plan import PlannedCheck
from crdharness.gate.run.screening import LOCALLY, Screening

if TYPE_CHECKING:
    from crdharness.gate.given.cluster_source import Capture
    from crdharness.gate.webhook.kind_webhook import KindUserWebhook
    from crdharness.gate.webhook.user_webhook import UserWebhook


HISTORY_NS = "gate-history"  # where the history phase writes its objects
# The refusal causes counted for the version pair being judged (``round_trips``): that pair's
# own while other CRDs' pairs run beside it (``concurrency.each`` carries it into the threads
# its objects go out on).
PAIR_CAUSES: contextvars.ContextVar[Counter[str] | None] = contextvars.ContextVar(
    "pair_causes", default=None
)
ROUND_TRIP_NS = "gate-round-trip"  # where the candidate phase writes and deletes its objects


class GateTimeout(BaseException):
    """The run's ``timeout:`` passed. A BaseException, like KeyboardInterrupt: the waits
    inside a phase retry on ordinary exceptions and must not swallow this one."""


@dataclass
class GateContext:
    cluster: Cluster
    config: GateConfig
    releases: list[Release]  # oldest first; the last is the candidate
    samples: dict[str, list[dict]]  # CRD name -> the user's sample objects
    report: Callable[[str], None]  # a progress line for the terminal
    webhook: UserWebhook | KindUserWebhook | None = None  # the candidate's (top-level)
    kubernetes_path: list[KubernetesRelease] = field(default_factory=list)  # oldest first
    planned: list[PlannedCheck] = field(default_factory=list)
    # release index -> the running webhook of a release that names its own (``crds[i].webhook``)
    release_webhooks: dict[int, UserWebhook] = field(default_factory=dict)

    results: dict[str, CheckResult] = field(default_factory=dict)  # check:subject -> result
    timings: dict[str, float] = field(default_factory=dict)  # seconds per phase and step
    refused: Counter[str] = field(default_factory=Counter)  # why generated objects were refused
    refused_examples: dict[str, str] = field(default_factory=dict)  # reason -> one message
    refused_causes: Counter[str] = field(default_factory=Counter)  # refusal.cause -> objects
    # (release, CRD, A, B) -> each status read at B already written anew on a new copy there,
    # with the refusal (status, message) or None (``status_anew``): once each, a few per pair.
    statuses_anew: dict[tuple, dict[str, tuple[int, str] | None]] = field(default_factory=dict)
    refused_crds: set[str] = field(default_factory=set)  # a release could not install them
    # generated objects judged locally (and repaired) before they are sent, and counted
    screening: Screening = field(default_factory=Screening)
    history_completed: bool = False  # the history phase reached its last release
    stored_after: dict[int, dict[str, list[str]]] = field(default_factory=dict)  # release ->
    found: dict[tuple[str, str], list[dict]] = field(default_factory=dict)  # failing bodies
    lost_paths: dict[str, set[str]] = field(default_factory=dict)  # crd -> paths lost
    shrunk: dict[str, set[str]] = field(default_factory=dict)  # crd -> failures shrunk once
    in_progress: set[str] = field(default_factory=set)  # see working_on
    changes: dict[int, list[Change]] = field(default_factory=dict)  # release -> from previous
    pair_changes: list[Change] = field(default_factory=list)  # candidate's version pairs
    # release -> documentation keys that changed from the previous (ignored, counted)
    ignored_documentation: defaultdict[int, Counter[str]] = field(
        default_factory=lambda: defaultdict(Counter)
    )
    probes: dict[int, list[Any]] = field(default_factory=dict)  # release -> crd_behaviour's
    pending: dict[int, list[Any]] = field(default_factory=dict)  # release -> singletons' kept
    hazards: dict[str, str] = field(default_factory=dict)  # writes a release itself refuses
    hazard_errors: Hazards = field(default_factory=Hazards)  # the same, as field errors
    # (release, CRD, version, the sample as JSON) -> the server's refusal of a user's sample
    samples_refused: dict[tuple[int, str, str, str], str] = field(default_factory=dict)
    # (crd, A, B, schema paths) -> (a new object's round trip evidence losing them, or None;
    # why not)
    fresh_losses: dict[tuple, tuple[str | None, str]] = field(default_factory=dict)
    # The release before the candidate, run through the candidate's own checks while the
    # history has it installed (``checks.previous_release``): check:subject -> its failures'
    # forms, for each check and subject it decided; what of the candidate's is its ``debt``.
    previous_forms: dict[str, list[Form]] = field(default_factory=dict)
    previous_not_evaluated: str = ""  # why nothing of it could be known (with a history)
    # convertibility:subject -> each write that pair's round trips took as far as B and how
    # it ended, under the release before the candidate and under the candidate (same_write)
    previous_writes: dict[str, dict[str, Any]] = field(default_factory=dict)
    candidate_writes: dict[str, dict[str, Any]] = field(default_factory=dict)
    replay_notes: dict[str, list[str]] = field(default_factory=dict)  # same_write_replay
    # CRDs whose round trips cannot tell the previous release's debt (the candidate's webhook)
    debt_unknowable: list[str] = field(default_factory=list)
    debt: list[Debt] = field(default_factory=list)
    # The candidate's CRDs the release did not change -> why (``evidence.unchanged``)
    unchanged: dict[str, str] = field(default_factory=dict)
    # The CRDs the history does not install -> their API group (``run.floor``)
    not_installed: dict[str, str] = field(default_factory=dict)
    deadline: float = 0.0  # time.monotonic() when the run's `timeout:` passes
    # ``--from-cluster``: what the source cluster holds (release 1 is its CRDs), and what
    # the run may show of it.
    source: Capture | None = None
    redaction: Redaction | None = None
    not_replayed: list[str] = field(default_factory=list)  # captured objects not re-created
    object_findings: dict[str, list[str]] = field(default_factory=dict)  # captured -> findings
    # captured -> every write the candidate refused it (upgrade_writes' names), hazards too
    writes_refused: dict[str, set[str]] = field(default_factory=dict)
    # One count per CRD: a CRD's object names do not depend on which other CRDs the run
    # gates (a shard of the CRDs, ``--shard``, names them as the whole run does).
    _names: dict[str, itertools.count] = field(default_factory=dict)
    slots: names.Slots = field(default_factory=names.Slots, repr=False)  # fixed names held
    # The counts objects written at once (``concurrency``) add to.
    _counting: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        if not self.deadline:
            bound = self.config.timeout
            self.deadline = time.monotonic() + bound if bound is not None else math.inf

    @property
    def candidate(self) -> Release:
        return self.releases[-1]

    def result(self, check: str, subject: str) -> CheckResult:
        key = subjects.key(check, subject)
        if key not in self.results:
            self.results[key] = CheckResult(check, subject)
        return self.results[key]

    @contextlib.contextmanager
    def timed(self, step: str):
        """Adds the seconds the block takes to ``timings[step]`` (report.json's
        ``seconds``): where a run's time goes, step by step, summed over releases."""
        started = time.perf_counter()
        try:
            yield
        finally:
            spent = self.timings.get(step, 0.0) + time.perf_counter() - started
            self.timings[step] = round(spent, 2)

    def planned_check(self, check: str, subject: str) -> bool:
        return any(p.check == check and p.subject == subject for p in self.planned)

    @contextlib.contextmanager
    def refusals_uncounted(self):
        """The run's refusal counts left as they were before the block: an earlier release's
        refusals are no evidence about the candidate."""
        refused, examples = Counter(self.refused), dict(self.refused_examples)
        causes = Counter(self.refused_causes)
        try:
            yield
        finally:
            self.refused, self.refused_examples = refused, examples
            self.refused_causes = causes

    def check_deadline(self, what: str) -> None:
        """Raise if the run's ``timeout:`` has passed (checked between steps)."""
        if time.monotonic() >= self.deadline:
            raise GateTimeout(
                f"the gate's time ran out ({self.config.timeout or 0:g} s, `timeout:` in the gate "
                f"file) before {what}"
            )

    def working_on(self, *keys: str) -> None:
        """The checks the phase is deciding now (``check:subject``): if it raises, these fail
        even where they already hold some evidence."""
        self.in_progress = set(keys)

    @contextlib.contextmanager
    def working(self, *keys: str):
        """``working_on`` for a block that runs beside others (each adds its own keys): they
        stay in progress if it raises."""
        with self._counting:
            self.in_progress = self.in_progress | set(keys)
        yield
        with self._counting:
            self.in_progress = self.in_progress - set(keys)

    def listed_only(self, crd: str) -> bool:
        """Whether the candidate's ``crd`` is unchanged and not judged again (no ``full``):
        no objects drawn for it, no round trips, no writes."""
        return crd in self.unchanged and not self.config.full

    def writes_for(self, release: Release, crd: str) -> bool:
        """Whether ``release`` writes objects of ``crd`` for the checks after it. Not for a
        CRD listed only: neither the candidate (nothing of it is judged again) nor the release
        before it (nothing to upgrade), unless it converts through a webhook and another CRD
        of its group changed (``unchanged.group_changed``)."""
        if not self.listed_only(crd) or release.index < len(self.releases) - 2:
            return True
        if release is self.candidate:
            return False
        return unchanged.group_changed(self.releases, self.unchanged, crd, self.config.webhook)

    def live(self, release: Release) -> list[str]:
        """The CRDs of ``release`` the history still carries (none refused before)."""
        return [name for name in release.crds if name not in self.refused_crds]

    def name(self, prefix: str, entry: dict | None = None, crd: str = "") -> str:
        """A name no other object of ``crd`` in this run has, made to meet what the schema
        of ``entry`` (the version it is written at) requires of names: for a singleton, its
        one name (``held`` keeps its objects one at a time)."""
        count = self._names.setdefault(crd, itertools.count())
        return names.rule(entry).name(f"{prefix}-{next(count)}")

    def held(self, crd: str, namespace: str | None, name: str, entry: dict | None):
        """A context in which the object ``name`` (of ``crd``, written at ``entry``) is the
        only one with that name: where the schema fixes its name, others wait for it."""
        return self.slots.held(crd, namespace, name, names.rule(entry).single == name)

    def pointed(self, manifest: dict, release: Release) -> dict:
        """The CRD, as ``release`` ships it, with its conversion webhook pointed at the
        webhook that release runs under: its own where it names one, else the top-level."""
        own = self.release_webhooks.get(release.index)
        if own is not None and release.webhook is not None:
            return point_conversion(manifest, own.reach, release.webhook)
        if self.webhook is None:
            return manifest
        return point_conversion(manifest, self.webhook.reach, self.config.webhook)

    def own_webhook(self, release: Release, crd: str) -> bool:
        """Whether ``crd`` converts, under ``release``, through that release's own webhook
        (not the candidate's): what is lost there is that release's doing."""
        if release.webhook is None or release.index not in self.release_webhooks:
            return False
        return self.by_webhook(release, crd)

    def by_webhook(self, release: Release, crd: str) -> bool:
        """Whether ``crd`` converts through a webhook under ``release`` (as the gate installs
        it: a ``convert:`` entry may give a CRD shipped without one its webhook)."""
        if crd not in release.crds:
            return False
        pointed = self.pointed(release.crds[crd], release)
        return (pointed["spec"].get("conversion") or {}).get("strategy") == "Webhook"

    def sample_bodies(self, crd: str, version: str) -> list[dict]:
        """The user's samples of ``crd`` written at ``version``, as bodies to create."""
        return [
            objects.sample_body(s)
            for s in self.samples.get(crd, [])
            if s["apiVersion"].endswith(f"/{version}")
        ]

    def excused(
        self,
        difference: diff.Difference,
        a: str,
        b: str,
        crd: str,
        release: Release | None = None,
    ) -> tuple[str, str] | None:
        """Why a difference between versions ``a`` and ``b`` of ``crd`` (as ``release``, by
        default the candidate, declares them) is not a finding: ("allowed", note) for an
        ``allow`` entry; unless ``strict``, ("normalised", note) for a zero value (``false``,
        ``0``, ``""``) read back absent or the reverse, where each version's schema that
        declares the field declares it a plain field with no ``default``, or an empty value
        likewise (``""`` not where a ``default`` is declared), an object that appears holding
        only zero values and defaults (``schemas.defaults_only``), or a duration or time re-spelt as
        Go writes it (``go_values``: ``1h`` -> ``1h0m0s``); None when it is a finding."""
        rule = next((r for r in self.config.allow if r.covers(difference.path, a, b)), None)
        if rule is not None:
            return "allowed", f"{difference.path} ({rule.reason})"
        if self.config.strict or difference.path.startswith("metadata."):
            # An annotation or label "" is a value (a marker): Go's map[string]string and
            # the API server keep it, so one read back absent was lost.
            return None
        if difference.zero_value:
            # A Go reader of a plain bool or int cannot tell absent from its zero value; the
            # API server can, where a default would fill in something else on the next read.
            at = release or self.candidate
            versions = [at.version(crd, v) or {} for v in {a, b}]
            paths = {difference.path, *difference.zero_leaves()}
            kinds = {schemas.zero_field(version, path) for version in versions for path in paths}
            if "defaulted" in kinds and not all(
                schemas.defaults_to_zero(version, path) for version in versions for path in paths
            ):
                return None
            if kinds - {None} <= {"plain", "defaulted"} and kinds - {None}:
                return "normalised", f"{difference.describe()} (zero value)"
        if difference.normalised:
            return "normalised", difference.describe()
        if difference.change == "added":  # never a loss: a value written is data
            at = release or self.candidate
            versions = [at.version(crd, v) or {} for v in {a, b}]
            if schemas.defaults_only(versions, difference.path, difference.after):
                return "normalised", (
                    f"{difference.describe()} (only zero values and the schema's defaults: a "
                    "Go struct without omitempty, defaulted by the API server)"
                )
        if difference.change == "changed" and go_values.respelt(
            difference.before, difference.after
        ):
            return "normalised", f"{difference.describe()} (the same value, as Go spells it)"
        return None

    def resource(self, crd: str) -> Resource:
        """Where ``crd``'s objects live, as its latest release says."""
        for release in reversed(self.releases):
            if crd in release.crds:
                return Resource.of(release.crds[crd])
        raise KeyError(crd)

    def create(
        self,
        manifest: dict,
        entry: dict,
        version: str,
        name: str,
        namespace: str | None,
        body: dict,
        refusals: list[Answer] | None = None,
    ) -> dict | None:
        """Create an object (and its status, through the subresource); None if refused.
        A refusal is counted as refused input, or, given ``refusals``, added to it (the
        caller judges it). Raises ``NotConvertible`` when the server fails to store it."""
        resource = Resource.of(manifest)
        obj = objects.manifest(manifest, version, name, namespace, body)
        created = call(self.cluster, "POST", resource.path(version, namespace), obj)
        self.screening.sent(manifest, version, body, None if created.ok else created)
        if created.status >= 500:  # the input was fine; storing it failed (conversion)
            failure = NotConvertible(
                f"an object valid at {version} cannot be created: {created.message}",
                [f"POST at {version}: {created.status} {created.message}"],
                [(f"sent at {version}", obj)],
            )
            failure.answer = created
            raise failure
        if not created.ok:
            if refusals is not None:
                refusals.append(created)
            else:
                self.count_refusal(created)
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
                call(self.cluster, "DELETE", resource.path(version, namespace, name))
                if put.status >= 500:  # a status the schema allows that storing failed on
                    failure = NotConvertible(
                        f"an object valid at {version} cannot have its status written: "
                        f"{put.message}",
                        [f"PUT {version}/status: {put.status} {put.message}"],
                        [(f"sent at {version}", {**obj, "status": body["status"]})],
                    )
                    failure.answer = put
                    raise failure
                if refusals is not None:
                    refusals.append(put)
                else:
                    self.count_refusal(put, "status ")
                return None
            return put.body
        return created.body

    def note_sample_refused(
        self, release: int, crd: str, version: str, body: dict, answer: Answer
    ) -> None:
        """Release ``release`` refuses one of the user's samples at ``version``: kept, so that
        the next release refusing it too is not the upgrade's finding (``sample_refused``)."""
        key = (release, crd, version, json.dumps(body, sort_keys=True, default=str))
        self.samples_refused.setdefault(key, f"{answer.status} {answer.message}")

    def sample_refused(self, release: int, crd: str, version: str, body: dict) -> str | None:
        """How release ``release`` refused this sample at ``version``, if it did."""
        key = (release, crd, version, json.dumps(body, sort_keys=True, default=str))
        return self.samples_refused.get(key)

    def count_refusal(self, answer: Answer, what: str = "") -> None:
        """An object the server refused: not a finding, but counted and shown once."""
        if "admission webhook" in answer.message:
            why = f"{what}refused by an admission webhook"
        elif answer.message.startswith(LOCALLY):  # not sent: the rule is in the message
            why = f"{what}{LOCALLY}"
        elif "conversion webhook" in answer.message:
            why = f"{what}failed by the conversion webhook ({answer.status})"
        else:
            why = f"{what}refused by the API server's validation ({answer.status})"
        self.count(why, answer.message)

    def count(self, why: str, message: str) -> None:
        """One object refused for ``why``; the first ``message`` for it is kept to show, so
        the user sees why (and can write samples that pass)."""
        with self._counting:
            self.refused[why] += 1
            self.refused_examples.setdefault(why, message[:300])
            cause = refusal.cause(message)
            self.refused_causes[cause] += 1
            pair = PAIR_CAUSES.get()
            if pair is not None:
                pair[cause] += 1
