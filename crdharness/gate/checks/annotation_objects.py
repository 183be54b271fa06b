"""The webhook's own annotations: keys it writes into objects it converts, learned from the
reviews the recording proxy kept, and objects at the old version carrying them round-tripped.

Go webhooks often keep a field the other version lacks in an annotation on the way down
(cluster-api's ``…/conversion-data``, capsule's ``…/cordon``) and read it back on the way up;
some fill new fields from an annotation an old object carries. The objects the gate draws
carry only annotations of its own (``gate.example.com/…``), so a webhook that loses or
mangles a value of such a key, or drops a user's annotation of that key, would go unseen.
Here the keys come from the webhook's answers (a key present in a converted object and
absent from the object sent), and the objects from those answers: the converted object
itself, as a user reads it at the old version and writes it again (``kubectl get -o yaml |
kubectl apply``, a GitOps re-apply, a restore), so the value is consistent with the rest of
the object; and, for a flag-like value (``true``/``false``), the same object with the other
flag, and with ``yes`` (no flag Go parses), as a user who sets the annotation by hand writes
it. No key is known in advance.

How a round trip judges annotations (``own_annotations``, used by ``object_round_trip``):

- an annotation on the object the user wrote (sent) that is missing or changed after
  A->B->A is a loss like any other (a user's data, or what fed a field at B);
- an annotation the webhook added (absent from the object sent) that is still there at A
  after the round trip, or changed there, is its bookkeeping, not a user's data: listed
  apart ("the webhook's own annotations"), not a finding unless ``strict`` (what it carried
  shows as the fields it fed, which are judged as data);
- a webhook's annotation it strips again on the way back leaves no difference at all.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from crdharness.gate import diff
from crdharness.gate.checks import respelling
from crdharness.gate.evidence import objects
from crdharness.gate.results import RoundTripFailure

ANNOTATIONS = "metadata.annotations"
PER_KEY = 2  # converted objects taken per key (each with its flag flipped where flag-like)
FLAGS = ("true", "false")
# A flag's value a person may type that no Go ``strconv.ParseBool`` reads (capsule ignores
# the error and stores false; others fail the conversion): a user's value all the same.
NOT_A_FLAG = "yes"
USER = "as a user sets it"
NEVER_WRITTEN = "a value it never writes, as a user may set it"
MAX_BODIES = 24  # per version pair


def written(exchanges: list, group: str, kind: str, version: str) -> dict[str, list[dict]]:
    """The annotation keys the webhook added to objects of ``kind`` it converted to
    ``version`` (``exchanges``: the proxy's records), each with up to ``PER_KEY`` of those
    converted objects (each with a value of that key not taken yet), in the order answered."""
    found: dict[str, list[dict]] = {}
    wanted = f"{group}/{version}"
    for e in exchanges:
        request = (e.request or {}).get("request") or {}
        if request.get("desiredAPIVersion") != wanted:
            continue
        response = (e.answer or {}).get("response") if isinstance(e.answer, dict) else None
        converted = (response or {}).get("convertedObjects") or []
        sent = request.get("objects") or []
        for before, after in zip(sent, converted, strict=False):
            if not isinstance(after, dict) or after.get("kind") != kind:
                continue
            had = _annotations(before)
            for key, value in _annotations(after).items():
                if key in had or key in IGNORED:
                    continue
                kept = found.setdefault(key, [])
                values = {_annotations(o).get(key) for o in kept}
                if len(kept) < PER_KEY and value not in values:
                    kept.append(after)
    return found


# The gate's own write at B, and kubectl's copy of the object.
IGNORED = (respelling.TOUCH, "kubectl.kubernetes.io/last-applied-configuration")


def bodies(found: dict[str, list[dict]]) -> list[tuple[str, dict]]:
    """Bodies to create at the old version, each with what it is for a report: each object
    the webhook answered as it answered it (once, whatever keys it carries), and with a
    flag-like key's other value and ``yes``; at most ``MAX_BODIES`` (a webhook whose keys
    hold a user's names, one per owner, writes new keys for every object), each key's
    first object and its values before any key's second, so that a cut leaves out second
    objects, never a key (``left_out`` says what)."""
    return _ordered(found)[:MAX_BODIES]


def left_out(found: dict[str, list[dict]]) -> list[str]:
    """The labels of the bodies ``bodies`` leaves out for ``MAX_BODIES``."""
    return [label for label, _ in _ordered(found)[MAX_BODIES:]]


def _ordered(found: dict[str, list[dict]]) -> list[tuple[str, dict]]:
    made: list[tuple[str, dict]] = []
    taken: set[int] = set()
    for turn in range(PER_KEY):
        for key, converted in found.items():
            if turn >= len(converted):
                continue
            obj = converted[turn]
            body = _body(obj)
            value = _annotations(obj)[key]
            if id(obj) not in taken:
                taken.add(id(obj))
                made.append((_label(key, value), body))
            if value.lower() in FLAGS:
                other = FLAGS[1 - FLAGS.index(value.lower())]
                for given, how in ((other, USER), (NOT_A_FLAG, NEVER_WRITTEN)):
                    changed = copy.deepcopy(body)
                    changed[objects.METADATA]["annotations"][key] = given
                    made.append((f"{_label(key, given)} ({how})", changed))
    return made


def round_trip(
    exchanges: list,
    group: str,
    kind: str,
    a: str,
    attempt: Callable[[dict], RoundTripFailure | None],
) -> tuple[int, list[tuple[str, RoundTripFailure]], list[str]]:
    """Each body of ``bodies`` for the webhook's keys at ``a`` round-tripped by ``attempt``;
    how many went, the failures, each with its object's label, and the labels left out."""
    failures = []
    ordered = _ordered(written(exchanges, group, kind, a))  # once: bodies and what is left out
    made = ordered[:MAX_BODIES]
    for label, body in made:
        failure = attempt(body)
        if failure is not None:
            failures.append((label, failure))
    return len(made), failures, [label for label, _ in ordered[MAX_BODIES:]]


def own_annotations(
    found: list[diff.Difference], sent: dict
) -> tuple[list[diff.Difference], list[diff.Difference]]:
    """``found`` (differences back at A) split in two: the rest, and the differences of
    annotations the webhook added itself (keys absent from ``sent``, the object written),
    each key on its own (an object sent without annotations comes back with a whole map)."""
    mine = set(_annotations(sent))
    rest: list[diff.Difference] = []
    own: list[diff.Difference] = []
    for d in found:
        if d.path == ANNOTATIONS:  # the whole map appeared or went: judged key by key
            maps = [v if isinstance(v, dict) else {} for v in (d.before, d.after)]
            for each in diff.differences(
                {"annotations": maps[0]}, {"annotations": maps[1]}, "metadata"
            ):
                (rest if each.path[len(ANNOTATIONS) + 1 :] in mine else own).append(each)
            continue
        key = d.path[len(ANNOTATIONS) + 1 :] if d.path.startswith(ANNOTATIONS + ".") else None
        (own if key is not None and key not in mine else rest).append(d)
    return rest, own


def _label(key: str, value: str) -> str:
    return f"object carrying the webhook's annotation {key}: {diff.short(value)}"


def _annotations(obj: object) -> dict[str, str]:
    metadata = obj.get("metadata") if isinstance(obj, dict) else None
    found = metadata.get("annotations") if isinstance(metadata, dict) else None
    return {k: v for k, v in found.items() if isinstance(v, str)} if isinstance(found, dict) else {}


def _body(obj: dict) -> dict:
    """A converted object as a body to create: its fields, its labels and annotations."""
    body = {k: copy.deepcopy(v) for k, v in obj.items() if k not in objects.TOP_LEVEL}
    metadata = obj.get("metadata") or {}
    kept = {k: dict(metadata[k]) for k in ("labels", "annotations") if metadata.get(k)}
    kept.get("annotations", {}).pop(IGNORED[0], None)
    body[objects.METADATA] = kept
    return body


def notes(own: list[diff.Difference], a: str, b: str) -> list[str]:
    """One line per annotation of the webhook's own a round trip left changed at A (no
    value: one key's many values are one note)."""
    verbs = {"added": "added", "changed": "changed", "lost": "removed"}
    return [
        f"{d.path}: {verbs[d.change]} by the webhook after {a}->{b}->{a} (its own annotation, "
        "not on the object written)"
        for d in own
    ]
