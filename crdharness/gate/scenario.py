"""The gate's scenario: replay the user's release history on a real cluster, then put the
candidate release through round trips, and judge the webhook by what it answered.

Two phases, each run once and only when a check needs it:

- **history** — apply each release on top of the previous one (checks *install*,
  *upgrade*, *migration*, *deprecation*): objects written at every served version under
  release i must read back unchanged under release i+1, with their etcd keys untouched; where a
  release changes the storage version the gate migrates, as the documentation tells users to;
  a release that removes a version still in ``status.storedVersions`` is refused (422).
- **candidate** — for every ordered pair (A, B) of the candidate's served versions: create at
  A, read at B, update at B, read at A (*round-trip*, *convertibility*), with objects
  generated from A's schema and shrunk to a minimal one on failure; plus *schemas-vs-strategy*.

*webhook-conduct* reads the exchanges the recording proxy kept (``gate.webhook``).
"""

from __future__ import annotations

import itertools
import statistics
import time
from collections import Counter
from dataclasses import dataclass, field

from crdharness import migrate
from crdharness.cluster import Cluster
from crdharness.gate import diff, objects
from crdharness.gate.api import Answer, Resource, apply_crd, call, read_crd, wait_settled
from crdharness.gate.config import GateConfig
from crdharness.gate.manifests import Release
from crdharness.gate.results import CheckResult
from crdharness.progress import Reporter

TOUCH = "gate.crdharness.io/round-trip"
HISTORY_NS = "gate-history"
ROUND_TRIP_NS = "gate-round-trip"
LABELS = "__labels__"  # a sample's labels travel in its body under this key


def default_warning(group: str, version: str, kind: str, versions: list[dict]) -> str:
    """The API server's text for a deprecated version without ``deprecationWarning``: it
    names the highest-priority served, non-deprecated version above it, if there is one
    (apiextensions-apiserver's defaultDeprecationWarning)."""
    text = f"{group}/{version} {kind} is deprecated"
    newer = [
        v["name"]
        for v in versions
        if v.get("served") and not v.get("deprecated") and priority(v["name"]) > priority(version)
    ]
    if newer:
        text += f"; use {group}/{max(newer, key=priority)} {kind}"
    return text


def priority(version: str) -> tuple:
    """Kubernetes version priority as a sortable key: v2 > v1 > v1beta2 > v1beta1 >
    v1alpha1 > anything else (those by name, the first alphabetically highest)."""
    import re

    match = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if not match:
        return (0, 0, 0, (*(-ord(c) for c in version), 1))  # 1 ends it: "foo1" > "foo10"
    major, stage, minor = match.groups()
    rank = {"alpha": 1, "beta": 2, None: 3}[stage]
    return (1, rank, int(major), int(minor or 0)) if stage else (1, 3, int(major), 0)


@dataclass
class Written:
    """An object the history phase wrote, and what it looked like then."""

    crd: str
    version: str  # written at
    name: str
    namespace: str | None
    seen: dict[str, dict] = field(default_factory=dict)  # version -> object read at it


class RoundTripFailure(Exception):
    """Raised inside a hypothesis run so it shrinks the object to a minimal one. One class
    per check: hypothesis shrinks a failure only to examples failing the same way."""

    check = ""

    def __init__(self, evidence: str, details: list[str], shown: list):
        super().__init__(evidence)
        self.evidence, self.details, self.shown = evidence, details, shown

    @property
    def size(self) -> int:
        return len(repr(self.shown[0][1])) if self.shown else 0


class NotConvertible(RoundTripFailure):
    check = "convertibility"


class DataChanged(RoundTripFailure):
    check = "round-trip"


