"""What a client reading version B sees of an object written at A, where the webhook keeps
part of it in annotations of its own.

A webhook may keep the whole old object in an annotation on the way to B and put it back on
the way up (api-gateway keeps the v1beta1 spec whole while v2 holds what it can of it: a
CORS ``maxAge`` as whole seconds, only the header and cookie mutators). A->B->A is then
exact, and B's fields that differ from A's in type or path have no expected value to compare
with, yet every controller reading B acts on less than was written (``1.5s`` as ``1``).

The object read at B, without the annotations the webhook added, is what such a client
knows. It is created again at B under the same name (the round trip's object deleted
first), read at A, written there and read at B again. Where it reads the same at B (the way
back from B loses nothing B shows), what differs at A from the object as written is held at
B only in the webhook's annotations: both read the same at B. Where it does not, the probe
cannot tell the two apart ("not decided": the B->A round trips judge that loss). Listed
apart, naming each path, with what B shows there; not a finding (a field B has no room for
is kept there by design) unless ``strict``. Run only where the reading at B carries such
annotations: a webhook that keeps none costs nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from crdharness.gate import diff
from crdharness.gate.api import Resource, call
from crdharness.gate.checks import annotation_objects
from crdharness.gate.checks.pair_record import PairRecord
from crdharness.gate.checks.respelling import TOUCH
from crdharness.gate.checks.round_trip_steps import Steps
from crdharness.gate.evidence import coverage, objects, schemas
from crdharness.gate.given.manifests import Release
from crdharness.gate.run.context import GateContext

HEADING = "held at {b} only in the webhook's annotations"
UNDECIDED = "seen at B not decided"  # a pair's count of objects the probe could not decide
# A pair's count of objects carrying the webhook's annotations at B whose round trip was not
# equal: not probed (their loss is the round trip's finding, or its earlier release's debt).
NOT_PROBED = "seen at B not probed"


def not_probed(count: int, a: str, b: str) -> str:
    """The pair's line for the objects the probe did not look at (said, never passed over)."""
    return (
        f"{a}->{b}: not probed on {count} object(s) carrying the webhook's annotations at {b}: "
        f"their round trip was not equal (its differences are reported, as a finding or as "
        f"the earlier release's debt), so what {b} shows of them was not looked at"
    )


@dataclass
class Hidden:
    """The differences at A of the object re-created from its reading at B, and the notes
    saying them (each with what B shows there)."""

    found: list[diff.Difference]
    notes: list[str]
    keys: list[str]  # the webhook's annotation keys left out of the reading
    left_out: str = ""  # what was not compared, and why (a status B refuses to take)


def added_keys(sent: dict, read_at_b: dict) -> list[str]:
    """Annotation keys on the reading at B that the object written did not carry (nor the
    gate's own write, nor kubectl's copy of the object)."""
    had = (sent.get("metadata") or {}).get("annotations") or {}
    now = (read_at_b.get("metadata") or {}).get("annotations") or {}
    return sorted(k for k in now if k not in had and k not in annotation_objects.IGNORED)


def probe(
    ctx: GateContext,
    release: Release,
    crd: str,
    resource: Resource,
    where: tuple[str | None, str],
    a: str,
    b: str,
    sent: dict,
    original: dict,
    read_at_b: dict,
    judged: Callable[[list], list],
) -> Hidden | str | None:
    """``Hidden`` (possibly with nothing found), a line saying why the probe could not
    decide, or None where the reading at B carries no annotation of the webhook's.
    ``where``: the object's (namespace, name); ``judged``: the round trip's own filter of
    differences (``allow`` entries, normalised zero values)."""
    keys = added_keys(sent, read_at_b)
    if not keys:
        return None
    namespace, name = where
    storage = release.storage(crd)
    at = storage if storage in release.served(crd) else a
    gone = call(ctx.cluster, "DELETE", resource.path(at, namespace, name))
    if not gone.ok or (gone.body.get("metadata") or {}).get("finalizers"):
        return f"not decided: the round trip's object was not deleted at once ({gone.status})"
    known = {k: v for k, v in (read_at_b.get("metadata") or {}).items() if k in KEPT_METADATA}
    annotations = {k: v for k, v in (known.get("annotations") or {}).items() if k not in keys}
    annotations = {k: v for k, v in annotations.items() if k not in annotation_objects.IGNORED}
    known["annotations"] = annotations
    if not annotations:
        del known["annotations"]
    own_status = objects.has_status(release.entry(crd, b))  # else the status is a field
    body = {k: v for k, v in read_at_b.items() if k != "metadata"}
    if own_status:
        body.pop("status", None)
    body["metadata"] = {**known, "name": name, **({"namespace": namespace} if namespace else {})}
    left_out = ""
    made = call(ctx.cluster, "POST", resource.path(b, namespace), body)
    if not made.ok:
        return f"not decided: created again at {b} without them: {made.status} {made.message[:200]}"
    if "status" in read_at_b and own_status:
        status = call(
            ctx.cluster,
            "PUT",
            resource.path(b, namespace, name) + "/status",
            {**made.body, "status": read_at_b["status"]},
        )
        if not status.ok:  # (an update ratchets what a new object's status write judges)
            left_out = (
                f"status not compared: its status as read at {b}, written to the object made "
                f"there: {status.status} {status.message[:200]}"
            )
    with_status = not left_out
    back = call(ctx.cluster, "GET", resource.path(a, namespace, name))
    if not back.ok:
        return f"not decided: read at {a}: {back.status} {back.message[:200]}"
    found = judged(
        diff.differences(_fields(original, with_status), _fields(back.body, with_status))
    )
    if not found:
        return Hidden([], [], keys, left_out)

    # Only where the object made at B comes back the same at B through A does a difference
    # at A say what B does not show; else the way back loses it (the B->A pair's finding).
    def kept(found: list[diff.Difference]) -> list[diff.Difference]:
        return [d for d in found if ctx.excused(d, b, a, crd, release) is None]

    lost_on_the_way = _way_back(
        ctx, resource, where, (a, b), back.body, read_at_b, kept, with_status
    )
    if lost_on_the_way:
        return (
            f"not decided: the object made at {b} from its reading there does not read the "
            f"same at {b} after a write at {a} ({lost_on_the_way}): what {b} shows cannot be "
            f"told from what the way back loses (the {b}->{a} round trips judge that)"
        )
    b_schema = objects.body_schema(release.entry(crd, b))
    notes = []
    for d in found:
        path = diff.schema_path(d.path)
        if coverage.node_at(b_schema, path) is None:
            there = f"{b} has no field {path}"
        elif schemas.present(read_at_b, d.path):
            there = f"{b} shows {diff.short(schemas.value_at(read_at_b, d.path))}"
        else:
            there = f"{b} shows none"
        notes.append(f"{a}->{b}: {d.describe()} ({there}; both read the same at {b})")
    return Hidden(found, notes, keys, left_out)


