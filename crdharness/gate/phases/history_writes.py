"""One object written under a release as the history writes it: its name (what wrote it,
under which release, at which version), and the write itself, read back at every served
version (``write_one``; ``replay`` and ``singletons`` are handed it)."""

from __future__ import annotations

from crdharness.gate.api import Answer, Resource, call
from crdharness.gate.checks.upgrade import Written
from crdharness.gate.evidence import objects, pruning
from crdharness.gate.given.manifests import Release
from crdharness.gate.results import NotConvertible
from crdharness.gate.run.context import HISTORY_NS, GateContext


def object_name(
    ctx: GateContext, release: Release, prefix: str, version: str, entry: dict, crd: str
) -> str:
    """An object's name: what wrote it, under which release, at which version (as the
    schema of ``entry``, that version, requires names to be)."""
    return ctx.name(f"{prefix}{release.index + 1}-{version}", entry, crd)


def write_one(
    ctx: GateContext,
    release: Release,
    name: str,
    entry: dict,
    body: dict,
    obj_name: str,
    refusals: list[Answer] | None,
    namespace: str | None = HISTORY_NS,
    read_back: bool = True,
) -> Written | None:
    """Create one object of ``name`` at ``entry``'s version, read it back at every served
    version (unless not ``read_back``: its reads come from a LIST); None if refused
    (counted, or added to ``refusals``)."""
    manifest = release.crds[name]
    resource = Resource.of(manifest)
    version = entry["name"]
    # A sample written for the candidate may hold fields this release's schema at
    # ``version`` does not declare yet: the API server would prune them. Not sent, so
    # ``sent`` is what the object really held (its reads are judged against it).
    body, _ = pruning.sendable(entry, body)
    # A generated object the API server's own rules refuse is repaired first, or not sent.
    body, refused = ctx.screening.screen(manifest, entry, body, obj_name, namespace)
    if refused is not None:
        if refusals is not None:
            refusals.append(refused)
        else:
            ctx.count_refusal(refused)
        return None
    try:
        created = ctx.create(manifest, entry, version, obj_name, namespace, body, refusals=refusals)
    except NotConvertible as failure:
        # The candidate's convertibility check judges this on its own objects; here it
        # only means one object fewer for the upgrade.
        why = f"could not be created at {version} (its conversion for storage failed)"
        ctx.count(why, failure.evidence)
        return None
    if created is None:
        return None
    record = Written(
        name,
        version,
        obj_name,
        namespace if resource.namespaced else None,
        sent=objects.intent(body),
    )
    for other in release.served(name) if read_back else []:
        got = call(ctx.cluster, "GET", resource.path(other, record.namespace, obj_name))
        if got.ok:
            record.seen[other] = got.body
            record.read_now(release.index, other, got.body)
        elif got.status >= 500:
            # Its own release cannot convert it (the webhook fails on a value the schema
            # allows): that release's defect, which convertibility reports on the candidate's
            # own objects. Kept, it would only fail the next release's install (its watch
            # cache converts every stored object), blamed on the upgrade.
            call(ctx.cluster, "DELETE", resource.path(version, record.namespace, obj_name))
            ctx.count(
                f"could not be read at {other} under its own release (its conversion failed)",
                f"{got.status} {got.message}",
            )
            return None
    return record