class GateRun:
    def __init__(
        self,
        cluster: Cluster,
        config: GateConfig,
        releases: list[Release],
        samples: dict[str, list[dict]],
        report: Reporter,
        webhook=None,
    ):
        self.cluster = cluster
        self.config = config
        self.releases = releases
        self.samples = samples
        self.report = report
        self.webhook = webhook
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
            {"history": self._history, "candidate": self._candidate, "conduct": self._conduct}[
                phase
            ]()
        finally:
            self.timings[phase] = round(time.perf_counter() - started, 2)

    def _name(self, prefix: str) -> str:
        return f"{prefix}-{next(self._names)}"

    # == history ===========================================================================

    def _history(self) -> None:
        from crdharness.gate.api import ensure_namespace

        ensure_namespace(self.cluster, HISTORY_NS)
        written: list[Written] = []
        for release in self.releases:
            i = release.index
            self.report(f"gate: release {i + 1}/{len(self.releases)} ({release.label})")
            before = self._etcd_snapshot(written) if i else {}
            stored_before = {name: self._stored_versions(name) for name in release.crds}
            if not self._install(release, stored_before):
                return  # later releases cannot be applied on top of a refused one
            if i:
                self._check_upgrade(release, written, before, stored_before)
                self._check_removal_policy(release)
            self._check_warnings(release, f"release {i + 1}")
            written += self._write_objects(release)
            self._migrate_if_needed(release, written)
        self.history_completed = True

    def _install(self, release: Release, stored_before: dict[str, list[str]]) -> bool:
        result = self.result("install", f"release {release.index + 1}")
        for name, manifest in release.crds.items():
            answer = apply_crd(self.cluster, self._pointed(manifest))
            if not answer.ok:
                result.fail(f"the API server refused {name}: {answer.message}")
                self._explain_refusal(release, name, stored_before.get(name, []), answer)
                return False
            wait_settled(self.cluster, manifest)
            crd = read_crd(self.cluster, name) or {}
            names = _condition(crd, "NamesAccepted")
            if names.get("status") != "True":
                result.fail(f"{name}: names not accepted: {names.get('message')}")
        for name in release.crds:
            removed = [v for v in stored_before.get(name, []) if v not in release.names(name)]
            dropped = self._dropped_versions(release, name)
            if dropped and not removed:
                self.result(
                    "migration", f"release {release.index}->{release.index + 1}"
                ).evidence = (
                    f"{name}: removed {', '.join(dropped)} no longer in status.storedVersions "
                    f"{stored_before.get(name)}: accepted"
                )
        if result.passed:
            verb = "created" if release.index == 0 else "applied on top of the previous release"
            result.evidence = f"{', '.join(release.crds)} {verb}; Established, names accepted"
        return result.passed is not False

    def _dropped_versions(self, release: Release, name: str) -> list[str]:
        if release.index == 0:
            return []
        previous = self.releases[release.index - 1]
        return [v for v in previous.names(name) if v not in release.names(name)]

    def _explain_refusal(self, release, name, stored: list[str], answer: Answer) -> None:
        """A release that drops a version clusters still store: check *migration*'s finding."""
        removed = [v for v in stored if v not in release.names(name)]
        if not removed:
            return
        result = self.result("migration", f"release {release.index}->{release.index + 1}")
        versions = ", ".join(removed)
        result.fail(
            f"clusters that still store {versions} reject this revision with {answer.status}: "
            "ship a release that migrates first",
            f"status.storedVersions before the upgrade: {stored}",
            f"the API server said: {answer.message}",
        )

    def _pointed(self, manifest: dict) -> dict:
        if self.webhook is None:
            return manifest
        from crdharness.gate.manifests import point_conversion

        return point_conversion(manifest, self.webhook.reach, self.config.webhook)

    def _stored_versions(self, name: str) -> list[str]:
        crd = read_crd(self.cluster, name)
        return list(((crd or {}).get("status") or {}).get("storedVersions") or [])

    def _etcd_snapshot(self, written: list[Written]) -> dict:
        if self.cluster.etcd is None:
            return {}
        snapshot = {}
        for obj in written:
            resource = self._resource(obj.crd)
            stored = self.cluster.stored(resource.group, resource.plural, obj.name, obj.namespace)
            if stored is not None:
                snapshot[(obj.crd, obj.name)] = (stored.mod_revision, stored.api_version)
        return snapshot

    def _resource(self, crd: str) -> Resource:
        for release in reversed(self.releases):
            if crd in release.crds:
                return Resource.of(release.crds[crd])
        raise KeyError(crd)

    def _check_upgrade(self, release, written, before, stored_before) -> None:
        result = self.result("upgrade", f"release {release.index}->{release.index + 1}")
        checked = 0
        for obj in written:
            if obj.crd not in release.crds:
                continue
            resource = self._resource(obj.crd)
            served = release.served(obj.crd)
            for version in served:
                got = call(self.cluster, "GET", resource.path(version, obj.namespace, obj.name))
                if not got.ok:
                    result.fail(
                        f"{obj.name} (written at {obj.version}) cannot be read at {version}",
                        f"GET {obj.name} at {version}: {got.status} {got.message}",
                    )
                    continue
                checked += 1
                if version in obj.seen:
                    found = diff.differences(
                        diff.comparable(obj.seen[version]), diff.comparable(got.body)
                    )
                    if found:
                        result.fail(
                            f"{obj.name} read at {version} changed with the upgrade: "
                            + "; ".join(d.describe() for d in found[:3]),
                            *(f"{obj.name} at {version}: {d.describe()}" for d in found),
                        )
                        result.objects.append(
                            (f"{obj.name} at {version} before", obj.seen[version])
                        )
                        result.objects.append((f"{obj.name} at {version} after", got.body))
                obj.seen[version] = got.body
            for version in served:
                listed = call(self.cluster, "GET", resource.path(version, obj.namespace))
                names = [i["metadata"]["name"] for i in (listed.body or {}).get("items", [])]
                if not listed.ok or obj.name not in names:
                    result.fail(
                        f"LIST at {version} does not return {obj.name}",
                        f"LIST at {version}: {listed.status} {'' if listed.ok else listed.message}",
                    )
        proven_untouched = self._check_untouched(result, written, before)
        for name in release.crds:
            expected = set(stored_before.get(name) or []) | {release.storage(name)}
            if not stored_before.get(name):
                expected = {release.storage(name)}
            actual = set(self._stored_versions(name))
            if actual != expected:
                result.fail(
                    f"{name}: status.storedVersions is {sorted(actual)}, the documentation says "
                    f"{sorted(expected)}"
                )
        if result.passed is not False:
            etcd = (
                f"; {proven_untouched} etcd keys untouched (mod_revision and stored apiVersion)"
                if self.cluster.etcd is not None
                else "; stored bytes not checked: no etcd access on this cluster"
            )
            result.evidence = (
                f"{len(written)} objects read at every served version ({checked} reads), "
                f"unchanged{etcd}"
            )

    def _check_untouched(self, result, written, before) -> int:
        if self.cluster.etcd is None:
            if result.passed:
                result.passed = None
            result.details.append("etcd is not reachable: stored bytes not proven untouched")
            return 0
        after = self._etcd_snapshot(written)
        untouched = 0
        for key, (revision, api_version) in before.items():
            now = after.get(key)
            if now is None:
                result.fail(f"{key[1]}: its etcd key vanished with the upgrade")
            elif now != (revision, api_version):
                result.fail(
                    f"{key[1]}: applying the release rewrote it in etcd "
                    f"(mod_revision {revision}->{now[0]}, stored {api_version}->{now[1]})"
                )
            else:
                untouched += 1
        return untouched

    def _check_removal_policy(self, release: Release) -> None:
        previous = self.releases[release.index - 1]
        subject = f"release {release.index}->{release.index + 1}"
        result = self.result("deprecation", subject)
        for name in release.crds:
            gone = [v for v in previous.served(name) if v not in release.served(name)]
            for version in gone:
                ever = any(version in r.deprecated(name) for r in self.releases[: release.index])
                if not ever:
                    how = "removed" if version not in release.names(name) else "no longer served"
                    text = (
                        f"{name}: {version} is {how} in release {release.index + 1} but was "
                        "never deprecated in an earlier release"
                    )
                    if self.config.require_deprecation_before_removal:
                        result.fail(text)
                    else:
                        result.details.append(f"{text} (allowed by policy)")
        if result.passed:
            result.evidence = (
                result.evidence or "every version unserved or removed was deprecated first"
            )

    def _check_warnings(self, release: Release, subject: str) -> None:
        """Deprecated versions answer get, list, create and update with a Warning header."""
        result = self.result("deprecation", subject)
        checked = []
        for name, manifest in release.crds.items():
            resource = Resource.of(manifest)
            for version, custom in release.deprecated(name).items():
                expected = custom or default_warning(
                    resource.group, version, resource.kind, release.versions(name)
                )
                obj_name = self._name("deprecation")
                body = objects.manifest(manifest, version, obj_name, HISTORY_NS, {})
                answers = {
                    "create": call(self.cluster, "POST", resource.path(version, HISTORY_NS), body)
                }
                if not answers["create"].ok:
                    result.fail(
                        f"{name}: cannot create an empty object at {version}: "
                        + answers["create"].message
                    )
                    continue
                answers["get"] = call(
                    self.cluster, "GET", resource.path(version, HISTORY_NS, obj_name)
                )
                answers["list"] = call(self.cluster, "GET", resource.path(version, HISTORY_NS))
                updated = answers["get"].body or {}
                updated.setdefault("metadata", {}).setdefault("labels", {})["gate"] = "updated"
                answers["update"] = call(
                    self.cluster, "PUT", resource.path(version, HISTORY_NS, obj_name), updated
                )
                call(self.cluster, "DELETE", resource.path(version, HISTORY_NS, obj_name))
                for verb, answer in answers.items():
                    if expected not in answer.warnings:
                        result.fail(
                            f"{name}: {verb} at deprecated {version} did not warn {expected!r}",
                            f"{verb} at {version}: {answer.status}, warnings {answer.warnings}",
                        )
                checked.append(f"{version} ({'custom' if custom else 'default'} text)")
        if result.passed:
            result.evidence = (
                f"Warning header on get, list, create and update at {', '.join(checked)}"
                if checked
                else "no deprecated served version"
            )

    def _write_objects(self, release: Release) -> list[Written]:
        """Objects at every served version (samples, then generated), read back at each."""
        written = []
        for name, manifest in release.crds.items():
            resource = Resource.of(manifest)
            for entry in release.versions(name):
                if not entry.get("served"):
                    continue
                version = entry["name"]
                bodies = [
                    objects.sample_body(s)
                    for s in self.samples.get(name, [])
                    if s["apiVersion"].endswith(f"/{version}")
                ]
                bodies += objects.first_examples(
                    entry, self.config.upgrade_objects, self.config.seed
                )
                for body in bodies:
                    obj_name = self._name(f"r{release.index + 1}-{version}")
                    try:
                        created = self._create(manifest, entry, version, obj_name, HISTORY_NS, body)
                    except NotConvertible as failure:
                        # The candidate's convertibility check judges this on its own
                        # objects; here it only means one object fewer for the upgrade.
                        why = f"could not be stored at {version} (conversion failed)"
                        self.refused[why] += 1
                        self.refused_examples.setdefault(why, failure.evidence[:300])
                        continue
                    if created is None:
                        continue
                    record = Written(
                        name, version, obj_name, HISTORY_NS if resource.namespaced else None
                    )
                    for other in release.served(name):
                        got = call(
                            self.cluster, "GET", resource.path(other, record.namespace, obj_name)
                        )
                        if got.ok:
                            record.seen[other] = got.body
                    written.append(record)
        self.report(f"gate: release {release.index + 1}: {len(written)} objects written")
        return written

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
        labels = body.pop(LABELS, None)
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

    def _migrate_if_needed(self, release: Release, written: list[Written]) -> None:
        for name in release.crds:
            storage = release.storage(name)
            stored = self._stored_versions(name)
            if set(stored) == {storage}:
                continue
            subject = f"release {release.index + 1}"
            result = self.result("migration", subject)
            resource = Resource.of(release.crds[name])
            self.report(f"gate: {name}: migrating every object to {storage} (stored: {stored})")
            outcome = migrate.migrate(
                self.cluster.api_client, resource.group, storage, resource.plural
            )
            if self.cluster.etcd is not None:
                keys = self.cluster.etcd.list(f"/registry/{resource.group}/{resource.plural}/")
                behind = [k.key for k in keys if k.api_version != f"{resource.group}/{storage}"]
                if behind:
                    result.fail(
                        f"{len(behind)} etcd keys still not at {storage} after migration", *behind
                    )
                    continue
                proof = f"all {len(keys)} etcd keys at {storage}"
            else:
                # Every object was rewritten through the API, which stores at the storage
                # version: the documented procedure, completed; only the proof is missing.
                result.passed = None
                proof = "not proven from etcd (no etcd access on this cluster)"
            patched = call(
                self.cluster,
                "PUT",
                f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}/status",
                _with_stored_versions(read_crd(self.cluster, name), [storage]),
            )
            if not patched.ok:
                result.fail(f"{name}: cannot set status.storedVersions: {patched.message}")
                continue
            result.evidence = (
                f"{name}: {len(outcome.rewritten)} objects rewritten ({outcome.conflicts} "
                f"conflicts retried); {proof}; storedVersions {stored} -> [{storage}]"
            )

    # == candidate =========================================================================

    def _candidate(self) -> None:
        from crdharness.gate.api import delete_crd, ensure_namespace

        if not self.history_completed:
            # Round trips need the candidate installed; without the history (or after a
            # release was refused) it is installed on its own.
            for name, manifest in self.candidate.crds.items():
                if read_crd(self.cluster, name) is not None:
                    delete_crd(self.cluster, name)
                answer = apply_crd(self.cluster, self._pointed(manifest))
                if not answer.ok:
                    for check in ("round-trip", "convertibility"):
                        for subject in self.pairs(name):
                            self.result(check, subject).fail(
                                f"the candidate's {name} cannot be installed: {answer.message}"
                            )
                    return
                wait_settled(self.cluster, manifest)
        ensure_namespace(self.cluster, ROUND_TRIP_NS)
        for name in self.candidate.crds:
            self._check_strategy(name)
            for a, b in itertools.permutations(self.candidate.served(name), 2):
                self._round_trips(name, a, b)

    def pairs(self, name: str) -> list[str]:
        return [
            f"{name} {a}->{b}" for a, b in itertools.permutations(self.candidate.served(name), 2)
        ]

    def _round_trips(self, name: str, a: str, b: str) -> None:
        subject = f"{name} {a}->{b}"
        round_trip = self.result("round-trip", subject)
        convertible = self.result("convertibility", subject)
        manifest = self.candidate.crds[name]
        entry = next(v for v in self.candidate.versions(name) if v["name"] == a)
        tally = Counter()
        started = time.perf_counter()
        self.report(f"gate: {subject}: round trips ({self.config.generate} generated objects)")

        def attempt(body: dict, ignore: set[str]) -> None:
            failure = self._round_trip(manifest, entry, a, b, body, tally)
            if failure is not None and failure.check not in ignore:
                raise failure

        for sample in self.samples.get(name, []):
            if sample["apiVersion"].endswith(f"/{a}"):
                try:
                    attempt(objects.sample_body(sample), set())
                except RoundTripFailure as failure:
                    self._record(failure, round_trip, convertible, shrunk=False)
        ignore: set[str] = set()
        for _ in range(2):  # a second search for the other kind of failure, if one was found
            failure = self._search(entry, lambda body, i=frozenset(ignore): attempt(body, set(i)))
            if failure is None:
                break
            self._record(failure, round_trip, convertible, shrunk=True)
            ignore.add(failure.check)
        for result in (round_trip, convertible):
            result.counts = dict(tally)
        self.timings[f"round trips {subject}"] = round(time.perf_counter() - started, 2)
        if round_trip.passed:
            round_trip.evidence = f"{tally['compared']} objects equal after {a}->{b}->{a}" + (
                f" ({len(round_trip.allowed)} allowed differences)" if round_trip.allowed else ""
            )
        if convertible.passed:
            convertible.evidence = (
                f"{tally['created']} objects valid at {a} read and written at {b}"
            )
        for result in (round_trip, convertible):
            if tally["created"] == 0 and result.passed:
                result.passed = False
                result.evidence = (
                    f"no object could be created at {a} (refused: {dict(self.refused)}): add "
                    "samples that the API server accepts"
                )

    def _search(self, entry: dict, test) -> RoundTripFailure | None:
        """Run ``test`` on generated bodies; the minimal failure hypothesis shrank to."""
        if not self.config.generate:
            return None
        from hypothesis import HealthCheck, given, settings
        from hypothesis import seed as fixed_seed
        from hypothesis.errors import Flaky

        last: list[RoundTripFailure] = []

        @fixed_seed(self.config.seed)
        @settings(
            max_examples=self.config.generate,
            database=None,
            deadline=None,
            report_multiple_bugs=False,
            suppress_health_check=list(HealthCheck),
            print_blob=False,
        )
        @given(objects.bodies(entry))
        def run(body):
            try:
                test(body)
            except RoundTripFailure as failure:
                last.append(failure)
                raise

        try:
            run()
        except RoundTripFailure as failure:
            return failure  # hypothesis re-raises the minimal example's failure last
        except Flaky:
            # A failure that did not repeat on replay: report the smallest object seen failing.
            return min(last, key=lambda f: f.size) if last else None
        return None

    def _record(self, failure: RoundTripFailure, round_trip, convertible, shrunk: bool) -> None:
        result = round_trip if failure.check == "round-trip" else convertible
        result.fail(failure.evidence, *failure.details)
        label = "minimal object (shrunk)" if shrunk else "sample"
        for title, obj in failure.shown:
            result.objects.append((f"{label}: {title}", obj))

    def _round_trip(self, manifest, entry, a, b, body, tally) -> RoundTripFailure | None:
        resource = Resource.of(manifest)
        namespace = ROUND_TRIP_NS if resource.namespaced else None
        name = self._name(f"rt-{a}-{b}".lower())
        try:
            created = self._create(manifest, entry, a, name, namespace, body)
        except NotConvertible as failure:
            return failure
        if created is None:
            tally["refused"] += 1
            return None
        tally["created"] += 1
        try:
            return self._compare(resource, namespace, name, a, b, body, tally)
        finally:
            call(self.cluster, "DELETE", resource.path(a, namespace, name))

    def _compare(self, resource, namespace, name, a, b, body, tally):
        read = call(self.cluster, "GET", resource.path(a, namespace, name))
        if not read.ok:
            intent = {k: v for k, v in body.items() if k != LABELS}
            sent = objects.manifest(
                self.candidate.crds[self._crd_of(resource)], a, name, namespace, intent
            )
            return NotConvertible(
                f"an object written at {a} cannot be read back at {a}: {read.message}",
                [f"GET at {a}: {read.status} {read.message}"],
                [(f"sent at {a}", sent)],
            )
        original = read.body
        shown = [(f"written at {a}", _clean(original))]
        # What was written must read back at the same version: a version other than the
        # storage version goes through the webhook on the way in, and can lose data there.
        # Fields that appear (defaults) are not losses. (A dry-run create cannot serve as the
        # reference: it converts to the storage version too, and hides the loss.)
        intent = {k: v for k, v in body.items() if k != LABELS}
        kept = {k: v for k, v in original.items() if k in intent}
        lost = [d for d in diff.differences(intent, kept) if d.change != "added"]
        lost = [d for d in lost if not any(r.covers(d.path, a, b) for r in self.config.allow)]
        if lost:
            paths = ", ".join(sorted({d.path for d in lost}))
            sent = objects.manifest(
                self.candidate.crds[self._crd_of(resource)], a, name, namespace, intent
            )
            return DataChanged(
                f"written at {a}, read back at {a}: changed {paths}",
                [d.describe() for d in lost],
                [(f"sent at {a}", sent), (f"read back at {a}", _clean(original))],
            )
        at_b = call(self.cluster, "GET", resource.path(b, namespace, name))
        if not at_b.ok:
            return NotConvertible(
                f"an object valid at {a} cannot be read at {b}: {at_b.message}",
                [f"GET at {b}: {at_b.status} {at_b.message}"],
                shown,
            )
        shown.append((f"read at {b}", _clean(at_b.body)))

        def touch(current: dict) -> dict:
            current.setdefault("metadata", {}).setdefault("annotations", {})[TOUCH] = b
            return current

        updated = self._write_with_retry(resource.path(b, namespace, name), touch)
        if not updated.ok:
            return NotConvertible(
                f"an object read at {b} cannot be written back at {b}: {updated.message}",
                [f"PUT at {b}: {updated.status} {updated.message}"],
                shown,
            )
        back = call(self.cluster, "GET", resource.path(a, namespace, name))
        if not back.ok:
            return NotConvertible(
                f"an object written at {b} cannot be read at {a}: {back.message}",
                [f"GET at {a}: {back.status} {back.message}"],
                shown,
            )
        shown.append((f"read back at {a}", _clean(back.body)))
        tally["compared"] += 1
        found = diff.differences(
            diff.comparable(original), diff.comparable(back.body, ignore_annotations=(TOUCH,))
        )
        excused = [d for d in found if any(rule.covers(d.path, a, b) for rule in self.config.allow)]
        result = self.result("round-trip", f"{self._crd_of(resource)} {a}->{b}")
        for d in excused:
            reason = next(r.reason for r in self.config.allow if r.covers(d.path, a, b))
            note = f"{d.path} ({reason})"
            if note not in result.allowed:
                result.allowed.append(note)
        found = [d for d in found if d not in excused]
        if found:
            paths = ", ".join(sorted({d.path for d in found}))
            return DataChanged(
                f"{a}->{b}->{a} changed {paths}",
                [d.describe() for d in found],
                shown,
            )
        return None

    def _crd_of(self, resource: Resource) -> str:
        return f"{resource.plural}.{resource.group}"

    def _check_strategy(self, name: str) -> None:
        result = self.result("schemas-vs-strategy", name)
        strategy = self.candidate.strategy(name)
        if self.webhook is not None and name in (self.config.webhook.convert or []):
            strategy = "Webhook"
        served = [v for v in self.candidate.versions(name) if v.get("served")]
        if strategy != "None" or len(served) < 2:
            result.evidence = f"strategy {strategy}" + (
                "" if strategy != "None" else " with one served version"
            )
            return
        fields = {v["name"]: _schema_fields(v) for v in served}
        problems = []
        for a, b in itertools.permutations(fields, 2):
            for path, kind in sorted(fields[a].items()):
                if path not in fields[b]:
                    problems.append(f"{path} exists at {a} but not at {b}: lost when read at {b}")
                elif fields[b][path] != kind:
                    problems.append(
                        f"{path} is {kind} at {a} but {fields[b][path]} at {b}: invalid at {b}"
                    )
        if problems:
            result.fail(
                f"strategy None but the served versions' schemas differ ({len(problems)} fields): "
                "with None only apiVersion changes, so these fields are lost or invalid",
                *problems,
            )
        else:
            result.evidence = "strategy None and the served versions share one schema"

    # == conduct ===========================================================================

    def _conduct(self) -> None:
        result = self.result("webhook-conduct", "webhook")
        if self.webhook is None:
            result.evidence = "no conversion webhook in this history"
            return
        if self.webhook.proxy is None:
            result.passed = None
            result.evidence = (
                "not proven: the API server calls the webhook through its Service here, "
                "without the gate's recording proxy (run the gate on --cluster=local for this)"
            )
            return
        exchanges = [e for e in self.webhook.proxy.exchanges if e.kind == "ConversionReview"]
        timeouts = self._timeouts()
        problems = []
        for e in exchanges:
            problems += _conduct_problems(e, timeouts)
        latencies = sorted(e.seconds for e in exchanges)
        result.counts = {"reviews": len(exchanges)}
        if latencies:
            p50 = statistics.median(latencies) * 1000
            p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000
            result.counts |= {"p50_ms": round(p50, 2), "p99_ms": round(p99, 2)}
            latency = f"p50 {p50:.1f} ms, p99 {p99:.1f} ms"
        else:
            latency = "no review seen"
        if problems:
            result.fail(
                f"{len(problems)} misbehaving answers of {len(exchanges)}: {problems[0]}", *problems
            )
        else:
            result.evidence = f"{len(exchanges)} reviews answered correctly; {latency}"
        result.details.insert(0, f"latency per review (through the proxy): {latency}")

    def _timeouts(self) -> dict[str, float]:
        out = {}
        for release in self.releases:
            for manifest in release.crds.values():
                hook = (manifest["spec"].get("conversion") or {}).get("webhook") or {}
                out[manifest["spec"]["group"]] = float(hook.get("timeoutSeconds", 10))
        return out


