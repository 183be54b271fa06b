"""Check *upgrade*: objects stored under release i, under release i+1 (each transition of
the history phase). Each reads back unchanged at every served version (GET and LIST) with its
etcd key untouched — a value it did not have (a new default, filled in on read) included —
and is written again (``upgrade_writes``). Every write is first made the same way under
release i (``write_baseline``): a write release i already refused is a hazard of that
release, reported apart, never the upgrade's finding. Any other refusal is a finding, whatever
made the object (a sample, the generator, or ``targeted`` for what changed), unless an
``allow`` entry names the path with a reason. Each change between the two releases
(``changes``) ends with a decision from the objects built to hold it; a change none could be
built for, or fewer than ``min_objects`` objects of a CRD reaching the writes, leaves the
check "not proven", never pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from crdharness.gate import concurrency, diff, subjects
from crdharness.gate.api import call
from crdharness.gate.checks import crd_changes, migration
from crdharness.gate.checks.upgrade_writes import (
    RECREATE,
    RECREATE_STATUS,
    TOUCHED,
    Refusal,
    write_again,
)
from crdharness.gate.evidence import changes, coverage, objects, schemas, targeted
from crdharness.gate.evidence.changes import Change
from crdharness.gate.given.manifests import Release
from crdharness.gate.results import CheckResult
from crdharness.gate.run.context import GateContext
from crdharness.progress import Tally

RECREATES = (RECREATE, RECREATE_STATUS)


# A note (no finding) of a loss the webhook makes already under the earlier release.
WEBHOOKS_OWN = "not a change of this release"


@dataclass(eq=False)
class Written:
    """An object the history phase wrote, and what it looked like then."""

    crd: str
    version: str  # written at
    name: str
    namespace: str | None
    seen: dict[str, dict] = field(default_factory=dict)  # version -> object read at it
    sent: dict = field(default_factory=dict)  # the body written (fields, status)
    sample: bool = False  # one of the user's samples (an object clusters really hold)
    change: Change | None = None  # the change it was built to hold (``targeted``)
    baseline: set[tuple[str, str]] = field(default_factory=set)  # writes refused before
    findings: list[str] = field(default_factory=list)  # this transition's, about it
    excused: list[str] = field(default_factory=list)  # findings an `allow` entry excused
    hazarded: set[tuple[str, str]] = field(default_factory=set)  # writes refused both times
    refused: set[str] = field(default_factory=set)  # this transition's writes refused (any)
    captured: bool = False  # one of a source cluster's objects (``--from-cluster``)

    @property
    def label(self) -> str:
        """How findings name it: a source cluster's object as ``namespace/name``."""
        if self.captured and self.namespace:
            return f"{self.namespace}/{self.name}"
        return self.name


def etcd_snapshot(ctx: GateContext, written: list[Written]) -> dict:
    if ctx.cluster.etcd is None:
        return {}
    snapshot = {}
    for obj in written:
        resource = ctx.resource(obj.crd)
        stored = ctx.cluster.stored(resource.group, resource.plural, obj.name, obj.namespace)
        if stored is not None:
            snapshot[(obj.crd, obj.label)] = (stored.mod_revision, stored.api_version)
    return snapshot


