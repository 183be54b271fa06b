"""Part of check *upgrade*: what a change outside the schema does to clients, asked of the
API server under both releases on an object of its own (a copy of an old object, so the
other checks' reads are not disturbed).

- status subresource removed: a status written through ``/status`` under release i is
  refused under i+1 (every client calling UpdateStatus gets 404) — a finding; and whether
  a status sent through the main resource is now stored, in the evidence.
- status subresource added: a status sent through the main resource is now dropped (a
  controller that updates status that way loses it) — a finding.
- scale subresource removed or its paths changed: GET and PUT ``/scale`` under both; a
  refusal or another replicas value — a finding.
- a selectable field removed: a LIST with ``fieldSelector=<path>=<value>`` that worked
  under release i fails under i+1 — a finding.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from urllib.parse import quote

from crdharness.gate import subjects
from crdharness.gate.api import Answer, call
from crdharness.gate.evidence import changes, crd_diff, schemas
from crdharness.gate.evidence.changes import Change
from crdharness.gate.given.manifests import Release
from crdharness.gate.run.context import HISTORY_NS, GateContext

KEPT = ("name", "namespace", "labels", "annotations")


@dataclass(eq=False)
class Probe:
    """A copy of an old object, and what release i answered about it."""

    change: Change
    path: str  # the copy's, at the change's version
    base: dict  # the old object as release i read it
    before: dict = field(default_factory=dict)  # what release i answered


def before(ctx: GateContext, release: Release, upcoming: list[Change], fresh: list) -> None:
    """Under ``release``: a copy of an old object for each change the next release makes
    outside the schema, and release i's answers about it."""
    after = ctx.releases[release.index + 1]
    for change in upcoming:
        if change.kind not in crd_diff.PROBED or change.crd not in ctx.live(release):
            continue
        version = change.version
        if version not in release.served(change.crd) or version not in after.served(change.crd):
            change.decide(
                changes.REPORTED,
                f"{version} is not served by both releases: no client reaches it (see its row)",
            )
            continue
        if change.kind == crd_diff.STATUS_ADDED and not schemas.declares(
            release.entry(change.crd, version), "status"
        ):
            change.decide(
                changes.CLEARED,
                f"release {release.index + 1}'s schema at {version} declares no status: a "
                "status sent with the object was pruned under it already, so nothing kept "
                "before is dropped now",
            )
            continue
        base = next(
            (w.seen[version] for w in fresh if w.crd == change.crd and _suits(change, w, version)),
            None,
        )
        if base is None:
            change.decide(changes.NOT_PROVEN, f"no old object at {version} {_needs(change)}")
            continue
        probe = _copy(ctx, release, change, base)
        if probe is not None:
            ctx.probes.setdefault(release.index + 1, []).append(probe)


def _suits(change: Change, written, version: str) -> bool:
    body = written.seen.get(version)
    if not isinstance(body, dict):
        return False
    if change.kind in (crd_diff.STATUS_ADDED, crd_diff.STATUS_REMOVED):
        return bool(body.get("status"))
    if change.kind == crd_diff.SELECTABLE_REMOVED:
        return isinstance(_at(body, change.values[0]), (str, int, bool))
    return True


def _needs(change: Change) -> str:
    if change.kind == crd_diff.SELECTABLE_REMOVED:
        return f"holds {change.values[0]} (write a sample that sets it)"
    if change.kind in (crd_diff.STATUS_ADDED, crd_diff.STATUS_REMOVED):
        return "holds a status (write a sample with one)"
    return "was written"


def _copy(ctx: GateContext, release: Release, change: Change, base: dict) -> Probe | None:
    resource = ctx.resource(change.crd)
    namespace = HISTORY_NS if resource.namespaced else None
    body = copy.deepcopy(base)
    body["metadata"] = {k: v for k, v in base["metadata"].items() if k in KEPT}
    entry = release.entry(change.crd, change.version)
    body["metadata"]["name"] = ctx.name(f"p{release.index + 1}-{change.version}", entry, change.crd)
    collection = resource.path(change.version, namespace)
    created = call(ctx.cluster, "POST", collection, body)
    if not created.ok:
        change.decide(
            changes.NOT_PROVEN,
            f"a copy of an old object could not be created under release {release.index + 1}: "
            f"{created.status} {created.message[:300]}",
        )
        return None
    probe = Probe(change, f"{collection}/{body['metadata']['name']}", base)
    refused = _ask(ctx, probe, probe.before)
    if refused:
        change.decide(
            changes.NOT_PROVEN, f"release {release.index + 1} itself refuses it: {refused}"
        )
        call(ctx.cluster, "DELETE", probe.path)
        return None
    return probe


