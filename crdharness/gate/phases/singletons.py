"""Part of phase *history*: the objects of a CRD whose schema fixes their name (a singleton,
``evidence.names``), created and judged one at a time.

The history writes many objects under release i and judges them all under release i+1; a
singleton's objects cannot exist side by side (every one after the first would be refused
for its name, and the upgrade stay "not proven"). Their bodies are kept instead (``Pending``),
and at the transition each in turn is created under release i and written again there (the
baseline), the CRD is upgraded to release i+1, the object read and written again as ``upgrade``
judges every old object (GET and LIST, etcd bytes, updates, apply, status, re-create), then
deleted and the CRD put back to release i — its ``status.storedVersions`` as the history had
them — for the next. Once all are judged the CRD is at release i+1 again, holding none.
A release whose CRD cannot be put back is re-created from it (no object of it is left).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from crdharness.gate import subjects
from crdharness.gate.api import CRDS, Answer, apply_crd, call, delete_crd, read_crd
from crdharness.gate.checks.upgrade_objects import Written, etcd_snapshot
from crdharness.gate.checks.upgrade_reads import check_listed, check_untouched, read_again
from crdharness.gate.checks.upgrade_rewrites import write_all_again, write_baseline
from crdharness.gate.evidence import names, objects
from crdharness.gate.evidence.changes import NOT_PROVEN, UNDECIDED, Change
from crdharness.gate.given.manifests import Release
from crdharness.gate.run.context import GateContext
from crdharness.scenarios import crds


@dataclass
class Pending:
    """An object the history would have written under a release, kept to write later."""

    crd: str
    entry: dict  # the version it is written at, as that release declares it
    body: dict
    sample: bool = False
    change: Change | None = None  # the change it was built to hold (``targeted``)
    wanted: int = 0  # of the drawn ones: how many accepted at its version are enough


@dataclass
class Judged:
    """The singleton objects one transition judged: already read and written again."""

    objects: list[Written] = field(default_factory=list)
    reads: int = 0
    writes: int = 0
    hazards: int = 0
    untouched: int = 0
    recreated: int = 0  # times the CRD was re-created to put the earlier release back


# history_writes.write_one: create one object, read it back at every served version.
WriteOne = Callable[..., Written | None]


def one_at_a_time(release: Release, crd: str) -> bool:
    """Whether some version of ``crd`` in ``release`` fixes its objects' name."""
    return any(names.rule(v).single is not None for v in release.versions(crd))


