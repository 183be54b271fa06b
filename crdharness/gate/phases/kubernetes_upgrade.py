"""Check *kubernetes-upgrade*: every object the gate left in the cluster, written under the
oldest Kubernetes the gate file lists, is read back under each newer one — kube-apiserver
replaced in place on the same etcd data, one minor at a time, as operators upgrade — at every
served version, field for field, and its stored bytes are not rewritten by the upgrade.
"""

from __future__ import annotations

import itertools

from crdharness.binaries.versions import Release
from crdharness.cluster import CONTROL_PLANES
from crdharness.gate import diff, subjects
from crdharness.gate.api import Resource, call
from crdharness.gate.phases import history
from crdharness.gate.run.context import GateContext

Reads = dict[tuple[str, str, str, str], dict]  # (crd, version, namespace, name) -> object
ListErrors = dict[tuple[str, str], str]  # (crd, version) -> the server's message


def run(ctx: GateContext) -> None:
    # history and candidate ran first (subjects.NEEDS): their objects are carried across
    pairs = list(itertools.pairwise(ctx.kubernetes_path))
    if not ctx.cluster.can(CONTROL_PLANES):
        for older, newer in pairs:
            result = ctx.result(
                "kubernetes-upgrade", subjects.kubernetes_step(older.minor, newer.minor)
            )
            result.passed = None
            result.evidence = (
                "not proven: the harness does not run this cluster's control plane, so it "
                "cannot replace kube-apiserver (run the gate on --cluster=local for this)"
            )
        return
    # Beside what the other phases left: `generate` fresh objects per served version.
    history.write_objects(ctx, ctx.candidate, count=ctx.config.generate, prefix="k8s")
    before, failed_before = _read_all_objects(ctx)
    stored_before = _stored_object_revisions(ctx)
    for older, newer in pairs:
        result = ctx.result(
            "kubernetes-upgrade", subjects.kubernetes_step(older.minor, newer.minor)
        )
        new = newer.git_version
        assert ctx.cluster.switch_kubernetes is not None  # CONTROL_PLANES says so
        away = ctx.cluster.switch_kubernetes(newer)
        running = ctx.cluster.server_version()
        if running != newer.git_version:
            result.fail(f"after the upgrade the API server says {running}, not {new}")
            return
        after, failed_after = _read_all_objects(ctx)
        for (crd, version), message in failed_after.items():
            if (crd, version) in failed_before:
                result.details.append(f"{crd} at {version}: LIST fails under both: {message}")
            else:
                result.fail(f"{crd}: LIST at {version} fails under {new}: {message}")
        stored_after = _stored_object_revisions(ctx) if ctx.cluster.etcd is not None else None
        judge(result, before, after, stored_before, stored_after, older, newer)
        listed = sorted(n for n in ctx.candidate.crds if ctx.listed_only(n))
        if not before and result.passed is None and len(listed) == len(ctx.candidate.crds):
            result.passed = True  # nothing was to be carried: no object is no evidence missing
            result.evidence = (
                "no object to carry across: every CRD of the candidate is unchanged, listed "
                "only (`--full` writes them)"
            )
        if listed:  # said, never passed over
            result.details.append(
                f"no new objects of the {len(listed)} CRDs the release did not change "
                f"({', '.join(listed[:5])}{', ...' if len(listed) > 5 else ''}): listed "
                "only (`--full` writes them too)"
            )
        result.counts["api_unavailable_seconds"] = round(away, 1)


def judge(
    result,
    before: Reads,
    after: Reads,
    stored_before: dict[str, int],
    stored_after: dict[str, int] | None,
    older: Release,
    newer: Release,
) -> None:
    """Compare the reads before and after the upgrade, and the stored revisions (None: no
    etcd access, stored bytes not proven)."""
    rewritten = [k for k, rev in (stored_after or {}).items() if stored_before.get(k) != rev]
    written_meanwhile = 0
    for key, obj in before.items():
        crd, version, namespace, name = key
        where = f"{crd} {namespace + '/' if namespace else ''}{name} at {version}"
        if key not in after:
            result.fail(f"{where}: read under {older.git_version}, not under {newer.git_version}")
            continue
        if after[key]["metadata"].get("resourceVersion") != obj["metadata"].get("resourceVersion"):
            written_meanwhile += 1  # someone (the user's controllers) wrote it: not ours
            continue
        changed = diff.differences(obj, after[key])
        if changed:
            result.fail(
                f"{where} reads differently under {newer.git_version}",
                *(f"{where}: {d.describe()}" for d in changed),
            )
    objects = len({(k[0], k[2], k[3]) for k in before})
    result.counts |= {"objects": objects, "reads": len(before)}
    if written_meanwhile:
        result.counts["written_meanwhile"] = written_meanwhile
    if stored_after is None:
        etcd = "stored bytes not proven (no etcd access)"
    elif len(rewritten) > written_meanwhile:
        result.fail(
            f"{len(rewritten)} stored objects were rewritten across the upgrade",
            *rewritten[:20],
        )
        etcd = ""
    else:
        etcd = "stored bytes untouched"
    if result.passed and not objects:  # nothing carried across is no pass
        result.passed = None
        result.evidence = f"not proven: no object of the candidate's CRDs to read; {etcd}"
    elif result.passed:
        result.evidence = (
            f"{objects} objects read at every served version ({len(before)} reads) under "
            f"{newer.git_version} exactly as under {older.git_version}; {etcd}"
        )


def _read_all_objects(ctx: GateContext) -> tuple[Reads, ListErrors]:
    """Every object of the candidate's CRDs, LISTed at each served version (a LIST fails
    whole when one object cannot be converted: such lists are returned as errors)."""
    seen: Reads = {}
    failed: ListErrors = {}
    for name, manifest in ctx.candidate.crds.items():
        resource = Resource.of(manifest)
        for version in ctx.candidate.served(name):
            answer = call(ctx.cluster, "GET", resource.path(version, None))
            if not answer.ok:
                failed[(name, version)] = f"{answer.status} {answer.message}"
                continue
            for item in (answer.body or {}).get("items", []):
                meta = item["metadata"]
                seen[(name, version, meta.get("namespace", ""), meta["name"])] = item
    return seen, failed


def _stored_object_revisions(ctx: GateContext) -> dict[str, int]:
    if ctx.cluster.etcd is None:
        return {}
    revisions: dict[str, int] = {}
    for manifest in ctx.candidate.crds.values():
        resource = Resource.of(manifest)
        prefix = f"/registry/{resource.group}/{resource.plural}/"
        revisions |= {s.key: s.mod_revision for s in ctx.cluster.etcd.list(prefix)}
    return revisions
