"""Deliberate misbehaviour, to reproduce the documented failure cases. Off unless asked for.

Each fault rewrites a correct answer (or the HTTP status) the way a buggy webhook would.
Names are given on the command line (``--fault reorder --fault delay=2``), in the environment
(``CRDCONVERT_FAULTS=reorder,delay=2``, which is how ``python -m crdharness sabotage`` breaks
the webhook to check that the suite notices) or, when the server runs with
``--fault-control``, at run time through ``PUT /control/faults``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field

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


def _objects(answer: dict) -> list:
    return answer["response"].get("convertedObjects") or []


_metadata = field_edits.metadata


def _fail(message: str | None) -> Callable[[dict, dict], None]:
    def apply(answer: dict, request: dict) -> None:
        response = answer["response"]
        response.pop("convertedObjects", None)
        response["result"] = {"status": "Failed"}
        if message:
            response["result"]["message"] = message

    return apply


def _each(change: Callable[[dict], None]) -> Callable[[dict, dict], None]:
    def apply(answer: dict, request: dict) -> None:
        for obj in _objects(answer):
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
    objects = _objects(answer)
    objects.reverse()


def _drop_object(answer: dict, request: dict) -> None:
    objects = _objects(answer)
    if objects:
        objects.pop()


def _other_review_version(answer: dict, request: dict) -> None:
    current = answer["apiVersion"]
    answer["apiVersion"] = f"{GROUP}/v1beta1" if current.endswith("/v1") else f"{GROUP}/v1"


def _stale_api_version(answer: dict, request: dict) -> None:
    # Answer Success but leave each object at the version it came in.
    sources = [o.get("apiVersion") for o in request.get("objects") or [] if isinstance(o, dict)]
    for obj, source in zip(_objects(answer), sources, strict=False):
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


# name -> rewrite of (answer, request body)
REWRITES: dict[str, Callable[[dict, dict], None]] = {
    "fail-with-message": _fail(FAILURE_MESSAGE),
    "fail-without-message": _fail(None),
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
NAMES = (
    *REWRITES,
    *HTTP_FAULTS,
    "delay=<seconds>",
    "drop-field=[<version>:]<path>",
    "swap-fields=<path>+<path>",
    "fill-field=<path>=<json>",
    "go-duration=<path>",
    "panic-on=<path>",
    "move-field=[<version>:]<from>+<to>",
    "drop-empty-key=<list>[].<key>",
    "split-items=<path>",
    "stash-field=<version>:<path>=<annotation>",
    "stash-flag=<version>:<path>=<annotation>",
    "stash-joined=<version>:<path>=<annotation>",
    "whole-seconds=<version>:<path>",
)


STASHES = ("stash-field", "stash-flag", "stash-joined")


def _pop_all(obj: dict, keys: tuple[str, ...]) -> None:
    for key in keys:
        obj.pop(key, None)


GO_DURATION = re.compile(r"[-+]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|ms|s|m|h))+|[-+]?0")


def _fail_on_durations(answer: dict, request: dict, path: str) -> None:
    """The review failed, as Go's time.ParseDuration fails it, where an object sent holds
    at ``path`` a string that is no Go duration."""
    for obj in request.get("objects") or []:
        node: object = obj
        for part in path.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, str) and not GO_DURATION.fullmatch(node):
            _fail(f"time: invalid duration {json.dumps(node)}")(answer, request)
            return


def _converts_to(request: dict, version: str) -> bool:
    return str(request.get("desiredAPIVersion", "")).rpartition("/")[2] == version


ENV_VAR = "CRDCONVERT_FAULTS"


class UnknownFault(ValueError):
    pass


@dataclass
class Faults:
    rewrites: list[str] = field(default_factory=list)
    http_status: int | None = None
    delay: float = 0.0
    # drop-field=[<version>:]<path>, repeatable: with a version, only in answers converting
    # to it (a converter that forgets a field one way only: lost on the way back alone).
    dropped: list[str] = field(default_factory=list)
    swapped: list[tuple[str, str]] = field(default_factory=list)  # swap-fields=<a>+<b>
    # fill-field=<path>=<json>, repeatable: the field answered with the value where the object
    # has none, as a Go field without omitempty answers its zero value (0, "", null).
    filled: list[tuple[str, object]] = field(default_factory=list)
    # go-duration=<path>, repeatable: the review fails ("time: invalid duration") for an object
    # whose value there is no Go duration, as a webhook decoding it into metav1.Duration does.
    durations: list[str] = field(default_factory=list)
    # panic-on=<path>, repeatable: for an object that holds the path, the handler panics (a nil
    # pointer in a Go converter): it prints a Go panic and drops the connection unanswered,
    # as net/http does with a handler's panic.
    panics: list[str] = field(default_factory=list)
    # move-field=[<version>:]<from>+<to>, repeatable: converting (to <version>), a deprecated
    # field's value is answered in its successor's place (a re-spelling, not a loss).
    moved: list[tuple[str, str, str]] = field(default_factory=list)
    # drop-empty-key=<list>[].<key>, repeatable: list items whose key is "" dropped whole.
    keyless: list[str] = field(default_factory=list)
    # split-items=<path>, repeatable: a list of strings kept joined with "," and split back.
    split: list[str] = field(default_factory=list)
    # stash-field=<version>:<path>=<annotation> (kept whole), stash-flag=... (as a flag,
    # losing a user's other values), stash-joined=... (a list joined with ","), repeatable:
    # (mode, version, path, annotation).
    stashed: list[tuple[str, str, str, str]] = field(default_factory=list)
    # whole-seconds=<version>:<path>, repeatable: a duration kept as whole seconds there.
    seconds: list[tuple[str, str]] = field(default_factory=list)

    @classmethod
    def parse(cls, specs: list[str]) -> Faults:
        faults = cls()
        for spec in specs:
            name, _, value = spec.partition("=")
            if name in REWRITES:
                faults.rewrites.append(name)
            elif name in HTTP_FAULTS:
                faults.http_status = HTTP_FAULTS[name]
            elif name == "drop-field" and value:
                faults.dropped.append(value)
            elif name == "go-duration" and value:
                faults.durations.append(value)
            elif name == "panic-on" and value:
                faults.panics.append(value)
            elif name == "drop-empty-key" and "[]." in value:
                faults.keyless.append(value)
            elif name == "split-items" and value:
                faults.split.append(value)
            elif name in STASHES and re.fullmatch(r"[^:=]+:[^=]+=.+", value):
                version, _, rest = value.partition(":")
                path, _, key = rest.partition("=")
                faults.stashed.append((name.removeprefix("stash-"), version, path, key))
            elif name == "whole-seconds" and re.fullmatch(r"[^:]+:.+", value):
                version, _, path = value.partition(":")
                faults.seconds.append((version, path))
            elif name == "move-field" and value.count("+") == 1:
                version, _, paths = value.rpartition(":")
                source, target = paths.split("+")
                faults.moved.append((version, source, target))
            elif name == "fill-field" and "=" in value:
                path, _, given = value.partition("=")
                try:
                    faults.filled.append((path, json.loads(given)))
                except ValueError:
                    raise UnknownFault(
                        f"fill-field needs a JSON value, e.g. fill-field=spec.size=0 (got {spec!r})"
                    ) from None
            elif name == "swap-fields" and value.count("+") == 1:
                first, second = value.split("+")
                faults.swapped.append((first, second))
            elif name == "delay":
                try:
                    faults.delay = float(value)
                except ValueError:
                    raise UnknownFault(
                        f"delay needs seconds, e.g. delay=2 (got {spec!r})"
                    ) from None
            else:
                raise UnknownFault(f"unknown fault {spec!r}; known: {', '.join(NAMES)}")
        return faults

    @classmethod
    def from_env(cls) -> Faults:
        return cls.parse([s for s in os.environ.get(ENV_VAR, "").split(",") if s.strip()])

    @property
    def active(self) -> bool:
        return bool(
            self.rewrites
            or self.http_status
            or self.delay
            or self.dropped
            or self.swapped
            or self.filled
            or self.durations
            or self.panics
            or self.moved
            or self.keyless
            or self.split
            or self.stashed
            or self.seconds
        )

    def describe(self) -> list[str]:
        names = list(self.rewrites)
        if self.http_status:
            names.append(f"http-{self.http_status}")
        if self.delay:
            names.append(f"delay={self.delay:g}")
        names += [f"drop-field={path}" for path in self.dropped]
        names += [f"swap-fields={a}+{b}" for a, b in self.swapped]
        names += [f"fill-field={path}={json.dumps(value)}" for path, value in self.filled]
        names += [f"go-duration={path}" for path in self.durations]
        names += [f"panic-on={path}" for path in self.panics]
        names += [f"move-field={v + ':' if v else ''}{a}+{b}" for v, a, b in self.moved]
        names += [f"drop-empty-key={spec}" for spec in self.keyless]
        names += [f"split-items={path}" for path in self.split]
        names += [
            f"stash-{mode}={version}:{path}={key}" for mode, version, path, key in self.stashed
        ]
        names += [f"whole-seconds={version}:{path}" for version, path in self.seconds]
        return names

    def panic_for(self, request: dict) -> str:
        """What a Go webhook prints when its handler panics on an object of ``request`` (or
        nothing): the server then drops the connection without an answer."""
        for path in self.panics:
            for obj in request.get("objects") or []:
                if field_edits.holds(obj, path):
                    name = (obj.get("metadata") or {}).get("name")
                    return (
                        "http: panic serving: runtime error: invalid memory address or nil "
                        f"pointer dereference (crdconvert fault panic-on={path}, object {name})\n"
                        "goroutine 42 [running]:\n"
                        "net/http.(*conn).serve.func1()\n"
                        f"main.convert{path.rpartition('.')[2].title()}(...)\n"
                    )
        return ""

    def apply(self, answer: dict, request: dict) -> dict:
        for path in self.durations:
            _fail_on_durations(answer, request, path)
        for name in self.rewrites:
            REWRITES[name](answer, request)
        if (
            self.dropped
            or self.swapped
            or self.filled
            or self.moved
            or self.keyless
            or self.split
            or self.stashed
            or self.seconds
        ):  # a rewrite may have removed it
            for obj in _objects(answer):
                for mode, version, path, key in self.stashed:
                    field_edits.stash(obj, _converts_to(request, version), path, key, mode)
                for version, path in self.seconds:
                    field_edits.whole_seconds(obj, _converts_to(request, version), path)
                for path in self.split:
                    field_edits.split_items(obj, path)
                for spec in self.keyless:
                    field_edits.drop_empty_keys(obj, spec)
                for version, source, target in self.moved:
                    if not version or _converts_to(request, version):
                        field_edits.move(obj, source, target)
                for spec in self.dropped:
                    version, _, path = spec.rpartition(":")
                    if not version or _converts_to(request, version):
                        field_edits.drop(obj, path)
                for first, second in self.swapped:
                    field_edits.swap(obj, first, second)
                for path, value in self.filled:
                    field_edits.fill(obj, path, value)
        return answer
