"""The history's objects: drawn for each CRD version, written (CRDs side by side, each
CRD's objects ``concurrency`` at once) and read back at every served version. What a write
finds is judged in the CRDs' order, so a report does not depend on which answer came first.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

from crdharness.gate import concurrency, subjects
from crdharness.gate.api import Answer, Resource, call
from crdharness.gate.checks.upgrade import Written
from crdharness.gate.evidence import coverage_objects, objects, pruning
from crdharness.gate.given.manifests import Release
from crdharness.gate.phases import singletons
from crdharness.gate.results import NotConvertible
from crdharness.gate.run.context import HISTORY_NS, GateContext

DRAWS_PER_OBJECT = 3  # drawn per generated object wanted, for the server's refusals


def write_objects(
    ctx: GateContext, release: Release, count: int | None = None, prefix: str = "r"
) -> list[Written]:
    """Objects at every served version (samples, then ``count`` generated, by default
    enough for ``min_objects`` per CRD and at least ``upgrade_objects`` per version), read
    back at each."""
    jobs: list[list[_Prepared]] = []  # per CRD: its versions', written in order
    for name in ctx.live(release):
        served = [e for e in release.versions(name) if e.get("served")]
        if count is None:
            per_version = -(-ctx.config.min_objects // max(len(served), 1))
            wanted = max(ctx.config.upgrade_objects, per_version)
        else:
            wanted = count
        # Drawn here, one after another (hypothesis draws on one thread).
        jobs.append([_prepare(ctx, release, name, entry, wanted, prefix) for entry in served])
    # CRDs written side by side (each its objects ``concurrency`` at once): a release of
    # many CRDs does not wait out each one's round trips in turn. What they find is
    # judged afterwards, in the CRDs' order.
    outcomes = concurrency.each(
        lambda job: [_write_prepared(ctx, release, one) for one in job], jobs, CRDS_AT_ONCE
    )
    written: list[Written] = []
    for job, done in zip(jobs, outcomes, strict=True):
        for one, (records, refused) in zip(job, done, strict=True):
            for body, answer in refused:
                _sample_refused(ctx, release, one.name, one.entry["name"], body, answer)
            written += records
    ctx.report(f"gate: release {release.index + 1}: {len(written)} objects written")
    return written


CRDS_AT_ONCE = 4  # CRDs whose objects are written at once (``write_objects``)


@dataclass
class _Prepared:
    """One CRD version's objects to write: drawn, not yet sent."""

    name: str
    entry: dict
    prefix: str
    samples: list[dict]
    drawn: Iterator[dict]
    wanted: int
    kept: list[Written] | None = None  # a singleton's: kept for the transition (``_keep``)


def _prepare(
    ctx: GateContext, release: Release, name: str, entry: dict, wanted: int, prefix: str
) -> _Prepared:
    """The user's samples of ``name`` at ``entry``'s version, then coverage objects and
    drawn ones (``_write_prepared`` writes them until ``wanted`` more are accepted)."""
    version = entry["name"]
    # A source cluster's objects are the samples of the round trips; the history replays
    # them itself (``replay``).
    samples = [] if ctx.source else ctx.sample_bodies(name, version)
    # Every declared path first (as in the round trips); three times as many drawn, for refusals.
    with ctx.timed("history: drawing objects (of writing them)"):
        built = coverage_objects.bodies(entry)
        drawn = built + objects.first_examples(entry, wanted * DRAWS_PER_OBJECT, ctx.config.seed)
    wanted += len(built)
    prepared = _Prepared(name, entry, prefix, samples, iter(drawn), wanted)
    if singletons.one_at_a_time(release, name):  # one at a time: not beside others
        prepared.kept = _keep(ctx, release, name, entry, samples, drawn, wanted)
    return prepared


def _write_prepared(
    ctx: GateContext, release: Release, job: _Prepared
) -> tuple[list[Written], list[tuple[dict, Answer]]]:
    """``job``'s objects written, ``concurrency`` at once, kept in order; and the refusals
    of the candidate's samples, for the caller to judge in order."""
    if job.kept is not None:
        return job.kept, []
    name, entry, version = job.name, job.entry, job.entry["name"]
    # The user's samples are written for the candidate: one it refuses is a finding (any
    # other release may predate the sample's fields).
    judged = release is ctx.candidate
    batch = [(body, True) for body in job.samples] + [
        (b, False) for b in itertools.islice(job.drawn, job.wanted)
    ]
    written: list[Written] = []
    refused: list[tuple[dict, Answer]] = []
    accepted = 0

    def write(item: tuple[dict, bool, str]) -> tuple[Written | None, list[Answer]]:
        body, sample, obj_name = item
        refusals: list[Answer] = []
        record = write_one(
            ctx, release, name, entry, body, obj_name, refusals if sample and judged else None
        )
        return record, refusals

    while batch:
        # Named here, in order: the same run names the same objects the same way.
        named = [
            (body, sample, object_name(ctx, release, job.prefix, version, entry, name))
            for body, sample in batch
        ]
        outcomes = concurrency.each(write, named, ctx.config.concurrency)
        for (body, sample), (record, refusals) in zip(batch, outcomes, strict=True):
            refused += [(body, answer) for answer in refusals]
            if record is not None:
                record.sample = sample
                accepted += not sample
                written.append(record)
        batch = [(b, False) for b in itertools.islice(job.drawn, max(job.wanted - accepted, 0))]
    return written, refused


def _keep(
    ctx: GateContext,
    release: Release,
    name: str,
    entry: dict,
    samples: list[dict],
    drawn: list[dict],
    wanted: int,
) -> list[Written]:
    """A singleton's objects (``singletons``): kept, to be created and judged one at a time
    at the next transition; the candidate's samples are judged now, each deleted after."""
    if release is not ctx.candidate:
        ctx.pending.setdefault(release.index, []).extend(
            [singletons.Pending(name, entry, body, sample=True) for body in samples]
            + [singletons.Pending(name, entry, body, wanted=wanted) for body in drawn]
        )
        return []
    version = entry["name"]
    resource = Resource.of(release.crds[name])
    for body in samples:
        refusals: list[Answer] = []
        obj_name = object_name(ctx, release, "r", version, entry, name)
        with ctx.held(name, HISTORY_NS if resource.namespaced else None, obj_name, entry):
            record = write_one(ctx, release, name, entry, body, obj_name, refusals)
            if record is not None:
                call(ctx.cluster, "DELETE", resource.path(version, record.namespace, obj_name))
        for answer in refusals:
            _sample_refused(ctx, release, name, version, body, answer)
    return []


def _sample_refused(
    ctx: GateContext, release: Release, name: str, version: str, body: dict, answer: Answer
) -> None:
    """The candidate refuses one of the user's samples: a finding of its install, or of the
    upgrade to it."""
    check = "upgrade" if release.index else "install"
    subject = (
        subjects.transition(release.index) if release.index else subjects.release(release.index)
    )
    ctx.result(check, subject).fail(
        f"the candidate refuses your sample {name} at {version}: {answer.status} {answer.message}",
        f"sample {body.get(objects.NAME, '?')} at {version}: {answer.message}",
    )


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