def judge(ctx: GateContext, release: Release, stored_before: dict, write_one: WriteOne) -> Judged:
    """Each object kept under the release before ``release``, judged under ``release`` one at
    a time (see the module's docstring)."""
    previous = ctx.releases[release.index - 1]
    pending = ctx.pending.pop(previous.index, [])
    result = ctx.result("upgrade", subjects.transition(release.index))
    judged = Judged()
    accepted: Counter[tuple[str, str]] = Counter()
    refusals: dict[int, list[str]] = {}  # id(change) -> why its objects were refused
    at_previous: set[str] = set()  # CRDs put back to the previous release
    for item in pending:
        crd, version = item.crd, item.entry["name"]
        if crd in ctx.refused_crds or crd not in release.crds:
            continue  # the release refused it (install says so), or dropped it
        drawn = not item.sample and item.change is None
        if drawn and accepted[(crd, version)] >= item.wanted:
            continue
        ctx.check_deadline(f"the singleton {crd}'s objects")
        if crd not in at_previous:
            failed, recreated = install(ctx, previous, crd, stored_before.get(crd))
            judged.recreated += recreated
            if failed:
                result.details.append(f"{crd}: release {previous.index + 1} not restored: {failed}")
                break
            at_previous.add(crd)
        answers: list[Answer] = []
        obj_name = ctx.name(f"s{previous.index + 1}-{version}", item.entry, crd)
        obj = write_one(ctx, previous, crd, item.entry, item.body, obj_name, answers)
        if obj is None:
            for answer in answers:
                ctx.count_refusal(answer)
                if item.sample:
                    ctx.note_sample_refused(previous.index, crd, version, item.body, answer)
            if item.change is not None:
                refusals.setdefault(id(item.change), []).extend(a.message for a in answers)
            continue
        obj.sample = item.sample
        obj.sample_name = str(item.body.get(objects.NAME, "")) if item.sample else ""
        obj.changes = (item.change,) if item.change is not None else ()
        accepted[(crd, version)] += drawn
        write_baseline(ctx, previous, [obj])
        before = etcd_snapshot(ctx, [obj])
        failed, _ = install(ctx, release, crd)
        at_previous.discard(crd)
        if failed:  # the history's own apply of this release says why
            _delete(ctx, release, obj)
            break
        part, reads = read_again(ctx, result.part(), release, obj)
        result.add(part)
        check_listed(ctx, result, release, [obj])
        judged.untouched += check_untouched(ctx, result, [obj], before)
        writes, hazards = write_all_again(ctx, result, release, [obj])
        judged.reads, judged.writes, judged.hazards = (
            judged.reads + reads,
            judged.writes + writes,
            judged.hazards + hazards,
        )
        judged.objects.append(obj)
        _delete(ctx, release, obj)
    for crd in at_previous:  # the last one kept was refused: the CRD is upgraded again
        install(ctx, release, crd)
    _undecided(pending, judged, refusals, previous)
    if judged.objects:
        ctx.report(
            f"gate: release {release.index + 1}: {len(judged.objects)} objects of singleton "
            "CRDs judged one at a time"
        )
    if judged.recreated:
        result.details.append(
            f"singletons: the CRD was re-created {judged.recreated} times to put release "
            f"{previous.index + 1} back between two objects (its storedVersions listed a "
            "version that release lacks)"
        )
    return judged


def _undecided(pending: list[Pending], judged: Judged, refusals: dict, previous: Release) -> None:
    """A change none of whose kept objects could be created: "not proven", saying why."""
    for change in {id(p.change): p.change for p in pending if p.change is not None}.values():
        if change.decision != UNDECIDED or any(w.holds(change) for w in judged.objects):
            continue
        why = (refusals.get(id(change)) or ["it was not reached"])[0][:300]
        change.decide(
            NOT_PROVEN,
            f"none of the objects holding it could be created under release "
            f"{previous.index + 1}: {why}",
        )


def _delete(ctx: GateContext, release: Release, obj: Written) -> None:
    resource = ctx.resource(obj.crd)
    storage = release.storage(obj.crd)
    at = storage if storage in release.served(obj.crd) else obj.version
    call(ctx.cluster, "DELETE", resource.path(at, obj.namespace, obj.name))


def install(
    ctx: GateContext, release: Release, crd: str, stored: list[str] | None = None
) -> tuple[str, bool]:
    """``crd`` as ``release`` ships it (and, given ``stored``, with those storedVersions):
    what went wrong ('' if nothing), and whether it was re-created. A CRD whose
    storedVersions list a version the release lacks is re-created: it holds no object now."""
    manifest = ctx.pointed(release.crds[crd], release)
    answer = apply_crd(ctx.cluster, manifest)
    recreated = not answer.ok and stored is not None
    if recreated:
        delete_crd(ctx.cluster, crd)
        answer = apply_crd(ctx.cluster, manifest)
    if not answer.ok:
        return f"{answer.status} {answer.message[:300]}", recreated
    crds.wait_settled(ctx.cluster.api_client, manifest)
    if stored:
        current = read_crd(ctx.cluster, crd) or {}
        if (current.get("status") or {}).get("storedVersions") != stored:
            current.setdefault("status", {})["storedVersions"] = list(stored)
            put = call(ctx.cluster, "PUT", f"{CRDS}/{crd}/status", current)
            if not put.ok:
                why = f"storedVersions {stored} not restored: {put.status} {put.message[:300]}"
                return why, recreated
    return "", recreated