def _ask(ctx: GateContext, probe: Probe, answers: dict) -> str:
    """Ask the API server what the change is about; fill ``answers``. Under release i
    (``answers`` is ``probe.before``) the answer must be a success: what it refuses is
    returned."""
    kind, cluster, path = probe.change.kind, ctx.cluster, probe.path
    if kind == crd_diff.STATUS_REMOVED:
        current = call(cluster, "GET", path).body
        answers["status"] = call(
            cluster, "PUT", f"{path}/status", {**current, "status": probe.base["status"]}
        )
        if answers is not probe.before:  # and the main resource, sent an empty status
            current = call(cluster, "GET", path).body
            call(cluster, "PUT", path, {**current, "status": {}})
            answers["read"] = call(cluster, "GET", path)
    elif kind == crd_diff.STATUS_ADDED:
        # The status as this release reads it, before the write: what "kept" is judged
        # against (release i's read may hold fields this release's schema prunes).
        answers["current"] = call(cluster, "GET", path)
        current = answers["current"].body
        if answers is not probe.before:  # under i+1: the main resource, with status cleared
            answers["main"] = call(cluster, "PUT", path, {**current, "status": {}})
        answers["read"] = call(cluster, "GET", path)
    elif kind in (crd_diff.SCALE_REMOVED, crd_diff.SCALE_CHANGED):
        answers["get"] = got = call(cluster, "GET", f"{path}/scale")
        if got.ok:
            answers["put"] = call(cluster, "PUT", f"{path}/scale", got.body)
    elif kind == crd_diff.SELECTABLE_REMOVED:
        selector = _selector(probe)
        collection = path.rsplit("/", 1)[0]
        answers["list"] = call(cluster, "GET", f"{collection}?fieldSelector={quote(selector)}")
    refused = [f"{what}: {a.status} {a.message[:300]}" for what, a in answers.items() if not a.ok]
    return "; ".join(refused)


def after(ctx: GateContext, release: Release) -> None:
    """Under ``release`` (i+1): the same questions on each copy; each change decided."""
    result = ctx.result("upgrade", subjects.transition(release.index))
    for probe in ctx.probes.pop(release.index, []):
        change = probe.change
        if change.crd in ctx.refused_crds:
            continue  # decided with the release's refusal
        answers: dict[str, Answer] = {}
        _ask(ctx, probe, answers)
        finding, evidence = _judge(probe, answers, release)
        call(ctx.cluster, "DELETE", probe.path)
        if finding:
            change.decide(changes.PROVEN, f"{finding}; {evidence}")
            result.fail(f"{change.crd} at {change.version}: {change.kind}: {finding}", evidence)
        else:
            change.decide(changes.CLEARED, evidence)


def _judge(probe: Probe, answers: dict[str, Answer], release: Release) -> tuple[str, str]:
    """(the finding, or ""; the evidence) of release i+1's answers against release i's."""
    kind, name = probe.change.kind, probe.path.rsplit("/", 1)[1]
    was, now = f"release {release.index}", f"release {release.index + 1}"
    if kind == crd_diff.STATUS_REMOVED:
        status_put = answers["status"]
        kept = (answers["read"].body or {}).get("status")
        stored = "ignored" if kept else "stored (an update that leaves it out clears it)"
        note = f"; under {now} a status sent through the main resource is {stored}"
        if not status_put.ok:
            return (
                f"{name}: status update through /status at {probe.change.version}: "
                f"{status_put.status} {status_put.message[:200]} (accepted under {was}: "
                "every client "
                "calling UpdateStatus gets this)",
                f"status through /status accepted under {was}, refused under {now}{note}",
            )
        return "", f"status through /status still accepted under {now}{note}"
    if kind == crd_diff.STATUS_ADDED:
        status = (answers["read"].body or {}).get("status")
        if status and (answers["current"].body or {}).get("status") == status:
            return (
                f"{name}: an update through the main resource sent status {{}} and {now} "
                f"kept {str(status)[:120]}: a status sent through the main resource is now "
                "dropped (a controller that updates status that way loses it)",
                f"stored through the main resource under {was}, dropped under {now}",
            )
        return "", f"status sent through the main resource still stored under {now}"
    if kind in (crd_diff.SCALE_REMOVED, crd_diff.SCALE_CHANGED):
        got, old = answers["get"], probe.before["get"]
        if not got.ok:
            return (
                f"{name}: GET /scale: {got.status} {got.message[:200]}",
                f"/scale answered under {was}",
            )
        if _replicas(got.body) != _replicas(old.body):
            return (
                f"{name}: GET /scale reads {_replicas(got.body)} under {now}, "
                f"{_replicas(old.body)} under {was}",
                f"the scale paths changed: {probe.change.detail}",
            )
        put: Answer | None = answers.get("put")
        if put is not None and not put.ok:
            return f"{name}: PUT /scale: {put.status} {put.message[:200]}", "GET /scale answered"
        return "", f"GET and PUT /scale answered alike under {was} and {now}"
    listed = answers["list"]
    selector = _selector(probe)
    if not listed.ok:
        return (
            f"{name}: LIST with fieldSelector={selector}: {listed.status} "
            f"{listed.message[:200]} (answered under {was})",
            f"a field selector on {probe.change.values[0]} worked under {was}",
        )
    return "", f"LIST with fieldSelector={selector} still answered under {now}"


def _replicas(scale: dict) -> tuple:
    return (
        (scale or {}).get("spec", {}).get("replicas"),
        (scale or {}).get("status", {}).get("replicas"),
    )


def _selector(probe: Probe) -> str:
    path = str(probe.change.values[0]).lstrip(".")
    value = _at(probe.base, path)
    return f"{path}={str(value).lower() if isinstance(value, bool) else value}"


def _at(body: dict, path: str):
    node = body
    for part in str(path).lstrip(".").split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node
