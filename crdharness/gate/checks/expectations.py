"""Check *expected-conversion*: the user's own oracle, ``expect:`` in the gate file.

Each entry is a pair of files: an object as written at one version, and the same object as it
must read at another (how controller-runtime users write conversion tests, here through the
real API server and the user's webhook). Both directions are checked: created at A, it must
read at B as the second file says; created at B, it must read at A as the first says. Only what
a user writes is compared: every field but apiVersion, kind and metadata, and the labels and
annotations; values the version's schema defaults, absent from the file, may appear. A field
the file written at A holds that A's schema does not declare is not sent (the API server
would prune it before any conversion): what it should read as at B is "not proven", never
the webhook's failure.
"""

from __future__ import annotations

from crdharness.errors import HarnessError
from crdharness.gate import diff
from crdharness.gate.api import Resource, call
from crdharness.gate.evidence import objects, pruning, schemas
from crdharness.gate.given.config import Expectation
from crdharness.gate.given.manifests import documents
from crdharness.gate.results import CheckResult
from crdharness.gate.run.context import ROUND_TRIP_NS, GateContext


def load(expectation: Expectation) -> tuple[dict, dict]:
    """The two objects of an ``expect`` entry (one document each)."""
    found = []
    for path in (expectation.at, expectation.reads_at):
        docs = [doc for _, doc in documents([path])]
        if len(docs) != 1:
            raise HarnessError(f"{path}: an expect file holds exactly one object, not {len(docs)}")
        found.append(docs[0])
    return found[0], found[1]


def view(obj: dict) -> dict:
    """What a user writes of an object: its fields, labels and annotations."""
    shown = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
    metadata = obj.get("metadata") or {}
    kept = {k: metadata[k] for k in ("labels", "annotations") if metadata.get(k)}
    return {**shown, "metadata": kept} if kept else shown


def check(ctx: GateContext) -> None:
    for expectation in ctx.config.expect:
        result = ctx.result("expected-conversion", expectation.subject)
        first, second = load(expectation)
        crd = _crd_serving(ctx, first)
        if crd is None:
            served = f"{first.get('apiVersion')} {first.get('kind')}"
            result.fail(f"{expectation.at.name}: no CRD of the candidate serves {served}")
            continue
        _expect(ctx, result, crd, first, second)
        _expect(ctx, result, crd, second, first)
        a, b = _version(first), _version(second)
        if result.passed and result.pruned:
            result.passed = None
            result.evidence = (
                "not proven: fields a file holds that its version's schema does not declare "
                "were not sent (the API server would prune them), so how they read at the "
                "other version is untested: " + "; ".join(result.pruned)
            )
        elif result.passed:
            result.evidence = f"written at {a} it reads at {b} as expected, and back"


def _crd_serving(ctx: GateContext, obj: dict) -> str | None:
    group = str(obj.get("apiVersion", "")).rpartition("/")[0]
    for name, crd in ctx.candidate.crds.items():
        if crd["spec"]["group"] == group and crd["spec"]["names"]["kind"] == obj.get("kind"):
            return name
    return None


def _expect(ctx: GateContext, result: CheckResult, crd: str, written: dict, expected: dict) -> None:
    manifest = ctx.candidate.crds[crd]
    resource = Resource.of(manifest)
    a, b = _version(written), _version(expected)
    entry, at_b = ctx.candidate.version(crd, a), ctx.candidate.version(crd, b)
    if entry is None or at_b is None or not (entry.get("served") and at_b.get("served")):
        result.fail(f"{crd}: the candidate does not serve both {a} and {b}")
        return
    namespace = ROUND_TRIP_NS if resource.namespaced else None
    name = ctx.name("expect", entry, crd)
    with ctx.held(crd, namespace, name, entry):  # a singleton's objects: one at a time
        _expect_named(ctx, result, crd, written, expected, name, namespace)


def _expect_named(
    ctx: GateContext,
    result: CheckResult,
    crd: str,
    written: dict,
    expected: dict,
    name: str,
    namespace: str | None,
) -> None:
    manifest = ctx.candidate.crds[crd]
    resource = Resource.of(manifest)
    a, b = _version(written), _version(expected)
    entry, at_b = ctx.candidate.entry(crd, a), ctx.candidate.entry(crd, b)
    refusals: list = []
    body, dropped = pruning.sendable(entry, objects.sample_body(written))
    created = ctx.create(manifest, entry, a, name, namespace, body, refusals=refusals)
    if created is None:
        message = refusals[0].message if refusals else "refused"
        result.fail(f"the object of {a} cannot be created at {a}: {message}")
        return
    try:
        read = call(ctx.cluster, "GET", resource.path(b, namespace, name))
        if not read.ok:
            result.fail(f"written at {a}, it cannot be read at {b}: {read.message}")
            return
        found = [
            d
            for d in diff.differences(view(expected), view(read.body))
            if not (d.change == "added" and schemas.defaulted(at_b, d.path))
        ]
        # Not sent, so not the webhook's to carry: at or under those paths nothing is judged.
        found, notes = pruning.not_the_webhooks(found, dropped, a)
        result.pruned += [note for note in notes if note not in result.pruned]
        if found:
            paths = ", ".join(sorted({d.path for d in found}))
            result.fail(
                f"written at {a}, it reads at {b} otherwise than expected: {paths}",
                *(f"{a} -> {b}: {d.describe()}" for d in found),
            )
            result.objects.append((f"expected at {b}", expected))
            result.objects.append((f"read at {b}", view(read.body)))
    finally:
        call(ctx.cluster, "DELETE", resource.path(a, namespace, name))


def _version(obj: dict) -> str:
    return str(obj.get("apiVersion", "")).rpartition("/")[2]