def check(ctx: GateContext, release: Release, written, before, stored_before) -> None:
    result = ctx.result("upgrade", subjects.transition(release.index))
    for obj in written:
        obj.findings, obj.excused, obj.hazarded, obj.refused = [], [], set(), set()
    upgraded = [obj for obj in written if obj.crd in release.crds]
    parts = concurrency.each(
        lambda obj: _read_again(ctx, result.part(), release, obj), upgraded, ctx.config.concurrency
    )
    checked = 0
    for part, reads in parts:
        result.add(part)
        checked += reads
    _check_listed(ctx, result, release, upgraded)
    proven_untouched = _check_untouched(ctx, result, written, before)
    writes, hazards = _write_all_again(ctx, result, release, written)
    for name in ctx.live(release):
        expected = set(stored_before.get(name) or []) | {release.storage(name)}
        if not stored_before.get(name):
            expected = {release.storage(name)}
        actual = set(migration.stored_versions(ctx.cluster, name))
        if actual != expected:
            result.fail(
                f"{name}: status.storedVersions is {sorted(actual)}, the documentation says "
                f"{sorted(expected)}"
            )
    if result.passed is not False:
        etcd = (
            f"; {proven_untouched} etcd keys untouched (mod_revision and stored apiVersion)"
            if ctx.cluster.etcd is not None
            else "; stored bytes not checked: no etcd access on this cluster"
        )
        left_out = sorted(n for n in release.crds if n in ctx.refused_crds)
        dropped = sorted(n for n in ctx.releases[release.index - 1].crds if n not in release.crds)
        if dropped:  # kubectl apply does not delete a CRD; helm leaves its crds/ alone
            result.details.append(
                f"not in release {release.index + 1}: {', '.join(dropped)} (clusters keep "
                "them and their objects: neither kubectl apply nor helm deletes a CRD)"
            )
        result.evidence = (
            f"{len(written)} object{'' if len(written) == 1 else 's'} read at every served "
            f"version ({checked} reads), unchanged{etcd}; written again {writes} times "
            "(update, annotation, server-side apply, status, re-create), all accepted and "
            "read back unchanged"
            + (f" but for {len(result.allowed)} excused by `allow`" if result.allowed else "")
            + (f"; not checked: {', '.join(left_out)} (refused, see install)" if left_out else "")
            + (
                f"; {hazards} writes release {release.index} already refused are its own "
                "hazards (see the report)"
                if hazards
                else ""
            )
            + (
                f"; {len(webhooks)} losses the webhook already makes under release "
                f"{release.index} are round-trip's findings, not this release's (details)"
                if (webhooks := [d for d in result.details if d.startswith(WEBHOOKS_OWN)])
                else ""
            )
        )
    decide(ctx, release, written)
    _enough_evidence(ctx, result, release, written)
    for obj in written:  # what the operator of a source cluster must fix, by object
        if obj.captured and obj.findings:
            ctx.object_findings[obj.label] = list(obj.findings)
            ctx.writes_refused[obj.label] = set(obj.refused)


def _read_again(
    ctx: GateContext, result: CheckResult, release: Release, obj: Written
) -> tuple[CheckResult, int]:
    """``obj`` read at every version ``release`` serves, judged against what it read under
    the earlier release; what was found (its part of ``upgrade``), and the reads made."""
    resource = ctx.resource(obj.crd)
    reads = 0
    for version in release.served(obj.crd):
        got = call(ctx.cluster, "GET", resource.path(version, obj.namespace, obj.name))
        if not got.ok:
            _finding(
                ctx,
                result,
                obj,
                f"{obj.label} (written at {obj.version}) cannot be read at {version}",
                f"GET {obj.label} at {version}: {got.status} {got.message}",
            )
            continue
        reads += 1
        if version in obj.seen:
            _judge_read(ctx, result, release, obj, version, got.body)
        obj.seen[version] = got.body
    return result, reads


def _check_listed(ctx: GateContext, result: CheckResult, release: Release, written) -> None:
    """A LIST at every served version returns every old object: one LIST per CRD, version
    and namespace."""
    places = sorted({(obj.crd, obj.namespace or "") for obj in written})
    for crd, namespace in places:
        resource = ctx.resource(crd)
        mine = [w for w in written if w.crd == crd and (w.namespace or "") == namespace]
        for version in release.served(crd):
            listed = call(ctx.cluster, "GET", resource.path(version, namespace or None))
            names = {i["metadata"]["name"] for i in (listed.body or {}).get("items", [])}
            if not listed.ok:
                result.fail(
                    f"LIST of {crd} at {version} fails: {listed.status} {listed.message}",
                    *(f"LIST at {version} does not return {w.name}" for w in mine),
                )
                continue
            for obj in mine:
                if obj.name not in names:
                    result.fail(
                        f"LIST at {version} does not return {obj.label}",
                        f"LIST at {version}: {listed.status}",
                    )


def _finding(
    ctx: GateContext,
    result: CheckResult,
    obj: Written,
    headline: str,
    *details: str,
    paths: list[str] | None = None,
) -> None:
    """A finding about ``obj``: the check fails, unless an ``allow`` entry (with no
    ``between``, or one naming the versions) covers every path it names."""
    named = paths if paths is not None else [p for d in details for p in diff.named_paths(d)]
    rule = None
    if named:
        rules = [
            next((r for r in ctx.config.allow if r.covers_upgrade(p, obj.version)), None)
            for p in named
        ]
        rule = rules[0] if all(rules) else None
    first = details[0] if details else headline
    first = first if obj.label in first else f"{obj.label}: {first}"
    if rule is not None:
        note = f"{obj.crd} {first} ({rule.reason})"
        obj.excused.append(note)
        if note not in result.allowed:
            result.allowed.append(note)
        return
    # Each line (each write refused, each path changed) is one of its findings: a change
    # is proven by the line that names its path.
    lines = [line if obj.label in line else f"{obj.label}: {line}" for line in details]
    obj.findings += lines or [first]
    result.fail(headline, *details)


