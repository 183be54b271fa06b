"""Part of check *upgrade*: each old object written again at every served version
(``upgrade_writes``) — first under its own release (``write_baseline``: what that release
already refuses is its hazard, what the webhook already loses is round-trip's finding), then
under the new one, where any other refusal or loss is the upgrade's finding."""

from __future__ import annotations

from crdharness.gate import concurrency, diff, subjects
from crdharness.gate.api import call
from crdharness.gate.checks import (
    upgrade_fresh,
    upgrade_reads,
    upgrade_repaired,
    upgrade_screen,
)
from crdharness.gate.checks.upgrade_objects import (
    WEBHOOKS_OWN,
    Written,
    after_earlier_loss,
    declared_first,
    finding,
    note_written_meanwhile,
    other_writers,
)
from crdharness.gate.checks.upgrade_writes import (
    RECREATE,
    RECREATE_STATUS,
    TOUCHED,
    Refusal,
    rewrite,
    settled,
)
from crdharness.gate.evidence import hazard_errors, names, objects, schemas
from crdharness.gate.given.manifests import Release
from crdharness.gate.results import CheckResult, RefusedWrite
from crdharness.gate.run.context import GateContext
from crdharness.progress import Tally


def write_baseline(ctx: GateContext, release: Release, written: list[Written]) -> None:
    """The writes ``upgrade`` will judge under the next release, made now under ``release``
    on the same objects: what this release already refuses is its own hazard (reported
    apart, once), so the next transition is judged on its own doing only. Data these writes
    lose by strategy None, or through the release's own webhook (``crds[i].webhook``), is
    this release's hazard; data they lose through the top-level webhook is the candidate's
    webhook's doing (it runs under every release naming none), which ``round-trip`` reports:
    noted on the transition, never its finding — one finding, one place. What the next
    release's writes lose beyond it stays one (a webhook changed between the releases too)."""
    upcoming = ctx.result("upgrade", subjects.transition(release.index + 1))
    written = [obj for obj in written if obj.kept_from is None]  # read, never written
    screened = [obj for obj in written if obj.screened]
    if screened:
        upgrade_screen.screen_baseline(ctx, release, screened)
    written = [obj for obj in written if not obj.screened]
    tally = Tally(
        ctx.report,
        f"gate: old objects written again under release {release.index + 1}",
        len(written),
    )

    def write(obj: Written) -> tuple[CheckResult, dict[str, str]]:
        tally.add()
        part, hazards = upcoming.part(), dict[str, str]()
        # Lost by the candidate's webhook (any release naming none runs it): round-trip's.
        # Lost by strategy None, or by this release's own webhook: its own hazard.
        by_none = not ctx.by_webhook(release, obj.crd) or ctx.own_webhook(release, obj.crd)
        own = ctx.hazard_errors if by_none else None
        # A source cluster's object is written only at versions the next release serves
        # too (those its writes are judged at): a write at any other version would leave a
        # managedFields entry the real object does not have.
        after = ctx.releases[release.index + 1].served(obj.crd) if obj.captured else None
        versions: list[str] = []
        for version, refused, now in _written_again(ctx, release, obj, after):
            versions.append(version)
            _remember(release, obj, version, refused, refused, hazards, own)
            _judge_baseline(ctx, part, hazards, release, obj, version, by_none, now)
        # Each version's writes leave what the writes at the versions before it did not
        # find (a server-side apply's managedFields entry at that version); the next
        # release's writes start from all of it. What this release refuses from there is its
        # own too, not the next release's doing: the earlier versions are written once more
        # (and read again: the next release's reads are judged from there).
        for version, refused, now in _written_again(ctx, release, obj, versions[:-1]):
            _remember(release, obj, version, refused, refused, hazards, own, adding=True)
            _judge_baseline(ctx, part, hazards, release, obj, version, by_none, now)
        return part, hazards

    for part, hazards in concurrency.each(write, written, ctx.config.concurrency):
        upcoming.add(part)
        _add_hazards(ctx, hazards)


def _judge_baseline(
    ctx, part, hazards, release: Release, obj: Written, version, by_none, now: dict | None
) -> None:
    """What a baseline write at ``version`` lost: by strategy None or through the release's
    own webhook (``by_none``), this release's hazard; through the candidate's webhook,
    round-trip's finding (noted)."""
    _check_unchanged_by_writes(
        ctx,
        part,
        hazards,
        release,
        obj,
        (version, now),
        release.index + 1,
        hazard=by_none,
        webhooks_own=not by_none,
    )


