"""Check *migration*: the storage-version story of the history, as clusters live it.

Nothing migrates on its own: a cluster keeps every version its objects were ever stored at in
``status.storedVersions`` until somebody migrates. So after each release the gate runs exactly
the migration the gate file says that release ships (``migrate:``), proves from etcd that
every key moved, and records the ``storedVersions`` a cluster holds. A release that removes a
version still listed there is refused by the API server (422): the finding names the release
that first stored it and says what the project can ship instead.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass, field

from kubernetes.client.rest import ApiException

from crdharness.binaries import versions
from crdharness.cluster import Cluster
from crdharness.gate import subjects
from crdharness.gate.api import Answer, Resource, call, read_crd
from crdharness.gate.evidence.schemas import schema_differences
from crdharness.gate.given.config import GateConfig, Migration, fill_placeholders
from crdharness.gate.given.manifests import Release, uses_webhook
from crdharness.gate.run import floor
from crdharness.gate.run.context import GateContext
from crdharness.kubeconfig import environment_for
from crdharness.scenarios import migrate, storage_migration

COMMAND_TIMEOUT = 600.0  # seconds the project's own migration command may take


def stored_versions(cluster: Cluster, name: str) -> list[str]:
    crd = read_crd(cluster, name)
    return list(((crd or {}).get("status") or {}).get("storedVersions") or [])


def stored_on(ctx: GateContext, name: str, applied: Release | None) -> list[str]:
    """``name``'s ``status.storedVersions`` once ``applied`` is (None: before any release):
    read from the cluster, or, for a CRD the history does not install (``run.floor``), what
    the API server keeps for it."""
    if name in ctx.not_installed:
        return floor.stored_versions(name, applied)
    return stored_versions(ctx.cluster, name)


@dataclass
class Outcome:
    """What one shipped migration did to one CRD's objects."""

    rewritten: int = 0
    failures: list[str] = field(default_factory=list)  # "<object>: <the server's message>"
    output: str = ""  # the command's last lines


def run_shipped(
    cluster: Cluster, config: GateConfig, release: Release, shipped: Migration, report
) -> dict[str, Outcome]:
    """Run what ``release`` ships for every CRD it holds; per CRD, what happened."""
    outcomes = {name: Outcome() for name in release.crds}
    if shipped.kind == "command":
        outcome = _command(cluster, config, shipped)
        return dict.fromkeys(release.crds, outcome)
    for name, manifest in release.crds.items():
        resource = Resource.of(manifest)
        storage = release.storage(name)
        report(f"gate: {name}: {shipped.describe()} to {storage}")
        if shipped.kind == "rewrite":
            outcomes[name] = rewrite(cluster, resource, storage)
            if not outcomes[name].failures:
                # The documented procedure's last step, which the migrator leaves to operators.
                trimmed = set_stored_versions(cluster, name, [storage])
                if not trimmed.ok:
                    outcomes[name].failures.append(
                        f"{name}: cannot set status.storedVersions: {trimmed.message}"
                    )
        else:
            outcomes[name] = _storage_version_migration(cluster, resource, storage)
            if not outcomes[name].failures and not storage_migration.updates_stored_versions(
                versions.resolve(cluster.kubernetes)
            ):
                # Before 1.36 the migrator leaves storedVersions to the operator, as the
                # documentation says; from 1.36 it trims them itself.
                set_stored_versions(cluster, name, [storage])
    return outcomes


def rewrite(cluster: Cluster, resource: Resource, storage: str) -> Outcome:
    """Every object of ``resource`` read and written back at ``storage`` (kubectl's way)."""
    try:
        done = migrate.migrate(
            cluster.api_client, resource.group, storage, resource.plural, keep_going=True
        )
    except ApiException as exc:
        return Outcome(
            failures=[f"LIST of {resource.plural} at {storage}: {exc.status} {exc.reason}"]
        )
    return Outcome(len(done.rewritten), [f"{k}: {why}" for k, why in done.failed.items()])


def _storage_version_migration(cluster: Cluster, resource: Resource, storage: str) -> Outcome:
    if cluster.start_controllers is not None:
        cluster.start_controllers()  # on the local backend, on first use
    release = versions.resolve(cluster.kubernetes)

    def nudge() -> None:  # see storage_migration.migrate: moves the collector's watch on
        obj = {
            "apiVersion": f"{resource.group}/{storage}",
            "kind": resource.kind,
            "metadata": {"name": "gate-migration-nudge", "namespace": "default"},
        }
        namespace = "default" if resource.namespaced else None
        call(cluster, "POST", resource.path(storage, namespace), obj)
        call(cluster, "DELETE", resource.path(storage, namespace, "gate-migration-nudge"))

    try:
        storage_migration.migrate(
            cluster, release, resource.group, resource.plural, storage, nudge=nudge
        )
    except AssertionError as exc:  # Failed, or never Succeeded in time: both say why
        return Outcome(failures=[str(exc)])
    return Outcome()