def _judge_read(
    ctx: GateContext, result: CheckResult, release: Release, obj: Written, version: str, body
) -> None:
    """What an old object reads at ``version`` under the new release, against what it read
    under the old one: any difference is a finding — a value the new release's default
    fills in on read too (a silent change to every stored object, which upgrade notes must
    tell), unless ``allow``ed."""
    found = diff.differences(diff.comparable(obj.seen[version]), diff.comparable(body))
    if not found:
        return
    known = len(obj.findings)
    entry = release.entry(obj.crd, version)
    defaulted = [
        d
        for d in found
        if not schemas.present(obj.sent, d.path) and schemas.defaulted(entry, d.path)
    ]
    for d in defaulted:
        _finding(
            ctx,
            result,
            obj,
            f"{obj.crd} {obj.label} (stored under release {release.index}) reads at {version} "
            f"with a value it did not have: {d.describe()} (release {release.index + 1}'s "
            "default, filled in on read of every stored object)",
            f"{obj.label} at {version}: {d.path} defaulted on read: {d.describe()}",
            paths=[d.path],
        )
    changed = _declared_first(entry, [d for d in found if d not in defaulted])
    if changed:
        _finding(
            ctx,
            result,
            obj,
            f"{obj.label} read at {version} changed with the upgrade: "
            + "; ".join(d.describe() for d in changed[:3]),
            *(f"{obj.label} at {version}: {d.describe()}" for d in changed),
            paths=[d.path for d in changed],
        )
    if len(obj.findings) > known:
        result.objects.append((f"{obj.label} at {version} before", obj.seen[version]))
        result.objects.append((f"{obj.label} at {version} after", body))


def write_baseline(ctx: GateContext, release: Release, written: list[Written]) -> None:
    """The writes ``upgrade`` will judge under the next release, made now under ``release``
    on the same objects: what this release already refuses is its own hazard (reported
    apart, once), so the next transition is judged on its own doing only. Data these writes
    lose by strategy None is this release's hazard; data they lose through the user's
    webhook is the webhook's own doing (the gate runs the candidate's webhook under every
    release), which ``round-trip`` reports: noted on the transition, never its finding —
    one finding, one place. What the next release's writes lose beyond it stays one."""
    upcoming = ctx.result("upgrade", subjects.transition(release.index + 1))
    tally = Tally(
        ctx.report,
        f"gate: old objects written again under release {release.index + 1}",
        len(written),
    )

    def write(obj: Written) -> tuple[CheckResult, dict[str, str]]:
        tally.add()
        part, hazards = upcoming.part(), dict[str, str]()
        # Lost by the user's webhook: the candidate's, whatever release it runs under.
        # Lost by strategy None: this release's own hazard.
        own = ctx.pointed(release.crds[obj.crd])["spec"].get("conversion") or {}
        by_none = own.get("strategy", "None") != "Webhook"
        # A source cluster's object is written only at versions the next release serves
        # too (those its writes are judged at): a write at any other version would leave a
        # managedFields entry the real object does not have.
        after = ctx.releases[release.index + 1].served(obj.crd) if obj.captured else None
        for version, refused in _written_again(ctx, release, obj, after):
            _remember(release, obj, version, refused, refused, hazards)
            _check_unchanged_by_writes(
                ctx,
                part,
                hazards,
                release,
                obj,
                version,
                release.index + 1,
                hazard=by_none,
                webhooks_own=not by_none,
            )
        return part, hazards

    for part, hazards in concurrency.each(write, written, ctx.config.concurrency):
        upcoming.add(part)
        _add_hazards(ctx, hazards)


def _add_hazards(ctx: GateContext, hazards: dict[str, str]) -> None:
    """One object's hazards, added to the run's: each is reported once."""
    for key, line in hazards.items():
        ctx.hazards.setdefault(key, line)