def _add_hazards(ctx: GateContext, hazards: dict[str, str]) -> None:
    """One object's hazards, added to the run's: each is reported once."""
    for key, line in hazards.items():
        ctx.hazards.setdefault(key, line)


def _written_again(ctx: GateContext, release: Release, obj: Written, only: list[str] | None = None):
    """``obj`` written again at each version ``release`` serves (of ``only``, if given;
    ``upgrade_writes``):
    (version, the writes the server refused twice in a row, or once where a second try
    cannot answer otherwise: ``settled``; the object as the last write answered, or None).
    A refusal it does not repeat (a 429 or a timeout on
    a busy machine) is neither a finding nor a hazard that would excuse the next release's
    real refusal of the same write."""
    resource = ctx.resource(obj.crd)
    converted = ctx.pointed(release.crds[obj.crd], release)["spec"].get("conversion") or {}
    webhooks = converted.get("strategy") == "Webhook" or bool(ctx.config.admission)
    for version in release.served(obj.crd):
        if only is not None and version not in only:
            continue
        entry = release.entry(obj.crd, version)
        has_status, rule = objects.has_status(entry), names.rule(entry)
        path = resource.path(version, obj.namespace, obj.name)
        read = obj.read_at(release.index, version)
        done = rewrite(ctx.cluster, path, version, has_status, rule, read)
        obj.written_now()
        refused, now = done.refused, done.now
        if refused and not settled(refused, webhooks):
            again = rewrite(ctx.cluster, path, version, has_status, rule)
            repeated = {r.key for r in again.refused}
            refused, now = [r for r in refused if r.key in repeated], again.now
        yield version, refused, now


def _remember(
    release: Release,
    obj: Written,
    version: str,
    refused: list[Refusal],
    known: list[Refusal],
    hazards: dict[str, str],
    own: hazard_errors.Hazards | None,
    adding: bool = False,
) -> None:
    """The writes ``release`` refuses at ``version`` become the next transition's baseline
    (``adding``: added to what it refused there already); ``known``, refused under a release
    for objects it (or a release before it, which refused them too) accepted, are its
    hazards (added to ``hazards``, reported apart; and, where ``own`` is given because the
    release converted them itself or by strategy None, to its field errors:
    ``evidence.hazard_errors``)."""
    kept = obj.baseline if adding else {k for k in obj.baseline if k[1] != version}
    obj.baseline = kept | {r.key for r in refused}
    for refusal in known:
        if own is not None:
            ratcheted = refusal.write not in (RECREATE, RECREATE_STATUS)
            written = RefusedWrite(ratcheted, refusal.message)
            own.add(release.index, obj.crd, version, written)
        hazards.setdefault(
            f"{obj.crd}:{refusal.key}:{refusal.status}",
            f"release {release.index + 1}: {obj.crd} at {version}: {refusal.write} is refused "
            f"for objects the release itself accepted: {refusal.status} "
            f"{refusal.message[:300]}",
        )