def _conduct_problems(e, timeouts: dict[str, float]) -> list[str]:
    request = (e.request or {}).get("request") or {}
    uid = request.get("uid")
    count = len(request.get("objects") or [])
    where = f"review {uid} ({count} objects to {request.get('desiredAPIVersion')})"
    if e.error:
        return [f"{where}: unreachable: {e.error}"]
    if e.status != 200:
        return [f"{where}: HTTP {e.status}"]
    answer = e.answer if isinstance(e.answer, dict) else None
    if answer is None or not isinstance(answer.get("response"), dict):
        return [f"{where}: the answer is not a ConversionReview with a response: {e.answer_text!r}"]
    problems = []
    group = str(request.get("desiredAPIVersion", "")).partition("/")[0]
    if e.seconds > timeouts.get(group, 10):
        problems.append(f"{where}: took {e.seconds:.1f}s, over the CRD's timeout")
    if answer.get("apiVersion") != (e.request or {}).get("apiVersion"):
        problems.append(
            f"{where}: answered as {answer.get('apiVersion')}, "
            f"asked as {e.request.get('apiVersion')}"
        )
    response = answer["response"]
    if response.get("uid") != uid:
        problems.append(f"{where}: answered uid {response.get('uid')}")
    status = (response.get("result") or {}).get("status")
    if status != "Success":
        return problems  # a refusal is judged by convertibility, not here
    sent = request.get("objects") or []
    got = response.get("convertedObjects") or []
    if len(got) != len(sent):
        problems.append(f"{where}: {len(sent)} objects sent, {len(got)} returned")
        return problems
    for before, after in zip(sent, got, strict=True):
        if after.get("apiVersion") != request.get("desiredAPIVersion"):
            problems.append(f"{where}: an object came back at {after.get('apiVersion')}")
        for d in diff.differences(
            before.get("metadata") or {}, after.get("metadata") or {}, "metadata"
        ):
            if not d.path.startswith(("metadata.labels", "metadata.annotations")):
                problems.append(
                    f"{where}: changed {d.describe()} (only labels and annotations may change)"
                )
    return problems


def _with_stored_versions(crd: dict, versions: list[str]) -> dict:
    crd = dict(crd)
    crd["status"] = {**(crd.get("status") or {}), "storedVersions": versions}
    return crd


def _condition(crd: dict, kind: str) -> dict:
    from crdharness.gate.api import condition

    return condition(crd, kind)


def _clean(obj: dict) -> dict:
    """An object as a person wants to see it: without managedFields and server bookkeeping."""
    shown = diff.comparable(obj)
    shown["apiVersion"] = obj.get("apiVersion")
    return {"apiVersion": shown.pop("apiVersion"), **shown}


def _schema_fields(version: dict, prefix: str = "") -> dict[str, str]:
    """Every field path of a version's schema, with its type."""
    root = (version.get("schema") or {}).get("openAPIV3Schema") or {}
    found: dict[str, str] = {}

    def walk(node: dict, path: str) -> None:
        for key, child in (node.get("properties") or {}).items():
            if not path and key in ("apiVersion", "kind", "metadata"):
                continue
            here = f"{path}.{key}" if path else key
            found[here] = str(child.get("type", "any"))
            walk(child, here)
        if isinstance(node.get("items"), dict):
            walk(node["items"], f"{path}[]")

    walk(root, prefix)
    return found
