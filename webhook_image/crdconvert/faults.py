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
from dataclasses import dataclass, field

from crdconvert import field_edits
from crdconvert.rewrites import (  # noqa: F401 (FAILURE_MESSAGE, GROWN: for their tests)
    FAILURE_MESSAGE,
    GROWN,
    HTTP_FAULTS,
    REWRITES,
    converted_objects,
    fail,
)

NAMES = (
    *REWRITES,
    *HTTP_FAULTS,
    "delay=<seconds>",
    "drop-field=[<version>:]<path>",
    "swap-fields=<path>+<path>",
    "fill-field=[<version>:]<path>=<json>",
    "go-duration=<path>",
    "panic-on=<path>",
    "move-field=[<version>:]<from>+<to>",
    "drop-empty-key=<list>[].<key>",
    "split-items=<path>",
    "stash-field=<version>:<path>=<annotation>",
    "stash-flag=<version>:<path>=<annotation>",
    "stash-joined=<version>:<path>=<annotation>",
    "stash-copy=<version>:<path>=<annotation>",
    "restore-field=<version>:<path>=<annotation>",
    "whole-seconds=<version>:<path>",
)


STASHES = ("stash-field", "stash-flag", "stash-joined", "stash-copy", "restore-field")


GO_DURATION = re.compile(r"[-+]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|ms|s|m|h))+|[-+]?0")


def _fail_on_durations(answer: dict, request: dict, path: str) -> None:
    """The review failed, as Go's time.ParseDuration fails it, where an object sent holds
    at ``path`` a string that is no Go duration."""
    for obj in request.get("objects") or []:
        node: object = obj
        for part in path.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, str) and not GO_DURATION.fullmatch(node):
            fail(f"time: invalid duration {json.dumps(node)}")(answer, request)
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
    # fill-field=[<version>:]<path>=<json>, repeatable: the field answered with the value where
    # the object has none, as a Go field without omitempty answers its zero value (0, "", null);
    # with a version, only in answers converting to it (that version's Go type alone lacks it).
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
    # losing a user's other values), stash-joined=... (a list joined with ","),
    # stash-copy=... (a copy kept whole, the field left as converted, as api-gateway keeps
    # the whole v1beta1 spec while v2 holds what it can of it),
    # restore-field=... (a fixed webhook: it keeps the field at <version> now, and still
    # reads back what a stash-field release kept there), repeatable:
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
                mode = "restore" if name == "restore-field" else name.removeprefix("stash-")
                faults.stashed.append((mode, version, path, key))
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
            f"{'restore-field' if mode == 'restore' else 'stash-' + mode}={version}:{path}={key}"
            for mode, version, path, key in self.stashed
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
            for obj in converted_objects(answer):
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
                for spec, value in self.filled:
                    version, _, path = spec.rpartition(":")
                    if not version or _converts_to(request, version):
                        field_edits.fill(obj, path, value)
        return answer
