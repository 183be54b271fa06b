"""The named rewrites of a correct answer (``--fault reorder``, ``--fault omit-empty``, ...):
each turns what the webhook answers into what a buggy one would. ``faults`` parses the names
given and applies these, beside the faults that take a value (``drop-field=...``)."""

from __future__ import annotations

from collections.abc import Callable

from crdconvert import field_edits
from crdconvert.review import GROUP

FAILURE_MESSAGE = "conversion refused on purpose (fault mode fail-with-message)"
OTHER_METADATA = {
    "generation": 42,
    "resourceVersion": "42",
    "finalizers": ["foo"],
    "creationTimestamp": "2000-01-01T00:00:00Z",
    "ownerReferences": [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": "owner",
            "uid": "00000000-0000-0000-0000-000000000042",
        }
    ],
    "garbage": "foo",
}


def converted_objects(answer: dict) -> list:
    return answer["response"].get("convertedObjects") or []


_metadata = field_edits.metadata


def fail(message: str | None) -> Callable[[dict, dict], None]:
    def apply(answer: dict, request: dict) -> None:
        response = answer["response"]
        response.pop("convertedObjects", None)
        response["result"] = {"status": "Failed"}
        if message:
            response["result"]["message"] = message

    return apply


def _each(change: Callable[[dict], None]) -> Callable[[dict, dict], None]:
    def apply(answer: dict, request: dict) -> None:
        for obj in converted_objects(answer):
            change(obj)

    return apply


GROWN = "crdconvert/grown"  # the annotation ``grow-annotation`` doubles


def _grow(obj: dict) -> None:
    """A converter that appends again what it finds (each owner's operations once more per
    owner sharing a name): every conversion doubles one annotation, so an object written back
    where it was read grows until kube-apiserver refuses the answer (over 256 KiB)."""
    annotations = _metadata(obj).setdefault("annotations", {})
    annotations[GROWN] = annotations.get(GROWN, "x" * 4096) * 2


def _lowercase_success(answer: dict, request: dict) -> None:
    answer["response"]["result"] = {"status": "success"}


def _no_response(answer: dict, request: dict) -> None:
    del answer["response"]


def _failed_with_objects(answer: dict, request: dict) -> None:
    # The documentation's v1beta1 "successful response" example: objects, but status Failed.
    answer["response"]["result"] = {"status": "Failed"}


def _wrong_uid(answer: dict, request: dict) -> None:
    answer["response"]["uid"] = "00000000-0000-0000-0000-00000000bad0"


def _reorder(answer: dict, request: dict) -> None:
    objects = converted_objects(answer)
    objects.reverse()


def _drop_object(answer: dict, request: dict) -> None:
    objects = converted_objects(answer)
    if objects:
        objects.pop()


def _other_review_version(answer: dict, request: dict) -> None:
    current = answer["apiVersion"]
    answer["apiVersion"] = f"{GROUP}/v1beta1" if current.endswith("/v1") else f"{GROUP}/v1"


def _stale_api_version(answer: dict, request: dict) -> None:
    # Answer Success but leave each object at the version it came in.
    sources = [o.get("apiVersion") for o in request.get("objects") or [] if isinstance(o, dict)]
    for obj, source in zip(converted_objects(answer), sources, strict=False):
        obj["apiVersion"] = source


def _set(field_name: str, value) -> Callable[[dict], None]:
    return lambda obj: _metadata(obj).__setitem__(field_name, value)


def _add(field_name: str, key: str, value: str) -> Callable[[dict], None]:
    return lambda obj: _metadata(obj).setdefault(field_name, {}).__setitem__(key, value)


def _omit_empty(obj: dict) -> None:
    """What a Go webhook whose types say ``omitempty`` does: empty maps and lists vanish."""

    def pruned(value):
        if isinstance(value, dict):
            kept = {k: pruned(v) for k, v in value.items()}
            return {k: v for k, v in kept.items() if v not in ({}, [])}
        if isinstance(value, list):
            return [pruned(v) for v in value]
        return value

    _in_spec_and_status(obj, pruned)


def _in_spec_and_status(obj: dict, pruned) -> None:
    """``pruned`` applied to the object's ``spec`` and ``status`` (a Go webhook re-encodes
    those; metadata the server restores)."""
    for part in ("spec", "status"):
        if isinstance(obj.get(part), dict):
            obj[part] = pruned(obj[part])


def _omit_zero(obj: dict) -> None:
    """What a Go webhook does with ``omitempty`` on plain ``bool``, number and ``string``
    fields: ``false``, ``0`` and ``""`` vanish (list items stay: Go keeps those)."""

    def pruned(value):
        if isinstance(value, dict):
            return {k: pruned(v) for k, v in value.items() if not _zero(v)}
        if isinstance(value, list):
            return [pruned(v) for v in value]
        return value

    _in_spec_and_status(obj, pruned)


def _zero(value) -> bool:
    if isinstance(value, bool):
        return value is False
    return (isinstance(value, (int, float)) and value == 0) or value == ""


def _pop_all(obj: dict, keys: tuple[str, ...]) -> None:
    for key in keys:
        obj.pop(key, None)


# name -> rewrite of (answer, request body)
REWRITES: dict[str, Callable[[dict, dict], None]] = {
    "fail-with-message": fail(FAILURE_MESSAGE),
    "fail-without-message": fail(None),
    "wrong-uid": _wrong_uid,
    "reorder": _reorder,
    "drop-object": _drop_object,
    "other-review-version": _other_review_version,
    "stale-apiversion": _stale_api_version,
    "mutate-name": _each(
        lambda o: _metadata(o).__setitem__("name", _metadata(o).get("name", "") + "-renamed")
    ),
    "mutate-uid": _each(_set("uid", "42")),
    "mutate-namespace": _each(_set("namespace", "elsewhere")),
    "mutate-labels": _each(_add("labels", "converted-by", "crdconvert")),
    "mutate-annotations": _each(_add("annotations", "crdconvert/converted", "true")),
    "grow-annotation": _each(_grow),
    "drop-labels": _each(lambda o: _metadata(o).pop("labels", None)),
    "drop-annotations": _each(lambda o: _metadata(o).pop("annotations", None)),
    "mutate-other-metadata": _each(lambda o: _metadata(o).update(OTHER_METADATA)),
    "extra-field": _each(lambda o: o.__setitem__("extra", 1)),
    "omit-empty": _each(_omit_empty),
    "omit-zero": _each(_omit_zero),
    # metav1.ObjectMeta's zero Time encodes as null: what a Go webhook that builds a new
    # object (and copies only name, namespace, uid, labels, annotations) returns.
    "null-creation-timestamp": _each(_set("creationTimestamp", None)),
    "lose-fields": _each(lambda o: _pop_all(o, ("host", "port", "hostPort"))),
    "mutate-kind": _each(lambda o: o.__setitem__("kind", o.get("kind", "") + "2")),
    "invalid-label": _each(_add("labels", "to", "example.com/v1")),
    "lowercase-success": _lowercase_success,
    "no-response": _no_response,
    "failed-with-objects": _failed_with_objects,
}
HTTP_FAULTS = {"http-500": 500, "http-404": 404}
