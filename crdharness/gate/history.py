"""Phase *history*: replay the release history on the cluster (checks *install*, *upgrade*,
*migration*; the removal policy and Warning headers come from ``deprecation``).

Each release is applied on top of the previous one. Objects written at every served version
under release i must read back unchanged under release i+1 (GET and LIST at every served
version) with their etcd keys untouched. Where a release changes the storage version the
gate migrates, as the documentation tells users to; a release that removes a version still in
``status.storedVersions`` is refused by the API server (422), and *migration* says what to
ship instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from crdharness.gate import diff, objects
from crdharness.gate.api import Answer, Resource, apply_crd, call, condition, read_crd, wait_settled
from crdharness.gate.manifests import Release
from crdharness.gate.results import NotConvertible
from crdharness.polling import WaitTimeout
from crdharness.scenarios import migrate

HISTORY_NS = "gate-history"


@dataclass
class Written:
    """An object the history phase wrote, and what it looked like then."""

    crd: str
    version: str  # written at
    name: str
    namespace: str | None
    seen: dict[str, dict] = field(default_factory=dict)  # version -> object read at it


class HistoryPhase:
    """``GateRun``'s history phase (``gate.run`` holds the state it uses)."""

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
                return False
            crd = read_crd(self.cluster, name) or {}
            names = condition(crd, "NamesAccepted")
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

    def _write_objects(
        self, release: Release, count: int | None = None, prefix: str = "r"
    ) -> list[Written]:
        """Objects at every served version (samples, then ``count`` generated, by default
        ``upgrade_objects``), read back at each."""
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
                    entry, self.config.upgrade_objects if count is None else count, self.config.seed
                )
                for body in bodies:
                    obj_name = self._name(f"{prefix}{release.index + 1}-{version}")
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


def _with_stored_versions(crd: dict, versions: list[str]) -> dict:
    crd = dict(crd)
    crd["status"] = {**(crd.get("status") or {}), "storedVersions": versions}
    return crd