def _way_back(
    ctx: GateContext,
    resource: Resource,
    where: tuple[str | None, str],
    versions: tuple[str, str],
    at_a: dict,
    read_at_b: dict,
    kept: Callable[[list[diff.Difference]], list[diff.Difference]],
    with_status: bool,
) -> str:
    """What the object made at B lost or changed at B after being written as read at A
    (B->A->B: "" when nothing): a real write (the gate's own annotation set), so the
    conversion to the storage version runs whichever version that is."""
    namespace, name = where
    a, b = versions
    at_a.setdefault("metadata", {}).setdefault("annotations", {})[TOUCH] = a
    written = call(ctx.cluster, "PUT", resource.path(a, namespace, name), at_a)
    if not written.ok:
        return f"written at {a}: {written.status} {written.message[:120]}"
    again = call(ctx.cluster, "GET", resource.path(b, namespace, name))
    if not again.ok:
        return f"read at {b}: {again.status} {again.message[:120]}"
    before, after = _fields(read_at_b, with_status), _fields(again.body, with_status)
    changed = kept(diff.differences(before, after))  # no omitempty
    return diff.said(changed) if changed else ""


# What a client copying an object keeps of its metadata (the rest is the server's; no
# finalizers: the object made here must go with the round trip's own DELETE).
KEPT_METADATA = ("labels", "annotations")


def _fields(obj: dict, with_status: bool = True) -> dict:
    """The object's data: its fields and status, not its metadata (another object's
    identity, and the webhook's annotations, which are what is left out)."""
    left = ("metadata", "kind") if with_status else ("metadata", "kind", "status")
    return {k: v for k, v in diff.comparable(obj).items() if k not in left}


def settle(
    hidden: Hidden | str | None,
    seen: PairRecord,
    steps: Steps,
    strict: bool,
    versions: tuple[str, str],
    name: str = "",
) -> None:
    """``probe``'s answer into the pair's record (``seen``: listed apart, each path with its
    note) or, under ``strict``, into the round trip's failure (``steps``). A line naming no
    path is said once per cause, whatever the object (``name`` out of the server's words)."""
    a, b = versions

    def line(text: str) -> str:
        return f"{a}->{b}: " + (text.replace(f'"{name}"', "the object") if name else text)

    if isinstance(hidden, str):
        seen.counts[UNDECIDED] += 1
        seen.note_hidden({}, [line(hidden)])
    elif hidden is not None:
        if hidden.left_out:
            seen.note_hidden({}, [line(hidden.left_out)])
        if not hidden.found:
            return
        if strict:
            steps.add(said(hidden, a, b), hidden.found, at_b=True)
        else:
            paths: dict[str, str] = {}
            for d, note in zip(hidden.found, hidden.notes, strict=True):
                paths.setdefault(diff.schema_path(d.path), note)
            seen.note_hidden(paths)


def said(hidden: Hidden, a: str, b: str) -> str:
    """The headline of a round trip that fails for it (under ``strict``)."""
    return (
        f"written at {a}, read at {b} and created again there without the webhook's "
        f"annotations ({', '.join(hidden.keys)}), read at {a}: changed {{paths}} "
        f"({HEADING.format(b=b)})"
    )