def _written_again(ctx: GateContext, release: Release, obj: Written, only: list[str] | None = None):
    """``obj`` written again at each version ``release`` serves (of ``only``, if given;
    ``upgrade_writes``):
    (version, the writes the server refused twice in a row). A refusal it does not repeat
    (a 429 or a timeout on a busy machine) is neither a finding nor a hazard that would
    excuse the next release's real refusal of the same write."""
    resource = ctx.resource(obj.crd)
    for version in release.served(obj.crd):
        if only is not None and version not in only:
            continue
        has_status = objects.has_status(release.entry(obj.crd, version))
        path = resource.path(version, obj.namespace, obj.name)
        refused = write_again(ctx.cluster, path, version, has_status)
        if refused:
            repeated = {r.key for r in write_again(ctx.cluster, path, version, has_status)}
            refused = [r for r in refused if r.key in repeated]
        yield version, refused


def _remember(
    release: Release,
    obj: Written,
    version: str,
    refused: list[Refusal],
    known: list[Refusal],
    hazards: dict[str, str],
) -> None:
    """The writes ``release`` refuses at ``version`` become the next transition's baseline;
    ``known``, refused under a release for objects it (or a release before it, which
    refused them too) accepted, are its hazards (added to ``hazards``, reported apart)."""
    obj.baseline = {k for k in obj.baseline if k[1] != version} | {r.key for r in refused}
    for refusal in known:
        hazards.setdefault(
            f"{obj.crd}:{refusal.key}:{refusal.status}",
            f"release {release.index + 1}: {obj.crd} at {version}: {refusal.write} is refused "
            f"for objects the release itself accepted: {refusal.status} "
            f"{refusal.message[:300]}",
        )


def _write_all_again(
    ctx: GateContext, result, release: Release, written: list[Written]
) -> tuple[int, int]:
    """Every old object written again at every served version (see ``upgrade_writes``),
    and read back after each version's writes (what each version reads last is kept for
    the next release's comparison). Returns the number of writes, and of those refused
    already under the earlier release."""

    tally = Tally(
        ctx.report, f"gate: old objects written under release {release.index + 1}", len(written)
    )

    def write(obj: Written) -> tuple[CheckResult, dict[str, str], int, int]:
        tally.add()
        part, hazards, writes, known_count = result.part(), dict[str, str](), 0, 0
        for version, refused in _written_again(ctx, release, obj):
            writes += 4 + objects.has_status(release.entry(obj.crd, version))
            _check_unchanged_by_writes(ctx, part, hazards, release, obj, version, release.index)
            obj.refused |= {r.write for r in refused}  # the operator's advice: what passed
            known = [r for r in refused if r.key in obj.baseline]  # refused before: hazards
            new = [r for r in refused if r not in known]
            known_count += len(known)
            obj.hazarded |= {r.key for r in known}
            _remember(release, obj, version, refused, known, hazards)
            if new:
                _finding(
                    ctx,
                    part,
                    obj,
                    f"{obj.crd} {obj.label} (stored under release {release.index}) cannot be "
                    f"written under release {release.index + 1}: {new[0].line}",
                    *(f"{obj.label}: {r.line}" for r in new),
                )
                if part.passed is False and version in obj.seen:  # the object it refused
                    part.objects.append(
                        (f"{obj.label} as read at {version}, refused", obj.seen[version])
                    )
        return part, hazards, writes, known_count

    writes = hazards_count = 0
    for part, hazards, count, known_count in concurrency.each(
        write, written, ctx.config.concurrency
    ):
        result.add(part)
        _add_hazards(ctx, hazards)
        writes += count
        hazards_count += known_count
    return writes, hazards_count


