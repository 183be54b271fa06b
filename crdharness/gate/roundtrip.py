"""Phase *candidate*: for every ordered pair (A, B) of the candidate's served versions,
create at A, read at B, update at B, read at A (*round-trip*, *convertibility*), with the
user's samples and objects generated from A's schema, shrunk to a minimal one on failure;
and *schemas-vs-strategy*.
"""

from __future__ import annotations

import itertools
import time
from collections import Counter

from crdharness.gate import diff, objects, schemas
from crdharness.gate.api import (
    Resource,
    apply_crd,
    call,
    read_crd,
    wait_settled,
    write_with_retry,
)
from crdharness.gate.results import DataChanged, NotConvertible, RoundTripFailure

TOUCH = "gate.crdharness.io/round-trip"
MAX_FINDINGS = 3  # distinct failures searched for per version pair


class ShrinkBudgetSpent(BaseException):
    """Raised through hypothesis (not an Exception, so not a failing example) when shrinking
    has taken ``shrink_seconds``: a CI gate that takes 18 minutes to say no gets turned off."""


ROUND_TRIP_NS = "gate-round-trip"


class CandidatePhase:
    """``GateRun``'s candidate phase (``gate.run`` holds the state it uses)."""

    def _candidate(self) -> None:
        from crdharness.gate.api import delete_crd, ensure_namespace

        # Round trips need the candidate installed; without the history (or for a CRD a
        # release of it refused) it is installed on its own.
        alone = [
            name
            for name in self.candidate.crds
            if not self.history_completed or name in self.refused_crds
        ]
        uninstallable = set()
        for name in alone:
            manifest = self.candidate.crds[name]
            if read_crd(self.cluster, name) is not None:
                delete_crd(self.cluster, name)
            answer = apply_crd(self.cluster, self._pointed(manifest))
            if not answer.ok:
                for check in ("round-trip", "convertibility"):
                    for subject in self.pairs(name):
                        self.result(check, subject).fail(
                            f"the candidate's {name} cannot be installed: {answer.message}"
                        )
                uninstallable.add(name)
                continue
            wait_settled(self.cluster, manifest)
        ensure_namespace(self.cluster, ROUND_TRIP_NS)
        for name in self.candidate.crds:
            if name in uninstallable:
                continue
            for a, b in itertools.permutations(self.candidate.served(name), 2):
                self.check_deadline(f"the round trips of {name} {a}->{b}")
                self.working_on(f"round-trip:{name} {a}->{b}", f"convertibility:{name} {a}->{b}")
                self._round_trips(name, a, b)
            self._check_strategy(name)  # after the round trips: it ranks what they lost
        self.working_on(*(f"expected-conversion:{e.subject}" for e in self.config.expect))
        self._check_expectations()
        self.working_on()

    def pairs(self, name: str) -> list[str]:
        return [
            f"{name} {a}->{b}" for a, b in itertools.permutations(self.candidate.served(name), 2)
        ]

    def _round_trips(self, name: str, a: str, b: str) -> None:
        subject = f"{name} {a}->{b}"
        round_trip = self.result("round-trip", subject)
        convertible = self.result("convertibility", subject)
        manifest = self.candidate.crds[name]
        entry = self.candidate.version(name, a)
        tally = Counter()
        started = time.perf_counter()
        self.report(f"gate: {subject}: round trips ({self.config.generate} generated objects)")

        shown: set[str] = set()  # checks and paths already reported for this pair

        def new(failure: RoundTripFailure) -> bool:
            if failure.check == "convertibility":
                return "convertibility" not in shown
            return not failure.paths <= shown

        def remember(failure: RoundTripFailure, label: str) -> None:
            self._record(failure, round_trip, convertible, label)
            self.lost_paths.setdefault(name, set()).update(failure.paths)
            shown.update(failure.paths if failure.check == "round-trip" else {failure.check})

        def attempt(body: dict) -> RoundTripFailure | None:
            return self._round_trip(manifest, entry, a, b, body, tally)

        for body in self.sample_bodies(name, a):
            failure = attempt(body)
            if failure is not None and new(failure):
                remember(failure, "sample")
        # What another pair already found starts this one: no search from scratch. Bodies
        # found from A first, then from other versions (valid at A where the schemas agree;
        # refused, and so only counted, where they do not).
        replay = self.found.get((name, a), []) + [
            body
            for (crd, version), bodies in self.found.items()
            if crd == name and version != a
            for body in bodies
        ]
        for body in replay:
            failure = attempt(body)
            if failure is not None and new(failure):
                remember(failure, "minimal object (found for another pair)")
        shrink_until: list[float] = []  # the pair's shrinking deadline, set at its first failure
        for _ in range(MAX_FINDINGS):  # each search looks for a failure not shown yet
            failure = self._search(name, entry, attempt, new, shrink_until)
            if failure is None:
                break
            remember(failure, "minimal object (shrunk)")
            self.found.setdefault((name, a), []).append(failure.body)
        for result in (round_trip, convertible):
            result.counts = dict(tally)
        self.timings[f"round trips {subject}"] = round(time.perf_counter() - started, 2)
        alone = (
            " (the candidate installed on its own: the history could not apply it)"
            if name in self.refused_crds
            else ""
        )
        if round_trip.passed:
            round_trip.evidence = (
                f"{tally['compared']} objects equal after {a}->{b}->{a}"
                + (
                    f" ({len(round_trip.allowed)} allowed differences)"
                    if round_trip.allowed
                    else ""
                )
                + alone
            )
        if convertible.passed:
            convertible.evidence = (
                f"{tally['created']} objects valid at {a} read and written at {b}" + alone
            )
        for result, count in ((round_trip, tally["compared"]), (convertible, tally["created"])):
            if 0 < count < self.config.min_objects and result.passed:
                result.passed = None
                result.evidence = (
                    f"not proven: only {count} objects reached this check (at least "
                    f"{self.config.min_objects} needed, `min_objects`); refused: "
                    f"{dict(self.refused)}: add samples the API server and your admission "
                    "webhooks accept"
                )
        for result in (round_trip, convertible):
            if tally["created"] == 0 and result.passed:
                result.passed = False
                result.evidence = (
                    f"no object could be created at {a} (refused: {dict(self.refused)}): add "
                    "samples that the API server accepts"
                )

    def _search(
        self, crd: str, entry: dict, attempt, new, shrink_until: list[float]
    ) -> RoundTripFailure | None:
        """Run ``attempt`` on generated bodies until one fails in a way ``new`` accepts; the
        minimal such failure hypothesis shrank to, within the pair's ``shrink_seconds`` (one
        budget for all of a pair's searches, started at its first failure)."""
        if not self.config.generate:
            return None
        from hypothesis import HealthCheck, given, settings
        from hypothesis import seed as fixed_seed
        from hypothesis import strategies as st
        from hypothesis.errors import Flaky

        seen: list[RoundTripFailure] = []
        budget = self.config.shrink_seconds
        samples = self.sample_bodies(crd, entry["name"])
        drawn = objects.bodies(entry)
        if samples:  # half the user's samples mutated, half drawn from the schema
            drawn = st.one_of(objects.mutations(entry, samples), drawn)

        @fixed_seed(self.config.seed)
        @settings(
            max_examples=self.config.generate,
            database=None,
            deadline=None,
            report_multiple_bugs=False,
            suppress_health_check=list(HealthCheck),
            print_blob=False,
        )
        @given(drawn)
        def run(body):
            if seen and time.monotonic() > shrink_until[0]:
                raise ShrinkBudgetSpent  # keep the smallest failure seen so far
            failure = attempt(body)
            if failure is not None and new(failure):
                failure.body, failure.at = body, time.monotonic()
                if not shrink_until:
                    shrink_until.append(failure.at + budget)
                seen.append(failure)
                raise failure

        try:
            run()
        except RoundTripFailure as failure:
            return failure  # hypothesis re-raises the minimal example's failure last
        except (Flaky, ShrinkBudgetSpent):
            # Out of time, or a failure that did not repeat on replay: the smallest seen.
            return min(seen, key=lambda f: f.size) if seen else None
        return None

    def _record(self, failure: RoundTripFailure, round_trip, convertible, label: str) -> None:
        result = round_trip if failure.check == "round-trip" else convertible
        result.fail(failure.evidence, *failure.details)
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
            return self._compare(resource, namespace, name, a, b, body, created, tally)
        finally:
            # At the storage version where it is served: the answer needs no conversion.
            crd = self._crd_of(resource)
            storage = self.candidate.storage(crd)
            at = storage if storage in self.candidate.served(crd) else a
            call(self.cluster, "DELETE", resource.path(at, namespace, name))

    def _compare(self, resource, namespace, name, a, b, body, created, tally):
        """``created`` is the server's answer to the write at A: the object as stored and read
        back at A (the server decodes what it wrote to etcd and converts it to A), so no GET."""
        crd = self._crd_of(resource)
        result = self.result("round-trip", f"{crd} {a}->{b}")
        sent = objects.manifest(self.candidate.crds[crd], a, name, namespace, body)
        original = created
        shown = [(f"written at {a}", _clean(original))]
        # What was written must read back at the same version: a version other than the
        # storage version goes through the webhook on the way in, and can lose data there.
        # Fields that appear (defaults) are not losses. (A dry-run create cannot serve as the
        # reference: it converts to the storage version too, and hides the loss.)
        wanted = {**objects.intent(body), "metadata": sent["metadata"]}
        kept = {k: v for k, v in original.items() if k in wanted}
        kept["metadata"] = {k: v for k, v in original["metadata"].items() if k in sent["metadata"]}
        lost = [d for d in diff.differences(wanted, kept) if d.change != "added"]
        lost = self._judged(result, lost, a, b)
        if lost:
            paths = ", ".join(sorted({d.path for d in lost}))
            return DataChanged(
                f"written at {a}, read back at {a}: changed {paths}",
                [d.describe() for d in lost],
                [(f"sent at {a}", sent), (f"read back at {a}", _clean(original))],
                _paths(lost),
            )
        at_b = call(self.cluster, "GET", resource.path(b, namespace, name))
        if not at_b.ok:
            return NotConvertible(
                f"an object valid at {a} cannot be read at {b}: {at_b.message}",
                [f"GET at {b}: {at_b.status} {at_b.message}"],
                shown,
            )
        shown.append((f"read at {b}", _clean(at_b.body)))
        # A field with the same path and type at both versions means the same at both: a
        # webhook that swaps two fields both ways survives A->B->A, yet every client of B
        # reads wrong values.
        moved = self._judged(result, self._read_differently(crd, a, b, original, at_b.body), a, b)
        if moved:
            paths = ", ".join(sorted({d.path for d in moved}))
            return DataChanged(
                f"written at {a}, read at {b}: {paths} (same path and type at both) lost or "
                f"changed at {b}",
                [f"at {a} -> at {b}: {d.describe()}" for d in moved],
                shown,
                _paths(moved),
            )

        def touch(current: dict) -> dict:
            current.setdefault("metadata", {}).setdefault("annotations", {})[TOUCH] = b
            return current

        path = resource.path(b, namespace, name)
        updated = write_with_retry(self.cluster, path, touch, current=at_b.body)
        if not updated.ok:
            return NotConvertible(
                f"an object read at {b} cannot be written back at {b}: {updated.message}",
                [f"PUT at {b}: {updated.status} {updated.message}"],
                shown,
            )
        if objects.has_status(self.candidate.version(crd, b)):  # through its own endpoint
            status = write_with_retry(
                self.cluster, path + "/status", lambda c: c, read_path=path, current=updated.body
            )
            if not status.ok:
                return NotConvertible(
                    f"an object read at {b} cannot have its status written at {b}: "
                    f"{status.message}",
                    [f"PUT {b}/status: {status.status} {status.message}"],
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
        found = self._judged(result, found, a, b)
        if found:
            paths = ", ".join(sorted({d.path for d in found}))
            return DataChanged(
                f"{a}->{b}->{a} changed {paths}",
                [d.describe() for d in found],
                shown,
                _paths(found),
            )
        return None

    def _judged(self, result, found: list, a: str, b: str) -> list:
        """The differences that are findings: not excused by an ``allow`` entry (noted in
        ``result.allowed``) and, unless ``strict``, not an empty value that came back absent
        or the reverse (noted in ``result.normalised``)."""
        findings = []
        for d in found:
            rule = next((r for r in self.config.allow if r.covers(d.path, a, b)), None)
            if rule is not None:
                note = f"{d.path} ({rule.reason})"
                if note not in result.allowed:
                    result.allowed.append(note)
            elif not self.config.strict and d.normalised:
                if d.describe() not in result.normalised:
                    result.normalised.append(d.describe())
            else:
                findings.append(d)
        return findings

    def _read_differently(self, crd: str, a: str, b: str, at_a: dict, at_b: dict) -> list:
        shared = schemas.shared_fields(self.candidate, crd, a, b)
        there = diff.leaves(at_b)
        found = []
        for path, value in diff.leaves(at_a).items():
            if path.startswith("metadata.") or diff.schema_path(path) not in shared:
                continue
            if path not in there:
                found.append(diff.Difference(path, "lost", value))
            elif not diff.same(value, there[path]):
                found.append(diff.Difference(path, "changed", value, there[path]))
        return found

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
        grouped = []
        for a, b in itertools.permutations([v["name"] for v in served], 2):
            grouped += schemas.grouped_differences(self.candidate, name, a, b)
        # The subtrees real objects lost in this run's round trips first: the data at stake.
        lost = self.lost_paths.get(name, set())

        def at_stake(path: str) -> bool:
            return any(p == path or p.startswith((path + ".", path + "[")) for p in lost)

        grouped.sort(key=lambda item: not at_stake(item[0]))
        problems = [
            ("data lost in the round trips: " if at_stake(path) else "") + text
            for path, text in grouped
        ]
        if problems:
            stake = sorted({path for path, _ in grouped if at_stake(path)})
            result.fail(
                f"strategy None but the served versions' schemas differ ({len(problems)} "
                "subtrees): with None only apiVersion changes, so these fields are lost or "
                "invalid" + (f"; real objects lost {', '.join(stake)}" if stake else ""),
                *problems,
            )
        else:
            result.evidence = "strategy None and the served versions share one schema"


def _paths(found: list) -> frozenset[str]:
    """The schema paths of differences: one defect at several list items is one finding."""
    return frozenset(diff.schema_path(d.path) for d in found)


def _clean(obj: dict) -> dict:
    """An object as a person wants to see it: without managedFields and server bookkeeping."""
    shown = diff.comparable(obj)
    shown["apiVersion"] = obj.get("apiVersion")
    return {"apiVersion": shown.pop("apiVersion"), **shown}