def _command(cluster: Cluster, config: GateConfig, shipped: Migration) -> Outcome:
    values = dict.fromkeys(("tls_cert", "tls_key", "cert_dir", "port", "ca"), "")
    values |= {"kubeconfig": str(cluster.kubeconfig), "python": sys.executable}
    argv = [fill_placeholders(word, values) for word in shipped.command]
    try:
        done = subprocess.run(
            argv,
            cwd=config.root,
            env=environment_for(cluster.kubeconfig),
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT,
            check=False,
        )
    except FileNotFoundError:
        return Outcome(failures=[f"the migration command {argv[0]!r} was not found"])
    except subprocess.TimeoutExpired:
        return Outcome(failures=[f"the migration command ran over {COMMAND_TIMEOUT:g} s"])
    output = "\n".join((done.stdout + done.stderr).strip().splitlines()[-20:])
    if done.returncode != 0:
        return Outcome(failures=[f"the migration command exited {done.returncode}"], output=output)
    return Outcome(output=output)


def set_stored_versions(cluster: Cluster, name: str, stored: list[str]) -> Answer:
    crd = dict(read_crd(cluster, name) or {})
    crd["status"] = {**(crd.get("status") or {}), "storedVersions": stored}
    return call(
        cluster,
        "PUT",
        f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}/status",
        crd,
    )


def keys_behind(cluster: Cluster, resource: Resource, storage: str) -> tuple[int, list[str]]:
    """How many etcd keys the resource has, and those not stored at ``storage``."""
    assert cluster.etcd is not None  # the caller checked
    keys = cluster.etcd.list(f"/registry/{resource.group}/{resource.plural}/")
    behind = [
        f"{k.key} (stored at {k.api_version})"
        for k in keys
        if k.api_version != f"{resource.group}/{storage}"
    ]
    return len(keys), behind


def first_stored(releases: list[Release], name: str, version: str) -> Release | None:
    return next((r for r in releases if name in r.crds and r.storage(name) == version), None)


def removal_advice(
    releases: list[Release], release: Release, name: str, removed: list[str], config: GateConfig
) -> list[str]:
    """What the project can ship instead of a release that drops versions clusters store."""
    previous = releases[release.index - 1]
    storage = previous.storage(name)
    advice = []
    for version in removed:
        first = first_stored(releases[: release.index], name, version)
        since = f"release {first.index + 1}" if first else "an earlier release"
        advice.append(f"{version} has been in status.storedVersions since {since} stored it")
    webhook = bool(config.webhook and config.webhook.converts(previous.crds[name])) or (
        previous.strategy(name) == "Webhook" and uses_webhook(previous, config.webhook)
    )
    lost = []
    if not webhook:
        for version in removed:
            if version in previous.names(name):
                lost += schema_differences(previous, name, version, storage)
    if webhook or not lost:
        advice.append(
            f"a conversion path to {storage} exists: ship a release whose upgrade migrates "
            f"every object to {storage} and leaves only it in status.storedVersions (`migrate: "
            "storage-version-migration`, `migrate: rewrite`, or your own `migrate: {command: "
            f"...}}` on release {previous.index + 1}), and remove "
            f"{', '.join(removed)} only in a later release; or keep "
            f"{', '.join(removed)} in spec.versions with served: false (objects' managedFields "
            "name it after any migration, and server-side apply needs it to convert them)"
        )
    else:
        advice.append(
            f"rewriting cannot migrate the data: under strategy None only apiVersion changes, "
            f"and {len(lost)} fields differ between {', '.join(removed)} and {storage} "
            f"({'; '.join(lost[:3])}): users must export these objects, convert them "
            "themselves and create them again, or the project must first ship a release with "
            "a conversion webhook and a migration"
        )
    return advice


def check(ctx: GateContext, release: Release, live: list[str], stored_before) -> None:
    """Run what the release ships (``migrate:``), nothing otherwise, and say what a
    cluster then stores."""
    subject = subjects.release(release.index)
    shipped = ctx.config.migrations.get(release.index)
    if shipped is None and not ctx.planned_check("migration", subject):
        return
    result = ctx.result("migration", subject)
    if shipped is None:
        notes = []
        for name in live:
            stored = stored_on(ctx, name, release)
            if set(stored) != {release.storage(name)}:
                notes.append(f"{name}: storedVersions {stored}")
        result.evidence = (
            "nothing migrates (no `migrate:` on this release): " + "; ".join(notes)
            if notes
            else f"storedVersions hold only the storage version of {', '.join(live)}"
        )
        return
    outcomes = run_shipped(ctx.cluster, ctx.config, release.subset(live), shipped, ctx.report)
    shown = []
    for name in live:
        outcome, storage = outcomes[name], release.storage(name)
        for failure in outcome.failures:
            result.fail(f"{shipped.describe()} failed: {failure}", failure)
        if outcome.output and outcome.failures:
            result.details += [f"output: {line}" for line in outcome.output.splitlines()]
        stored = stored_versions(ctx.cluster, name)
        if ctx.cluster.etcd is None:
            if result.passed:
                result.passed = None
            shown.append(f"{name}: not proven from etcd (no etcd access); stored {stored}")
            continue
        total, behind = keys_behind(ctx.cluster, Resource.of(release.crds[name]), storage)
        if behind:
            result.fail(
                f"{name}: {len(behind)} of {total} etcd keys are not at {storage} after "
                f"{shipped.describe()}",
                *behind[:20],
            )
        shown.append(f"{name}: all {total} etcd keys at {storage}, storedVersions {stored}")
    if result.passed is not False:
        result.evidence = f"{shipped.describe()}: " + "; ".join(shown)