def _check_unchanged_by_writes(
    ctx: GateContext,
    result,
    hazards: dict[str, str],
    release: Release,
    obj: Written,
    version: str,
    stored: int,
    hazard: bool = False,
    webhooks_own: bool = False,
) -> None:
    """An old object written again at ``version`` with what was read there must read as it
    did before at every served version: a webhook that loses a field on the way to
    ``version`` loses it from storage on the first controller update at that version.
    Differences ``ctx.excused`` between ``version`` and the storage version are not
    findings. Each loss is named once, at the version whose writes made it: ``obj.seen``
    moves on to what is read now."""
    resource = ctx.resource(obj.crd)
    storage = release.storage(obj.crd)
    for at in release.served(obj.crd):
        got = call(ctx.cluster, "GET", resource.path(at, obj.namespace, obj.name))
        if not got.ok:
            continue  # unreadable: the next release's reads report it
        before = obj.seen.get(at)
        obj.seen[at] = got.body  # the next writes, and the next release, are judged from here
        if before is None:
            continue
        found = [
            d
            for d in diff.differences(
                diff.comparable(before, ignore_annotations=(TOUCHED,)),
                diff.comparable(got.body, ignore_annotations=(TOUCHED,)),
            )
            if ctx.excused(d, version, storage, obj.crd, release) is None
        ]
        found = _declared_first(release.version(obj.crd, version) or {}, found)
        if found and hazard:
            paths = ", ".join(dict.fromkeys(d.path for d in found))
            hazards.setdefault(
                f"{obj.crd}:lost:{version}:{paths}",
                f"release {release.index + 1}: {obj.crd} written again at {version} (strategy "
                f"{release.strategy(obj.crd)}) loses {paths} (read at {at}), under this "
                "release itself",
            )
        elif found and webhooks_own:
            result.details.append(
                f"{WEBHOOKS_OWN}: {obj.label} written again at {version} under "
                f"release {release.index + 1} already loses "
                f"{', '.join(sorted({d.path for d in found}))} through the webhook (read at "
                f"{at}); round-trip reports the webhook's losses"
            )
        elif found:
            _finding(
                ctx,
                result,
                obj,
                f"{obj.crd} {obj.label} (stored under release {stored}) lost or changed "
                f"{', '.join(dict.fromkeys(d.path for d in found))} when written again at "
                f"{version} "
                f"with what was read there (read at {at})",
                *(
                    f"{obj.label} written again at {version}, read at {at}: {d.describe()}"
                    for d in found
                ),
                paths=[d.path for d in found],
            )
            result.objects.append((f"{obj.label} at {at} before the writes", before))
            result.objects.append((f"{obj.label} at {at} after the writes at {version}", got.body))


def decide(ctx: GateContext, release: Release, written: list[Written]) -> None:
    """Each change from the previous release to ``release`` gets its decision from the
    objects built to hold it: proven (a finding on one of them: the object, the write and
    the server's message, or the changed read), allowed (every finding excused), cleared
    (all accepted and read back unchanged), or not proven (why none could be built)."""
    for change in ctx.changes.get(release.index, []):
        if ctx.source is not None and change.crd not in ctx.refused_crds:
            _decide_on_the_source(ctx, release, change, written)
            continue
        if change.decision == changes.NOT_PROVEN and not any(w.change is change for w in written):
            continue  # decided when its objects could not be built or created
        if change.crd in ctx.refused_crds:
            refusal = next(
                (
                    line
                    for line in ctx.result("install", subjects.release(release.index)).details
                    if line.startswith(f"{change.crd}:")
                ),
                None,
            )
            if refusal is not None and not change.path:  # the CRD as a whole: refused for it
                change.decide(
                    changes.PROVEN, f"the API server refused release {release.index + 1}: {refusal}"
                )
            else:
                change.decide(
                    changes.NOT_PROVEN,
                    f"release {release.index + 1} of {change.crd} was not installed (see install)",
                )
            continue
        if changes.on_the_crd(change):
            crd_changes.decide(ctx, release, change, written)
            continue
        held = [w for w in written if w.change is change]
        proof = _named_by(change, held) or _named_by(change, written)
        judged = [w for w in held if not any(k[0] in RECREATES for k in w.hazarded)]
        if proof is not None:
            change.decide(changes.PROVEN, proof)
        elif any(w.findings for w in held):
            other = next(w for w in held if w.findings).findings[0]
            change.decide(
                changes.NOT_PROVEN,
                f"the objects built for it failed for another reason first: {other}",
            )
        elif any(w.excused for w in held):
            change.decide(changes.ALLOWED, next(w for w in held if w.excused).excused[0])
        elif not held:
            change.decide(changes.NOT_PROVEN, change.evidence or "no object was built for it")
        elif not judged:
            change.decide(
                changes.NOT_PROVEN,
                f"release {release.index} already refuses re-creating the objects built for "
                "it (a hazard of that release, see the report): the new schema was not judged",
            )
        else:
            change.decide(
                changes.CLEARED,
                f"{len(judged)} object{'s' if len(judged) > 1 else ''} holding it "
                f"({', '.join(w.name for w in judged[:3])}) stored under release "
                f"{release.index}: read, written again and re-created under release "
                f"{release.index + 1}, all accepted and unchanged"
                + (
                    " (a rule is judged on the objects built: the values the old schema "
                    "enumerates and the rule's own literals; combinations beyond them need "
                    "samples)"
                    if change.kind in targeted.RULE_KINDS
                    else ""
                ),
            )


