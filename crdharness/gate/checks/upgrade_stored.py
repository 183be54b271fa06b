"""Part of check *upgrade*: whether the candidate reads what an earlier release stored as it
reads the same object written under it.

A webhook fixed in the candidate may still read what the earlier release's own webhook
stored without what the fix now keeps (api-gateway 3.1.1 restores an APIRule 3.1.0 stored
without its ``corsPolicy``; a field kept in an annotation at the storage version reads there
without it until the object is written again). Such an object reads no worse than before
the upgrade, so it is no finding of the candidate (``read_again`` judged that), but the fix
does not reach it: said apart, as a hazard of the earlier release, with the fields.

The objects compared are those the history kept as stored (``history._kept_as_stored``: a
few per version, written once through an earlier release's own webhook and never again, as
most objects of a cluster are when an upgrade comes; the others are rewritten by the
upgrade's writes first). Each is created again under the candidate, at the version it was
written at, from what it read there just before the upgrade; both are read at every served
version and compared, metadata aside.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

from crdharness.gate import concurrency, diff
from crdharness.gate.api import call, ensure_namespace
from crdharness.gate.checks.upgrade_objects import Written
from crdharness.gate.evidence import objects
from crdharness.gate.given.manifests import Release
from crdharness.gate.results import CheckResult, NotConvertible
from crdharness.gate.run.context import ROUND_TRIP_NS, GateContext

PREFIX = "stored-twin"
# A note on the upgrade row (no finding): objects stored earlier lack what new ones hold.
STORED_OTHERWISE = "stored under an earlier release, read without what new objects hold"


def reads_before(
    ctx: GateContext, release: Release, written: list[Written]
) -> dict[int, tuple[str, dict]]:
    """Each object kept as stored (``Written.kept_from``: written once, through its
    release's own webhook, at a version that webhook converts from) as it read there just
    before the upgrade (``Written.read_at``), to be taken before the new release's reads
    replace it. Empty where the comparison does not apply."""
    if release is not ctx.candidate or not release.index:
        return {}
    previous = ctx.releases[release.index - 1]
    found: dict[int, tuple[str, dict]] = {}
    for obj in written:
        if obj.kept_from is None or not _applies(ctx, release, obj):
            continue
        read = obj.read_at(previous.index, obj.version)
        if read is not None:
            found[id(obj)] = (obj.version, read)
    return found


def compare(
    ctx: GateContext,
    result: CheckResult,
    release: Release,
    written,
    before: dict[int, tuple[str, dict]],
) -> None:
    """Each old object of ``before`` against a new object like it under ``release``; what
    differs is a hazard of the release before (one line per CRD and version read at)."""
    chosen = [obj for obj in written if id(obj) in before]
    if not chosen:
        return
    if any(ctx.resource(obj.crd).namespaced for obj in chosen):
        ensure_namespace(ctx.cluster, ROUND_TRIP_NS)
    outcomes = concurrency.each(
        lambda obj: _twin(ctx, release, obj, *before[id(obj)]), chosen, ctx.config.concurrency
    )
    differing: defaultdict[tuple[str, str], dict[str, list[diff.Difference]]] = defaultdict(dict)
    for obj, (found, why_not) in zip(chosen, outcomes, strict=True):
        if why_not:
            result.details.append(
                f"{obj.crd} {obj.label}: not compared with a new object ({why_not})"
            )
        for version, differences in found.items():
            differing[(obj.crd, version)][obj.label] = differences
    earlier = release.index  # the release before the candidate, numbered from 1
    for (crd, version), by_object in sorted(differing.items()):
        named = sorted({d.path for each in by_object.values() for d in each})
        label, first = next(iter(by_object.items()))
        line = (
            f"release {earlier}: {crd}: {len(by_object)} object(s) it stored read at {version} "
            f"under release {earlier + 1} without what the same object(s) written under "
            f"release {earlier + 1} hold: {', '.join(named[:8])}"
            + (f" and {len(named) - 8} more" if len(named) > 8 else "")
            + f" (e.g. {label}: {'; '.join(d.describe() for d in first[:3])}): "
            f"release {earlier + 1}'s conversion does not reach what release {earlier}'s "
            "webhook stored until such an object is written again"
        )
        ctx.hazards.setdefault(f"{crd}:stored-otherwise:{version}", line)
        result.details.append(f"{STORED_OTHERWISE}: {line}")


def _applies(ctx: GateContext, release: Release, obj: Written) -> bool:
    """The release that stored ``obj`` converted it through a webhook of its own, and the
    candidate converts through one, at a version it still serves."""
    if obj.crd not in release.crds or obj.version not in release.served(obj.crd):
        return False
    if obj.kept_from is None or not ctx.own_webhook(ctx.releases[obj.kept_from], obj.crd):
        return False
    return ctx.by_webhook(release, obj.crd)


def _twin(
    ctx: GateContext, release: Release, obj: Written, version: str, read: dict
) -> tuple[dict[str, list[diff.Difference]], str]:
    """A new object like ``obj`` (as ``read`` at ``version``) created under ``release`` at
    ``version`` and read at every
    served version: version -> the differences from ``obj`` read there; why not compared."""
    manifest, entry = release.crds[obj.crd], release.entry(obj.crd, version)
    resource = ctx.resource(obj.crd)
    namespace = ROUND_TRIP_NS if resource.namespaced else None
    name = ctx.name(PREFIX, entry, obj.crd)
    body = objects.sample_body(diff.comparable(read))
    body.pop(objects.NAME, None)
    refusals: list = []
    try:
        with ctx.held(obj.crd, namespace, name, entry):
            created = ctx.create(manifest, entry, version, name, namespace, body, refusals)
            if created is None:
                why = refusals[0] if refusals else None
                return {}, (
                    f"refused under release {release.index + 1}: {why.status} {why.message[:200]}"
                    if why
                    else "refused"
                )
            found = _differences(ctx, release, obj, resource.path, namespace, name)
            call(ctx.cluster, "DELETE", resource.path(version, namespace, name))
    except NotConvertible as failure:  # a failure to store it is round-trip's to name
        return {}, f"not stored under release {release.index + 1}: {failure.evidence[:200]}"
    return found, ""


def _differences(
    ctx: GateContext,
    release: Release,
    obj: Written,
    path: Callable[..., str],
    namespace: str | None,
    name: str,
) -> dict[str, list[diff.Difference]]:
    found: dict[str, list[diff.Difference]] = {}
    for version in release.served(obj.crd):
        old = obj.seen.get(version)
        got = call(ctx.cluster, "GET", path(version, namespace, name))
        if old is None or not got.ok:
            continue
        # What a new object holds and the old one lacks; what the new one lacks is the
        # candidate's own loss on new objects, round-trip's to name.
        held = [
            d for d in diff.differences(_content(old), _content(got.body)) if d.change == "added"
        ]
        if held:
            found[version] = held
    return found


def _content(obj: dict) -> dict:
    """What an object holds, whoever wrote it: not its metadata (its name, and what the
    gate's own writes left there, differ by construction)."""
    return {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