def write_all_again(
    ctx: GateContext, result, release: Release, written: list[Written]
) -> tuple[int, int]:
    """Every old object written again at every served version (see ``upgrade_writes``),
    and read back after each version's writes (what each version reads last is kept for
    the next release's comparison); a screened one only if its dry runs are refused
    (``upgrade_screen``). Returns the number of writes, and of those refused already under
    the earlier release."""
    written = [obj for obj in written if obj.kept_from is None]  # read, never written
    screened = [obj for obj in written if obj.screened]
    flagged = upgrade_screen.screen_candidate(ctx, release, screened) if screened else []
    dry_run_writes = sum(len(release.served(obj.crd)) for obj in screened)
    written = [obj for obj in written if not obj.screened] + flagged
    tally = Tally(
        ctx.report, f"gate: old objects written under release {release.index + 1}", len(written)
    )

    def write(obj: Written) -> tuple[CheckResult, dict[str, str], int, int]:
        tally.add()
        part, hazards, writes, known_count = result.part(), dict[str, str](), 0, 0
        by_none = not ctx.by_webhook(release, obj.crd) or ctx.own_webhook(release, obj.crd)
        own = ctx.hazard_errors if by_none else None
        for version, refused, now in _written_again(ctx, release, obj):
            writes += 4 + objects.has_status(release.entry(obj.crd, version))
            _check_unchanged_by_writes(
                ctx, part, hazards, release, obj, (version, now), release.index
            )
            obj.refused |= {r.write for r in refused}  # the operator's advice: what passed
            known = [r for r in refused if r.key in obj.baseline]  # refused before: hazards
            new = [r for r in refused if r not in known]
            answered = [r for r in new if _refused_answer(ctx, release, obj.crd, r)]
            owed = {id(r): after_earlier_loss(ctx, release, obj, version, r) for r in new}
            part.details += [line for line in owed.values() if line]
            new = [r for r in new if r not in answered and not owed[id(r)]]
            part.details += [
                f"{WEBHOOKS_OWN}: {obj.label}: {r.line[:300]} (the webhook's answer for this "
                "object, grown by the gate's own writes, is one kube-apiserver refuses: "
                "webhook-conduct judges the webhook's answers)"
                for r in answered
            ]
            known_count += len(known)
            obj.hazarded |= {r.key for r in known}
            _remember(release, obj, version, refused, known, hazards, own)
            if new:
                finding(
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

    writes, hazards_count = dry_run_writes, 0
    for part, hazards, count, known_count in concurrency.each(
        write, written, ctx.config.concurrency
    ):
        result.add(part)
        _add_hazards(ctx, hazards)
        writes += count
        hazards_count += known_count
    return writes, hazards_count


def _refused_answer(ctx: GateContext, release: Release, crd: str, refusal: Refusal) -> bool:
    """A write refused because kube-apiserver refuses the candidate's webhook's answer (its
    metadata: an annotation over 256 KiB), where every answer is judged by webhook-conduct
    (through the recording proxy): the webhook's misconduct, one finding in one place, not
    the upgrade's (the object grew by the gate's own writes through that same webhook)."""
    proxied = ctx.webhook is not None and getattr(ctx.webhook, "proxy", None) is not None
    by_candidates = not ctx.own_webhook(release, crd)
    return proxied and by_candidates and "returned invalid metadata" in refusal.message


def _check_unchanged_by_writes(
    ctx: GateContext,
    result,
    hazards: dict[str, str],
    release: Release,
    obj: Written,
    written: tuple[str, dict | None],
    stored: int,
    hazard: bool = False,
    webhooks_own: bool = False,
) -> None:
    """An old object written again at a version (``written``: it, and the object as the
    last write there answered, or None) with what was read there must read as it did
    before at every served version: a webhook that loses a field on the way to that version
    loses it from storage on the first controller update at it. Differences ``ctx.excused``
    between the version and the storage version are not findings. Each loss is named once,
    at the version whose writes made it: ``obj.seen`` moves on to what is read now."""
    version, now = written
    resource = ctx.resource(obj.crd)
    storage = release.storage(obj.crd)
    was = obj.seen.get(version)  # read at the version written, before these writes
    for at in release.served(obj.crd):
        # At the version written, the last write's answer is that read (``rewrite``).
        if at == version and now is not None:
            body = now
        else:
            got = call(ctx.cluster, "GET", resource.path(at, obj.namespace, obj.name))
            if not got.ok:
                continue  # unreadable: the next release's reads report it
            body = got.body
        before = obj.seen.get(at)
        obj.seen[at] = body  # the next writes, and the next release, are judged from here
        obj.read_now(release.index, at, body)
        if before is None:
            continue
        writers = other_writers(before, body)
        if writers:  # another client wrote it beside the gate's writes: not theirs to judge
            note_written_meanwhile(
                result, obj, f"written again at {version}, read at {at}", writers
            )
            continue
        found = [
            d
            for d in diff.differences(
                diff.comparable(before, ignore_annotations=(TOUCHED,)),
                diff.comparable(body, ignore_annotations=(TOUCHED,)),
            )
            if ctx.excused(d, version, storage, obj.crd, release) is None
        ]
        found = declared_first(release.version(obj.crd, version) or {}, found)
        let_default = [d for d in found if upgrade_reads.lets_default(ctx, release, obj, at, d)]
        for d in let_default:
            where = f"{obj.label} written again at {version}, read at {at}"
            upgrade_reads.note_let_default(result, release, obj, where, d)
        found = [d for d in found if d not in let_default]
        if hazard or webhooks_own:  # under the earlier release: what the next may do again
            note_growth(obj, version, at, diff.grown_lists(found))
            obj.lost_earlier |= {diff.schema_path(d.path) for d in found}
        else:
            regrown = _grown_again(obj, version, found)
            if regrown:
                result.details.append(
                    f"{WEBHOOKS_OWN}: {obj.label} written again at {version} (read at {at}): "
                    f"{diff.said(regrown)}, as the same write under release {release.index} "
                    "grew it already: each write of it grows it again (the gate's own writes), "
                    "not this release's doing"
                )
                found = [d for d in found if d not in regrown]
        if found and webhooks_own:
            result.details.append(
                f"{WEBHOOKS_OWN}: {obj.label} written again at {version} under "
                f"release {release.index + 1} already {diff.loses_or_changes(found)} "
                f"{diff.said(found)} through the webhook (read at "
                f"{at}); round-trip reports the webhook's losses"
            )
            continue
        masked = [d for d in found if not hazard and _hidden_by_default(ctx, release, obj, d)]
        for d in masked:
            line = (
                f"{obj.crd} {obj.label} written again at {version} loses {d.path} (read at "
                f"{at}: {d.describe()}); the same write under release {release.index} dropped "
                f"it from storage too, hidden on read by release {release.index}'s default, "
                f"which release {release.index + 1} removed"
            )
            upgrade_reads.no_longer_defaulted(ctx, result, obj, line, f"{obj.label}: {line}", d)
        found = [d for d in found if d not in masked]
        if not found:
            continue
        repaired = "" if hazard else upgrade_repaired.explained(ctx, obj, version, at, was, found)
        if repaired:
            result.details.append(repaired)
            continue
        if hazard:
            paths = diff.said(found)
            hazards.setdefault(
                f"{obj.crd}:lost:{version}:{paths}",
                f"release {release.index + 1}: {obj.crd} written again at {version} "
                f"({_how(ctx, release, obj.crd)}) {diff.loses_or_changes(found)} {paths} (read "
                f"at {at}), under this release itself",
            )
            continue
        compared = upgrade_fresh.judged(ctx, release, obj, version, at, before, found)
        if compared[0] is not None:
            result.details.append(compared[0])
        else:
            finding(
                ctx,
                result,
                obj,
                f"{obj.crd} {obj.label} (stored under release {stored}) lost or changed "
                f"{diff.said(found)} when written again at "
                f"{version} "
                f"with what was read there (read at {at})"
                + (f"; {compared[1]}" if compared[1] else ""),
                *(
                    f"{obj.label} written again at {version}, read at {at}: {d.describe()}"
                    for d in found[: diff.PATHS_SAID]
                ),
                *(
                    [f"{obj.label}: and {len(found) - diff.PATHS_SAID} more differences"]
                    if len(found) > diff.PATHS_SAID
                    else []
                ),
                paths=[d.path for d in found],
            )
            result.objects.append((f"{obj.label} at {at} before the writes", before))
            result.objects.append((f"{obj.label} at {at} after the writes at {version}", body))


def note_growth(obj: Written, version: str, at: str, grown) -> None:
    """Lists of ``obj`` that a write at ``version`` under the earlier release grew (read at
    ``at``). A list counts as growing with each write (``obj.grown``: the object is set apart)
    only once a second write grew it too: one that grew once and then held (a webhook giving
    an empty list one zero item) is no witness of growth, and the object stays for the
    upgrade."""
    for g in grown:
        if (version, at, g) in obj.grown_once:
            obj.grown.add((version, g))
        else:
            obj.grown_once.add((version, at, g))


def _grown_again(obj: Written, version: str, found: list[diff.Difference]) -> list:
    """The differences of ``found`` in a list that grows again (items appended) which the
    same write at ``version`` under the earlier release grew too: appended items, and items
    that moved within it. Items lost from it are not among them."""
    again = {g for g in diff.grown_lists(found) if (version, g) in obj.grown}
    return [
        d
        for d in found
        if d.change != "lost" and any(diff.at_or_under(diff.schema_path(d.path), g) for g in again)
    ]


def _hidden_by_default(ctx: GateContext, release: Release, obj: Written, d) -> bool:
    """A value lost by a write under ``release`` that equals the earlier release's default
    there, a default ``release`` removed: under the earlier release the same write dropped
    it from storage too, and its default filled it in again on every read."""
    if release.index == 0:
        return False
    earlier = ctx.releases[release.index - 1]
    if not upgrade_reads.default_removed(earlier, release, obj.crd, d):
        return False
    has, value = schemas.default_of(earlier.entry(obj.crd, earlier.storage(obj.crd)), d.path)
    return has and diff.same(value, d.before)


def _how(ctx: GateContext, release: Release, crd: str) -> str:
    """How ``release`` converts ``crd``, for its hazard's line."""
    if ctx.own_webhook(release, crd):
        return f"through release {release.index + 1}'s own webhook"
    return f"strategy {release.strategy(crd)}"
