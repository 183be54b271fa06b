"""The operator's answer to a ``--from-cluster`` run, in its first lines: can this cluster
take the release, and if not, what to do first (the migration the cluster needs, the objects
to fix, by name, one line each).

It speaks of the cluster's own objects only: those the gate makes up (to judge the release
itself) are never named here. Releases are numbered as the table numbers them: release 1 is
the cluster's CRDs as installed, release 2 the candidate.
"""

from __future__ import annotations

import re

from crdharness.gate import diff
from crdharness.gate.checks.upgrade_writes import (
    GENERATED,
    RECREATE,
    RECREATE_STATUS,
    STALE_MANAGED_FIELDS,
)
from crdharness.gate.given.cluster_source import Capture
from crdharness.gate.given.manifests import Release
from crdharness.gate.results import CheckResult

MOST_OBJECTS_LISTED = 20
RATCHETED = " — the writes above pass only because"
STATUS_RATCHETED = " — the object's own status update passes only because"
STALE_ADVICE = " (the object's metadata.managedFields"
# Objects the gate makes up: its history's (r2-v1-3, t1-v1beta1-4 in gate-history), round
# trips' (rt-v1-v2-5), deprecation and expectation probes, re-created copies.
MADE_UP = re.compile(
    r"gate-history/|gate-recreated-|\b(?:[rt]\d+-v\d+\w*|rt-v\d+\w*-v\d+\w*|deprecation|expect)"
    r"-\d+\b"
)
LINE = 600  # characters of one server message shown per object (it names the bad value late)
WRITES = 200  # characters naming the writes refused, before the message
HEADLINE_ORDER = ("migration", "install", "upgrade")  # what decides the first line
UPDATE = "update with what was read"
STATUS_UPDATE = "status update through /status"
# How the fix list names each write (upgrade_writes' names are for the report).
SHORT = {
    UPDATE: "update",
    "update with a changed annotation": "annotation update",
    "server-side apply of the same content": "server-side apply",
    STATUS_UPDATE: "status update",
    RECREATE: "re-create",
    RECREATE_STATUS: "status written to a new copy",
}


def answer(
    capture: Capture,
    candidate: Release,
    results: list[CheckResult],
    object_findings: dict[str, list[str]],
    untouched: str,
    replayed_on: str = "",
    writes_refused: dict[str, set[str]] | None = None,
) -> list[str]:
    """The answer's lines. ``writes_refused``: per object, every write the candidate
    refused it (hazards too): the evidence for what still passes."""
    label = f"{candidate.index + 1} ({candidate.label})"
    failed = sorted(
        (r for r in results if r.passed is False),
        key=lambda r: HEADLINE_ORDER.index(r.check) if r.check in HEADLINE_ORDER else 9,
    )
    undecided = [r for r in results if r.passed is None]
    cluster = "This cluster" if not capture.namespaces else "These namespaces of this cluster"
    cluster += f" ({capture.describe()})"
    lines = _left_out(capture)
    if failed:
        why = _own(_short(failed[0].evidence))
        if failed[0].check not in ("migration", "install") and object_findings:
            named = list(object_findings)
            why = (
                f"{_count(len(named), 'of its objects is', 'of its objects are')} refused or "
                f"changed under it ({', '.join(named[:3])}{', ...' if len(named) > 3 else ''})"
            )
        if capture.left_out:
            why += f", and {capture.left_out} objects were not replayed"
        lines.append(f"{cluster} cannot take release {label}: {why}")
    elif undecided:
        lines.append(
            f"{cluster} was not proven to take release {label}: {_own(undecided[0].evidence)}"
        )
    else:
        lines.append(f"{cluster} can take release {label}: every check passed on its objects")
    first = [
        *_migrations(capture, candidate),
        *_objects(object_findings, writes_refused or {}),
        *(
            f"- {r.check} [{r.subject}]: {_short(r.evidence)}"
            for r in failed
            if r.check not in HEADLINE_ORDER and not MADE_UP.search(r.evidence)
        ),
    ]
    if not _migrations(capture, candidate):
        first[:0] = [f"- {_own(_short(r.evidence))}" for r in failed if r.check == "install"]
    if first:
        lines += ["What to do first:", *first]
    if capture.missing:
        lines.append(f"Not on the cluster (the release creates them): {', '.join(capture.missing)}")
    if capture.namespaces:
        lines.append(
            f"Objects outside {', '.join(capture.namespaces)} were not read: the CRDs are "
            "cluster-wide, and so is the upgrade"
        )
    if replayed_on and capture.kubernetes and _minor(replayed_on) != _minor(capture.kubernetes):
        lines.append(
            f"The cluster runs Kubernetes {capture.kubernetes}; the replay ran on {replayed_on} "
            "(the harness has no other): what differs between them, such as validation "
            "ratcheting of unchanged values (from 1.30), is not reproduced"
        )
    lines.append(
        f"In the report, release {candidate.index} is this cluster's CRDs as installed and "
        f"release {label} the candidate"
    )
    lines.append(untouched)
    return lines


