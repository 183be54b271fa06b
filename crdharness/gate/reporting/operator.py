"""The operator's answer to a ``--from-cluster`` run, in its first lines: can this cluster
take the release, and if not, what to do first (the migration the cluster needs, the objects
to fix, by name)."""

from __future__ import annotations

import re

from crdharness.gate.checks.upgrade_writes import STALE_MANAGED_FIELDS
from crdharness.gate.given.cluster_source import Capture
from crdharness.gate.given.manifests import Release
from crdharness.gate.results import CheckResult

MOST_OBJECTS_LISTED = 20
RATCHETED = " — the writes above pass only because"
RECREATED_NAME = re.compile(r'"gate-recreated-[a-z0-9]+"')
LINE = 300  # characters of one finding shown per object
HEADLINE_ORDER = ("migration", "install", "upgrade")  # what decides the first line


def answer(
    capture: Capture,
    candidate: Release,
    label: str,
    results: list[CheckResult],
    object_findings: dict[str, list[str]],
    untouched: str,
    replayed_on: str = "",
) -> list[str]:
    failed = sorted(
        (r for r in results if r.passed is False),
        key=lambda r: HEADLINE_ORDER.index(r.check) if r.check in HEADLINE_ORDER else 9,
    )
    undecided = [r for r in results if r.passed is None]
    cluster = "This cluster" if not capture.namespaces else "These namespaces of this cluster"
    cluster += f" ({capture.describe()})"
    if failed:
        why = _short(failed[0].evidence)
        if failed[0].check not in ("migration", "install") and object_findings:
            named = list(object_findings)
            why = (
                f"{_count(len(named), 'of its objects is', 'of its objects are')} refused or "
                f"changed under it ({', '.join(named[:3])}{', ...' if len(named) > 3 else ''})"
            )
        lines = [f"{cluster} cannot take release {label}: {why}"]
    elif undecided:
        lines = [f"{cluster} was not proven to take release {label}: {undecided[0].evidence}"]
    else:
        lines = [f"{cluster} can take release {label}: every check passed on its objects"]
    first = [
        *_migrations(capture, candidate),
        *_objects(object_findings),
        *(
            f"- {r.check} [{r.subject}]: {_short(r.evidence)}"
            for r in failed
            if r.check not in HEADLINE_ORDER
        ),
    ]
    if not _migrations(capture, candidate):
        first[:0] = [f"- {_short(r.evidence)}" for r in failed if r.check == "install"]
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
    lines.append(untouched)
    return lines


def _minor(version: str) -> str:
    return ".".join(version.removeprefix("v").split(".")[:2])


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _short(text: str) -> str:
    return text if len(text) <= LINE else text[: LINE - 3] + "..."


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


def _objects(object_findings: dict[str, list[str]]) -> list[str]:
    if not object_findings:
        return []
    steps = [
        f"- fix or delete {'this object' if len(object_findings) == 1 else 'these objects'} "
        f"first ({len(object_findings)}, refused or changed under the release):"
    ]
    stale, ratcheted = [], False
    for label, findings in list(object_findings.items())[:MOST_OBJECTS_LISTED]:
        said = []
        for finding in findings:
            text = finding.removeprefix(f"{label}: ")
            if STALE_MANAGED_FIELDS in text:
                stale.append(label)
                text = text.split(" (the object's metadata.managedFields")[0]
            if RATCHETED in text:
                ratcheted = True
                text = text.split(RATCHETED)[0]
            # The server names the gate's copy; the operator knows the object by its name.
            text = RECREATED_NAME.sub(f'"{label.rpartition("/")[2]}"', text)
            if text not in said:
                said.append(text)
        steps.append(f"  - {label}: " + "; ".join(_short(t) for t in said))
    if ratcheted:
        steps.append(
            "  (a re-create — a restore, a GitOps re-apply — is refused; updates that leave "
            "those fields as they are still pass, as the API server ratchets validation of "
            "unchanged values, but any write that changes them is refused)"
        )
    if len(object_findings) > MOST_OBJECTS_LISTED:
        steps.append(f"  - and {len(object_findings) - MOST_OBJECTS_LISTED} more (report.md)")
    if stale:
        steps.append(
            f"- {', '.join(sorted(set(stale)))}: their metadata.managedFields still name a "
            "version the release removes, so every server-side apply of them fails, migrated "
            "or not (kubernetes/kubernetes#111937): drop those managedFields entries, or ask "
            "the project to keep that version in spec.versions with served: false"
        )
    return steps