def _decide_on_the_source(ctx: GateContext, release: Release, change: Change, written) -> None:
    """``--from-cluster``: a change is proven by a finding on one of the cluster's objects
    that names its path, and cleared when every object the cluster holds was replayed and
    none is refused or changed by it; otherwise not proven, saying how many were left out."""
    assert ctx.source is not None
    mine = [w for w in written if w.crd == change.crd and w.captured]
    proof = (
        _named_by(change, mine)
        if change.path
        else next((w.findings[0] for w in mine if w.findings), None)
    )
    if proof is not None:
        change.decide(changes.PROVEN, proof)
        return
    left_out = _left_out(ctx, change.crd)
    if left_out:
        change.decide(changes.NOT_PROVEN, f"{left_out}: the others could not hold it")
        return
    change.decide(
        changes.CLEARED,
        f"none of the cluster's {len(mine)} {change.crd} objects is refused or changed by "
        f"it: each was read, written again and re-created under release "
        f"{release.index + 1}",
    )


def _left_out(ctx: GateContext, crd: str) -> str:
    """Why not every object the source cluster holds of ``crd`` was replayed ('' if all
    were)."""
    assert ctx.source is not None
    why = []
    replayed, held = ctx.source.truncated.get(crd, (0, 0))
    if held:
        why.append(f"{replayed} of its {held} objects replayed (`max_objects`)")
    refused = [label for label in ctx.not_replayed if label in _labels(ctx, crd)]
    if refused:
        why.append(f"{len(refused)} could not be re-created ({', '.join(refused[:3])})")
    return "; ".join(why)


def _labels(ctx: GateContext, crd: str) -> set[str]:
    assert ctx.source is not None
    return {obj.label for obj in ctx.source.objects.get(crd, [])}


def _named_by(change: Change, written: list[Written]) -> str | None:
    """A finding about one of ``written`` (of the change's CRD) that names the change's path
    (or a path below it): the server's message, or the read that changed. A rule on the
    whole object is named by any."""
    for obj in written:
        if obj.crd != change.crd:
            continue
        for finding in obj.findings:
            named = [diff.schema_path(p) for p in diff.named_paths(finding)]
            if not change.path or any(diff.at_or_under(p, change.path) for p in named):
                return finding
    return None


def _enough_evidence(ctx: GateContext, result: CheckResult, release: Release, written) -> None:
    """No pass on thin evidence: at least ``min_objects`` old objects of each CRD reached
    the writes, and every change has a decision."""
    if result.passed is False:
        return
    short = []
    for name in ctx.live(release):
        if name not in ctx.releases[release.index - 1].crds:
            continue  # new in this release: nothing old to upgrade
        if ctx.source is not None:  # the evidence is every object the cluster holds
            left_out = _left_out(ctx, name)
            if left_out:
                short.append(f"{name}: {left_out}")
            continue
        reached = sum(1 for w in written if w.crd == name and w.seen)
        if reached < ctx.config.min_objects:
            short.append(f"{name}: {reached} old objects reached the writes")
    undecided = [  # a CRD the release could not install fails install: not counted here
        c
        for c in ctx.changes.get(release.index, [])
        if c.decision == changes.NOT_PROVEN and c.crd not in ctx.refused_crds
    ]
    if not short and not undecided:
        return
    why = []
    if short and ctx.source is not None:
        why.append(f"not every object of the source cluster was replayed ({'; '.join(short)})")
    elif short:
        refused = "; ".join(f"{why}: {n}" for why, n in sorted(ctx.refused.items())) or "none"
        why.append(
            f"fewer than min_objects ({ctx.config.min_objects}) old objects ({', '.join(short)}; "
            f"refused at creation so far: {refused})"
        )
    if undecided:
        why.append(
            f"{len(undecided)} of {len(ctx.changes[release.index])} changes not exercised ("
            + "; ".join(f"{c.subject}: {c.kind}: {c.evidence}" for c in undecided[:3])
            + ")"
        )
    result.passed = None
    result.evidence = "not proven: " + "; and ".join(why)
    result.details += [f"not proven: {c.subject}: {c.kind}: {c.evidence}" for c in undecided]


def _check_untouched(ctx: GateContext, result, written, before) -> int:
    if ctx.cluster.etcd is None:
        if result.passed:
            result.passed = None
        result.details.append("etcd is not reachable: stored bytes not proven untouched")
        return 0
    after = etcd_snapshot(ctx, written)
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


def _declared_first(entry: dict, found: list) -> list:
    """Differences with the fields ``entry``'s schema declares first (then metadata, then
    keys inside subtrees that preserve unknown fields), each group by path."""
    schema = objects.body_schema(entry)
    return sorted(found, key=lambda d: coverage.headline_order(schema, d.path))