def _left_out(capture: Capture) -> list[str]:
    """First of all, what ``--max-objects`` kept out of the replay: the answer is about the
    others only."""
    if not capture.truncated:
        return []
    each = "; ".join(
        f"{held - replayed} of {held} objects of {crd}"
        for crd, (replayed, held) in sorted(capture.truncated.items())
    )
    return [
        f"{each} were not replayed (--max-objects {capture.max_objects}); raise it to include them"
    ]


def _own(text: str) -> str:
    """``text``, unless it names an object the gate made up: the operator cannot act on
    those, and report.md names them."""
    if not MADE_UP.search(text):
        return text
    return (
        "the release fails on objects the gate makes up, not only on this cluster's "
        "(report.md; the gate without --from-cluster judges the release itself)"
    )


def _minor(version: str) -> str:
    return ".".join(version.removeprefix("v").split(".")[:2])


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _short(text: str, most: int = LINE) -> str:
    return text if len(text) <= most else text[: most - 3] + "..."


def _migrations(capture: Capture, candidate: Release) -> list[str]:
    """A CRD whose ``storedVersions`` still lists a version the release removes: what to run
    before applying it."""
    steps = []
    for name, stored in capture.stored_versions.items():
        if name not in candidate.crds:
            continue
        removed = [v for v in stored if v not in candidate.names(name)]
        if not removed:
            continue
        storage = next(
            v["name"] for v in capture.crds[name]["spec"]["versions"] if v.get("storage")
        )
        plural = capture.crds[name]["spec"]["names"]["plural"]
        steps.append(
            f"- migrate {name} first: status.storedVersions still lists {', '.join(removed)}, "
            f"which the release removes (the API server refuses it with 422). Write every "
            f"object back at {storage} (a StorageVersionMigration, or `kubectl get {plural} "
            f"-A -o json | kubectl replace -f -`), then set status.storedVersions to "
            f"[{storage}] (`kubectl patch crd {name} --subresource=status --type=merge -p "
            f'\'{{"status":{{"storedVersions":["{storage}"]}}}}\'`)'
        )
    return steps


def _objects(object_findings: dict[str, list[str]], writes_refused: dict[str, set[str]]) -> list:
    if not object_findings:
        return []
    steps = [
        f"- fix or delete {'this object' if len(object_findings) == 1 else 'these objects'} "
        f"first ({len(object_findings)}, refused or changed under the release):"
    ]
    fixes = fix_list(object_findings, writes_refused)
    for label in list(fixes)[:MOST_OBJECTS_LISTED]:
        steps.append(f"  - {label}: {fixes[label]}")
    if len(fixes) > MOST_OBJECTS_LISTED:
        steps.append(
            f"  - and {len(fixes) - MOST_OBJECTS_LISTED} more (every one: report.md's "
            "'Objects to fix', report.json's objects_to_fix)"
        )
    listed = list(fixes)[:MOST_OBJECTS_LISTED]
    stale = [label for label in listed if _object_line(label, object_findings[label])[2]]
    if stale:
        steps.append(
            f"- {', '.join(sorted(set(stale)))}: their metadata.managedFields still name a "
            "version the release removes, so every server-side apply of them fails, migrated "
            "or not (kubernetes/kubernetes#111937): drop those managedFields entries, or ask "
            "the project to keep that version in spec.versions with served: false"
        )
    return steps


def fix_list(
    object_findings: dict[str, list[str]], writes_refused: dict[str, set[str]]
) -> dict[str, str]:
    """Every object to fix, one line each (``_object_line`` and the advice the evidence
    allows); the answer shows the first ``MOST_OBJECTS_LISTED``."""
    fixes = {}
    for label, findings in object_findings.items():
        line, paths, _ = _object_line(label, findings)
        fixes[label] = f"{line}{_advice(paths, writes_refused.get(label))}"
    # The worst first: objects no write is accepted for, then the rest as they were found.
    stuck = [label for label in fixes if UPDATE in (writes_refused.get(label) or set())]
    return {label: fixes[label] for label in [*stuck, *(k for k in fixes if k not in stuck)]}


