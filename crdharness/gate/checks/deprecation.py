"""Check *deprecation*: deprecated versions answer with the ``Warning`` header the API
server promises, and no version is unserved or removed without having been deprecated first.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from crdharness.gate import concurrency, subjects
from crdharness.gate.api import Answer, Resource, call
from crdharness.gate.evidence import objects
from crdharness.gate.given.manifests import Release
from crdharness.gate.run.context import HISTORY_NS, GateContext

WARNED = "Warning header on"
NONE_DEPRECATED = "no deprecated served version"


def default_warning(group: str, version: str, kind: str, versions: list[dict]) -> str:
    """The API server's text for a deprecated version without ``deprecationWarning``: it
    names the highest-priority served, non-deprecated version above it, if there is one
    (apiextensions-apiserver's defaultDeprecationWarning)."""
    text = f"{group}/{version} {kind} is deprecated"
    newer = [
        v["name"]
        for v in versions
        if v.get("served") and not v.get("deprecated") and priority(v["name"]) > priority(version)
    ]
    if newer:
        text += f"; use {group}/{max(newer, key=priority)} {kind}"
    return text


def priority(version: str) -> tuple:
    """Kubernetes version priority as a sortable key: v2 > v1 > v1beta2 > v1beta1 >
    v1alpha1 > anything else (those by name, the first alphabetically highest)."""
    import re

    match = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if not match:
        return (0, 0, 0, (*(-ord(c) for c in version), 1))  # 1 ends it: "foo1" > "foo10"
    major, stage, minor = match.groups()
    rank = {"alpha": 1, "beta": 2, None: 3}[stage]
    return (1, rank, int(major), int(minor or 0)) if stage else (1, 3, int(major), 0)


def check_removal_policy(ctx: GateContext, release: Release) -> None:
    previous = ctx.releases[release.index - 1]
    subject = subjects.transition(release.index)
    result = ctx.result("deprecation", subject)
    for name in release.crds:
        gone = [v for v in previous.served(name) if v not in release.served(name)]
        for version in gone:
            ever = any(version in r.deprecated(name) for r in ctx.releases[: release.index])
            if not ever:
                how = "removed" if version not in release.names(name) else "no longer served"
                text = (
                    f"{name}: {version} is {how} in release {release.index + 1} but was "
                    "never deprecated in an earlier release"
                )
                if ctx.config.require_deprecation_before_removal:
                    result.fail(text, text)
                else:
                    result.details.append(f"{text} (allowed by policy)")
    if result.passed:
        result.evidence = (
            result.evidence or "every version unserved or removed was deprecated first"
        )


@dataclass
class _Probe:
    """One deprecated version's requests: what each verb answered, and what refused the
    objects tried (none created: no create, get or update was made)."""

    name: str
    version: str
    custom: str | None
    expected: str
    answers: dict[str, Answer]
    refusals: list[str]


def check_warnings(ctx: GateContext, release: Release, subject: str) -> None:
    """Deprecated versions answer get, list, create and update with a Warning header.
    The object is one the version's schema accepts: the user's sample, else a generated
    one (an empty object is refused by a schema with ``required`` fields). The versions are
    probed side by side (a provider deprecates hundreds at once), judged in order."""
    result = ctx.result("deprecation", subject)
    checked = []
    wanted: list[tuple[str, str, str | None, str] | str] = []  # a probe to make, or a line as is
    for name in ctx.live(release):
        if release is ctx.candidate and ctx.listed_only(name) and release.deprecated(name):
            wanted.append(f"{name}: not again ({ctx.unchanged[name]})")
            continue
        for version, custom in release.deprecated(name).items():
            obj_name = ctx.name("deprecation", release.entry(name, version), name)
            wanted.append((name, version, custom, obj_name))
    probes = concurrency.each(
        lambda item: item if isinstance(item, str) else _probe(ctx, release, *item),
        wanted,
        ctx.config.concurrency,
    )
    for probe in probes:
        if isinstance(probe, str):
            checked.append(probe)
            continue
        name, version, answers = probe.name, probe.version, probe.answers
        if "create" not in answers:
            refusals = probe.refusals
            result.details.append(
                f"{name}: no object could be created at {version} to check create, get "
                f"and update (add a sample): {refusals[0] if refusals else 'none tried'}"
            )
            if result.passed:
                result.passed = None
        for verb, answer in answers.items():
            if probe.expected not in answer.warnings:
                result.fail(
                    f"{name}: {verb} at deprecated {version} did not warn {probe.expected!r}",
                    f"{verb} at {version}: {answer.status}, warnings {answer.warnings}",
                )
        # Each item names its CRD whole (two groups may share a plural) and holds no ", "
        # or "; ": the merge of a split run joins the shards' lists item by item.
        verbs = "/".join(answers)
        text = "custom" if probe.custom else "default"
        checked.append(f"{name} {version} ({text} text: {verbs})")
    if result.passed is not False:
        result.evidence = f"{WARNED} {', '.join(checked)}" if checked else NONE_DEPRECATED
        if result.passed is None:
            result.evidence = "not proven in part: " + result.evidence


def _probe(
    ctx: GateContext,
    release: Release,
    name: str,
    version: str,
    custom: str | None,
    obj_name: str,
) -> _Probe:
    """Create, list, get and update ``name`` at deprecated ``version``: each answer."""
    manifest = release.crds[name]
    resource = Resource.of(manifest)
    expected = custom or default_warning(
        resource.group, version, resource.kind, release.versions(name)
    )
    path = resource.path(version, HISTORY_NS)
    created, refusals = None, []
    for body in _acceptable_bodies(ctx, name, release, version, obj_name):
        candidate = objects.manifest(manifest, version, obj_name, HISTORY_NS, body)
        created = call(ctx.cluster, "POST", path, candidate)
        if created.ok:
            break
        refusals.append(created.message)
    # One item is enough for the list's warning: the whole list would read every object of
    # the CRD from etcd.
    answers = {"list": call(ctx.cluster, "GET", f"{path}?limit=1")}
    if created is not None and created.ok:
        answers["create"] = created
        answers["get"] = call(ctx.cluster, "GET", f"{path}/{obj_name}")
        updated = answers["get"].body or {}
        updated.setdefault("metadata", {}).setdefault("labels", {})["gate"] = "updated"
        answers["update"] = call(ctx.cluster, "PUT", f"{path}/{obj_name}", updated)
        call(ctx.cluster, "DELETE", f"{path}/{obj_name}")
    return _Probe(name, version, custom, expected, answers, refusals)


def _acceptable_bodies(
    ctx: GateContext, name: str, release: Release, version: str, obj_name: str
) -> Iterator[dict]:
    """The samples, an empty object, then drawn ones: repaired first by the local validator
    as every drawn object the gate sends is (a raw draw rarely meets a schema whose validity
    lives in CEL rules: gateway-api's deprecated route versions refused all ten), then as
    drawn."""
    entry = release.entry(name, version)
    yield from ctx.sample_bodies(name, version)
    yield {}
    # Drawn only if those were refused: most versions take the empty object.
    drawn = objects.first_examples(entry, 10, ctx.config.seed)
    manifest = release.crds[name]
    repaired = []
    for body in drawn:
        fixed, refused = ctx.screening.screen(
            manifest, entry, body, obj_name, HISTORY_NS, counted=False
        )
        if refused is None and fixed is not body:
            repaired.append(fixed)
    yield from [*repaired, *drawn]
