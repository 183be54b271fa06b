"""Phase *history*: replay the release history on the cluster as clusters live it (checks
*install*, *upgrade*, *migration*; the removal policy and Warning headers come from
``deprecation``, the migrations a release ships from ``migration``).

Each release is applied on top of the previous one. Objects written at every served version
under release i must read back unchanged under release i+1 (GET and LIST at every served
version) with their etcd keys untouched, and must still be writable (``upgrade_writes``).
Nothing migrates unless the gate file says the release ships a migration, so
``status.storedVersions`` accumulates exactly as the API server keeps it, and a release that
removes a version still listed there is refused (422) as it would be on a real cluster.

A release is many CRDs: one CRD the API server refuses is left out of the later releases
(they cannot be applied on top of it); the others go on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from crdharness.gate import diff, migration, objects, schemas
from crdharness.gate.api import (
    Answer,
    Resource,
    apply_crd,
    call,
    condition,
    ensure_namespace,
    read_crd,
    wait_settled,
)
from crdharness.gate.manifests import Release
from crdharness.gate.results import NotConvertible
from crdharness.gate.upgrade_writes import write_again
from crdharness.polling import WaitTimeout

HISTORY_NS = "gate-history"
SERVER_ERROR = re.compile(r" at [^ :]+: 5\d\d ")  # a write_again line the server failed (5xx)


@dataclass
class Written:
    """An object the history phase wrote, and what it looked like then."""

    crd: str
    version: str  # written at
    name: str
    namespace: str | None
    seen: dict[str, dict] = field(default_factory=dict)  # version -> object read at it
    sent: dict = field(default_factory=dict)  # the body written (fields, status)
    sample: bool = False  # one of the user's samples (an object clusters really hold)


class HistoryPhase:
    """``GateRun``'s history phase (``gate.run`` holds the state it uses)."""

    def _history(self) -> None:
        ensure_namespace(self.cluster, HISTORY_NS)
        written: list[Written] = []
        for release in self.releases:
            i = release.index
            live = self.live(release)
            if not live:
                continue  # every CRD of it was refused earlier: its checks are not reached
            self.report(f"gate: release {i + 1}/{len(self.releases)} ({release.label})")
            self.check_deadline(f"release {i + 1}")
            self.working_on(
                *(p.key for p in self.planned if p.phase == "history" and _about(p.subject, i))
            )
            written = [w for w in written if w.crd not in self.refused_crds]
            before = self._etcd_snapshot(written) if i else {}
            stored_before = {name: migration.stored_versions(self.cluster, name) for name in live}
            if i:  # decided from the manifests alone: also for a release the server refuses
                self._check_removal_policy(release)
            self.refused_crds |= self._install(release, live, stored_before)
            live = self.live(release)
            if not live:
                continue  # nothing of this release is on the cluster: the rest is not reached
            written = [w for w in written if w.crd not in self.refused_crds]
            before = {key: v for key, v in before.items() if key[0] not in self.refused_crds}
            if i:
                self._check_upgrade(release, written, before, stored_before)
            self._check_warnings(release, f"release {i + 1}")
            written += self._write_objects(release)
            self._migrate(release, live, stored_before)
            self.stored_after[i] = {
                name: migration.stored_versions(self.cluster, name) for name in live
            }
        self.history_completed = True  # to its end: refused CRDs are in refused_crds
        self.working_on()

    def live(self, release: Release) -> list[str]:
        """The CRDs of ``release`` the history still carries (none refused before)."""
        return [name for name in release.crds if name not in self.refused_crds]

    def _install(
        self, release: Release, live: list[str], stored_before: dict[str, list[str]]
    ) -> set[str]:
        """Apply every CRD of ``release``; the names the API server refused or never served."""
        result = self.result("install", f"release {release.index + 1}")
        refused: set[str] = set()
        for name in live:
            manifest = release.crds[name]
            answer = apply_crd(self.cluster, self._pointed(manifest))
            if not answer.ok:
                result.fail(
                    f"the API server refused {name}: {answer.message}",
                    f"{name}: {answer.status} {answer.message}",
                )
                self._explain_refusal(release, name, stored_before.get(name, []), answer)
                refused.add(name)
                continue
            try:
                wait_settled(self.cluster, manifest)
            except WaitTimeout as exc:
                # Seen: stored objects the webhook cannot convert keep the API server from
                # building its cache of the resource, and every LIST answers 429 from then on.
                result.fail(
                    f"{name} was applied but does not serve: {exc}",
                    "if the objects earlier releases stored cannot be converted, the API "
                    "server cannot build its cache of the resource (see kube-apiserver.log "
                    "in the failure bundle and the webhook's answers)",
                )
                refused.add(name)
                continue
            crd = read_crd(self.cluster, name) or {}
            names = condition(crd, "NamesAccepted")
            if names.get("status") != "True":
                result.fail(f"{name}: names not accepted: {names.get('message')}")
        transition = f"release {release.index}->{release.index + 1}"
        for name in live:
            if name in refused or not self.planned_check("migration", transition):
                continue
            removed = [v for v in stored_before.get(name, []) if v not in release.names(name)]
            dropped = self._dropped_versions(release, name)
            if dropped and not removed and self.result("migration", transition).passed:
                self.result("migration", transition).evidence = (
                    f"{name}: removed {', '.join(dropped)}, no longer in status.storedVersions "
                    f"{stored_before.get(name)}: accepted"
                )
        if result.passed:
            verb = "created" if release.index == 0 else "applied on top of the previous release"
            left_out = [n for n in release.crds if n not in live]
            result.evidence = f"{len(live)} CRDs {verb}; Established, names accepted" + (
                f" ({', '.join(left_out)} left out: refused by an earlier release)"
                if left_out
                else ""
            )
        return refused

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
            f"{name}: clusters that still store {versions} reject this revision with "
            f"{answer.status}: ship a release that migrates first",
            f"{name}: status.storedVersions before the upgrade: {stored}",
            *migration.removal_advice(self.releases, release, name, removed, self.config),
            f"the API server said: {answer.message}",
        )

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
                    entry = release.version(obj.crd, version)
                    defaults = [
                        d
                        for d in found
                        if not schemas.present(obj.sent, d.path)
                        and schemas.defaulted(entry, d.path)
                    ]
                    for d in defaults:  # the new release's defaults, filled in on read
                        note = f"{obj.crd} at {version}: {d.path} defaulted on read: {d.describe()}"
                        if note not in result.normalised:
                            result.normalised.append(note)
                    found = [d for d in found if d not in defaults]
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
        writes, unproven = self._write_again(result, release, written)
        for name in self.live(release):
            expected = set(stored_before.get(name) or []) | {release.storage(name)}
            if not stored_before.get(name):
                expected = {release.storage(name)}
            actual = set(migration.stored_versions(self.cluster, name))
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
            left_out = sorted(n for n in release.crds if n in self.refused_crds)
            dropped = sorted(
                n for n in self.releases[release.index - 1].crds if n not in release.crds
            )
            if dropped:  # kubectl apply does not delete a CRD; helm leaves its crds/ alone
                result.details.append(
                    f"not in release {release.index + 1}: {', '.join(dropped)} (clusters keep "
                    "them and their objects: neither kubectl apply nor helm deletes a CRD)"
                )
            defaulted = len(result.normalised)
            result.evidence = (
                f"{len(written)} objects read at every served version ({checked} reads), "
                "unchanged"
                + (
                    f" but for {defaulted} values the new release defaults on read"
                    if defaulted
                    else ""
                )
                + f"{etcd}; written again {writes} times (update, annotation, "
                "server-side apply, status), all accepted"
                + (
                    f"; not checked: {', '.join(left_out)} (refused, see install)"
                    if left_out
                    else ""
                )
            )
        self._judge_unproven(result, release, unproven)

    def _judge_unproven(self, result, release: Release, unproven: list[str]) -> None:
        """Refusals of generated objects only: not proof, and not a pass either."""
        if not unproven:
            return
        if result.passed is False:  # decided on proof; these stay beside it, for reading
            result.details += [f"not proven (generated objects only): {line}" for line in unproven]
            return
        result.passed = None
        result.evidence = (
            f"not proven: objects valid under release {release.index}'s schema are refused by "
            f"release {release.index + 1} ({unproven[0]}); if your clusters can hold objects "
            "like them, their writes break: add such objects to `samples`, or declare the "
            "admission webhooks that refuse them at creation under `admission:`"
        )
        result.details += unproven

    def _write_again(
        self, result, release: Release, written: list[Written]
    ) -> tuple[int, list[str]]:
        """Every old object written again at every served version (see ``upgrade_writes``);
        then what each version reads, for the next release's comparison. Returns the number
        of writes and the refusals that are not proof (see below)."""
        writes, unproven = 0, []
        for obj in written:
            resource = self._resource(obj.crd)
            for version in release.served(obj.crd):
                has_status = objects.has_status(release.version(obj.crd, version))
                path = resource.path(version, obj.namespace, obj.name)
                refused = write_again(self.cluster, path, version, has_status)
                writes += 3 + has_status
                if not refused:
                    continue
                lines = [f"{obj.name}: {line}" for line in refused]
                # Proof needs an object a cluster can hold: a sample, or one that passed the
                # project's admission webhooks. A generated object is valid under the old
                # schema only; the project's webhooks may have refused it at creation
                # (seen: Kyverno's and gateway-api's do). managedFields naming a removed
                # version break any object, whatever its content; so does any answer the
                # server fails with (5xx): no admission webhook decides that.
                if (
                    obj.sample
                    or self.config.admission
                    or any(SERVER_ERROR.search(line) for line in refused)
                ):
                    result.fail(
                        f"{obj.name} (stored under release {release.index}) cannot be written "
                        f"under release {release.index + 1}: {refused[0]}",
                        *lines,
                    )
                else:
                    unproven += lines
            for version in release.served(obj.crd):
                got = call(self.cluster, "GET", resource.path(version, obj.namespace, obj.name))
                if got.ok:
                    obj.seen[version] = got.body
        return writes, unproven

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

    def _write_objects(
        self, release: Release, count: int | None = None, prefix: str = "r"
    ) -> list[Written]:
        """Objects at every served version (samples, then ``count`` generated, by default
        ``upgrade_objects``), read back at each."""
        written = []
        for name in self.live(release):
            manifest = release.crds[name]
            resource = Resource.of(manifest)
            for entry in release.versions(name):
                if not entry.get("served"):
                    continue
                version = entry["name"]
                samples = self.sample_bodies(name, version)
                generated = objects.first_examples(
                    entry, self.config.upgrade_objects if count is None else count, self.config.seed
                )
                for n, body in enumerate(samples + generated):
                    obj_name = self._name(f"{prefix}{release.index + 1}-{version}")
                    # The user's samples are written for the candidate: one it refuses is a
                    # finding (any other release may predate the sample's fields).
                    judged = n < len(samples) and release is self.candidate
                    refusals: list[Answer] = []
                    try:
                        created = self._create(
                            manifest,
                            entry,
                            version,
                            obj_name,
                            HISTORY_NS,
                            body,
                            refusals=refusals if judged else None,
                        )
                    except NotConvertible as failure:
                        # The candidate's convertibility check judges this on its own
                        # objects; here it only means one object fewer for the upgrade.
                        why = f"could not be stored at {version} (conversion failed)"
                        self.refused[why] += 1
                        self.refused_examples.setdefault(why, failure.evidence[:300])
                        continue
                    for answer in refusals:
                        check = "upgrade" if release.index else "install"
                        subject = (
                            f"release {release.index}->{release.index + 1}"
                            if release.index
                            else "release 1"
                        )
                        self.result(check, subject).fail(
                            f"the candidate refuses your sample {name} at {version}: "
                            f"{answer.status} {answer.message}",
                            f"sample {samples[n].get(objects.NAME, '?')} at {version}: "
                            f"{answer.message}",
                        )
                    if created is None:
                        continue
                    record = Written(
                        name,
                        version,
                        obj_name,
                        HISTORY_NS if resource.namespaced else None,
                        sent=objects.intent(body),
                        sample=n < len(samples),
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

    def _migrate(self, release: Release, live: list[str], stored_before) -> None:
        """Run what the release ships (``migrate:``), nothing otherwise, and say what a
        cluster then stores."""
        subject = f"release {release.index + 1}"
        shipped = self.config.migrations.get(release.index)
        if shipped is None and not self.planned_check("migration", subject):
            return
        result = self.result("migration", subject)
        if shipped is None:
            notes = []
            for name in live:
                stored = migration.stored_versions(self.cluster, name)
                if set(stored) != {release.storage(name)}:
                    notes.append(f"{name}: storedVersions {stored}")
            result.evidence = (
                "nothing migrates (no `migrate:` on this release): " + "; ".join(notes)
                if notes
                else f"storedVersions hold only the storage version of {', '.join(live)}"
            )
            return
        outcomes = migration.run_shipped(
            self.cluster, self.config, release.subset(live), shipped, self.report
        )
        shown = []
        for name in live:
            outcome, storage = outcomes[name], release.storage(name)
            for failure in outcome.failures:
                result.fail(f"{shipped.describe()} failed: {failure}", failure)
            if outcome.output and outcome.failures:
                result.details += [f"output: {line}" for line in outcome.output.splitlines()]
            stored = migration.stored_versions(self.cluster, name)
            if self.cluster.etcd is None:
                if result.passed:
                    result.passed = None
                shown.append(f"{name}: not proven from etcd (no etcd access); stored {stored}")
                continue
            total, behind = migration.keys_behind(
                self.cluster, Resource.of(release.crds[name]), storage
            )
            if behind:
                result.fail(
                    f"{name}: {len(behind)} of {total} etcd keys are not at {storage} after "
                    f"{shipped.describe()}",
                    *behind[:20],
                )
            shown.append(f"{name}: all {total} etcd keys at {storage}, storedVersions {stored}")
        if result.passed is not False:
            result.evidence = f"{shipped.describe()}: " + "; ".join(shown)


def _about(subject: str, index: int) -> bool:
    """Whether a history check's subject ("release 3", "release 2->3") is release
    ``index``'s work."""
    return subject.endswith(f"release {index + 1}") or subject.endswith(f"->{index + 1}")