def _object_line(label: str, findings: list[str]) -> tuple[str, list[str], bool]:
    """One object's findings in one line: each message of the server once, after the
    writes it refused; then what else changed. Also the paths named, and whether its
    managedFields name a removed version."""
    refused: dict[str, list[tuple[str, str]]] = {}  # message -> (write, version)
    others: list[str] = []
    stale = False
    for finding in findings:
        text = finding.removeprefix(f"{label}: ").split(RATCHETED)[0].split(STALE_ADVICE)[0]
        text = text.split(STATUS_RATCHETED)[0]  # the advice says it, once
        # The server names the gate's copy; the operator knows the object by its name.
        text = GENERATED.sub(f'"{label.rpartition("/")[2]}"', text)
        stale = stale or STALE_MANAGED_FIELDS in text
        write = next((w for w in SHORT if text.startswith(f"{w} at ")), None)
        if write is None:
            if text not in others:
                others.append(text)
            continue
        version, _, message = text.removeprefix(f"{write} at ").partition(": ")
        refused.setdefault(message, []).append((SHORT[write], version))
    said = []
    for message, writes in refused.items():
        names = ", ".join(dict.fromkeys(w for w, _ in writes))
        versions = ", ".join(dict.fromkeys(v for _, v in writes))
        said.append(f"{_short(f'{names} at {versions}', WRITES)} refused: {_short(message)}")
    said += [_short(t) for t in others]
    paths = list(dict.fromkeys(p for t in [*refused, *others] for p in refused_fields(t)))
    return "; ".join(said), paths, stale


# A cause the API server words as a field, then a path below it in quotes (a oneOf or anyOf
# of the schema, a CEL rule's fieldPath): `status: Invalid value: "": "addresses[0].value"
# must validate at least one schema (anyOf)`.
_FIELD = r"[A-Za-z_][\w-]*(?:\.[\w-]+|\[\d*\])*"
BELOW = re.compile(rf'(?<![/\w.-])({_FIELD}): Invalid value: "[^"]*": "({_FIELD})" ')


def refused_fields(message: str) -> list[str]:
    """The fields a server's message (its 422 causes) names, spec's or status' or any
    other: ``status.addresses[0].value``, not also the ``status`` (or ``status.addresses[0]``)
    a oneOf's cause is worded under, where a deeper path says where the value is."""
    named = diff.named_paths(message)
    below = [(m.group(1), f"{m.group(1)}.{m.group(2)}") for m in BELOW.finditer(message)]
    named += [path for _, path in below]
    wrappers = {p for pair in below for p in pair} | {
        p for p in named if not re.search(r"[.\[]", p)
    }
    return [
        path
        for path in dict.fromkeys(named)
        if path not in wrappers
        or not any(other != path and diff.at_or_under(other, path) for other in named)
    ]


def _advice(paths: list[str], refused: set[str] | None) -> str:
    """What the evidence says still works: ratcheting only where the same-content update
    passed under the candidate; none at all where it was refused too."""
    if refused is None:
        return ""  # no record of the writes: no claim
    fields = ", ".join(paths[:5]) or "the fields the message names"
    if UPDATE in refused:
        return (
            f" — every write of it is refused: it can only be read or deleted until fixed "
            f"(set {fields} to what the release accepts)"
        )
    if RECREATE in refused:
        return (
            f" — updates that leave {fields} unchanged still pass (the API server "
            "ratchets validation of unchanged values), but a write that changes them and "
            f"every re-create (a restore, a GitOps re-apply) are refused: fix {fields}"
        )
    status = ", ".join([p for p in paths if diff.at_or_under(p, "status")][:5]) or fields
    if STATUS_UPDATE in refused:
        return (
            f" — every write of its status is refused, its controller's too: set {status} to "
            "what the release accepts"
        )
    if RECREATE_STATUS in refused:
        return (
            " — its status written anew (a controller setting it on a new copy, a restore "
            "with status) is refused, while its own status update passes only because the API "
            f"server ratchets validation of unchanged values: fix {status}"
        )
    return ""
