"""Which of the candidate's CRDs the release did not change: identical to the previous
release's after documentation-only keys, and converted the same way under both (strategy
None, or the same webhook: the previous release names its own, ``crds[i].webhook``, exactly
as the top-level one). What such a CRD's own checks find is the previous release's by
construction, never the candidate's (``checks.debt``); unless ``--full`` it is listed
("unchanged: documentation only") and not judged again.

Documentation only, and nothing else:

- in every schema node (where a schema is: never inside a ``default``, ``enum`` or
  ``example`` value, nor a property that happens to be named so): ``description``,
  ``example``, ``externalDocs``, ``title`` (``schema_rules.DOCUMENTATION``);
- a printer column's ``description``;
- in ``metadata``: the annotations and labels in ``STAMPS`` (which tool and release wrote the
  file), a project's own release stamp (a key named ``version`` or ``…-version`` holding a
  release number: gateway-api's ``…/bundle-version: v1.2.1``), and what the API server
  writes (``uid``, ``resourceVersion``, ``managedFields``, ...: anything but labels and
  annotations).

Everything else of ``spec``, ``metadata.labels`` and ``metadata.annotations`` must be equal
as JSON: a ``false`` spelt out where the other release leaves it out, or a list reordered,
is a change here (the full diff then decides it, as any change). Equality is tested on the
whole stripped manifest, not through the diff's rules: a rule the diff lacks can never make a
changed CRD pass as unchanged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from crdharness.gate import json_values
from crdharness.gate.evidence.schema_rules import DOCUMENTATION
from crdharness.gate.given.config import WebhookSpec
from crdharness.gate.given.manifests import Release

# Metadata that says which tool or release wrote the file, nothing the API server acts on.
STAMPS = (
    "controller-gen.kubebuilder.io/version",  # annotation: controller-gen's version
    "helm.sh/chart",  # label: the chart and its version
    "app.kubernetes.io/version",  # label: the release's version
    "meta.helm.sh/release-name",  # annotations helm itself writes on what it installs
    "meta.helm.sh/release-namespace",
)
# Schema keywords whose values are schemas (or maps or lists of them): only there is a key
# named ``description`` documentation.
_SCHEMA_MAPS = ("properties", "patternProperties", "definitions", "dependencies")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf")
_SCHEMAS = ("items", "additionalProperties", "additionalItems", "not")


@dataclass(frozen=True)
class Judgement:
    unchanged: bool
    why: str  # one line: what makes it unchanged, or what changed


def stripped(manifest: dict) -> dict:
    """``manifest`` without its documentation-only keys (the module's list): what must be
    equal between two releases for the CRD to be unchanged."""
    metadata = manifest.get("metadata") or {}
    spec = dict(manifest.get("spec") or {})
    versions = []
    for entry in spec.get("versions") or []:
        entry = dict(entry)
        schema = (entry.get("schema") or {}).get("openAPIV3Schema")
        if schema is not None:
            entry["schema"] = {**entry["schema"], "openAPIV3Schema": _schema(schema)}
        if entry.get("additionalPrinterColumns"):
            entry["additionalPrinterColumns"] = [
                {k: v for k, v in column.items() if k != "description"}
                for column in entry["additionalPrinterColumns"]
            ]
        versions.append(entry)
    if "versions" in spec:
        spec["versions"] = versions
    validation = (spec.get("validation") or {}).get("openAPIV3Schema")  # pre-v1 spelling
    if validation is not None:
        spec["validation"] = {**spec["validation"], "openAPIV3Schema": _schema(validation)}
    return {
        "spec": spec,
        "labels": _unstamped(metadata.get("labels")),
        "annotations": _unstamped(metadata.get("annotations")),
    }


# A project's own release stamp (gateway-api's ``gateway.networking.k8s.io/bundle-version:
# v1.2.1``): a key named ``version`` or ``...-version`` holding a release number. Any other
# value of such a key (``gold``, ``latest``) is a change like any other annotation.
_STAMP_KEY = re.compile(r"(?:^|/)(?:[a-z0-9.]+-)?version$")
_RELEASE_NUMBER = re.compile(r"v?\d+(?:\.\d+){1,3}(?:[-+][0-9A-Za-z.+-]*)?")


def _unstamped(values) -> dict:
    return {k: v for k, v in (values or {}).items() if k not in STAMPS and not _stamp(k, v)}


def _stamp(key: str, value: object) -> bool:
    return bool(_STAMP_KEY.search(key)) and bool(_RELEASE_NUMBER.fullmatch(str(value)))


def _schema(node):
    """A schema node without its documentation keys, at any depth."""
    if not isinstance(node, dict):
        return node  # `additionalProperties: true`, or not a schema: kept as it is
    kept = {k: v for k, v in node.items() if k not in DOCUMENTATION}
    for key in _SCHEMA_MAPS:
        if isinstance(kept.get(key), dict):
            kept[key] = {
                name: (_schema(sub) if isinstance(sub, dict) else sub)
                for name, sub in kept[key].items()
            }
    for key in _SCHEMA_LISTS:
        if isinstance(kept.get(key), list):
            kept[key] = [_schema(sub) for sub in kept[key]]
    for key in _SCHEMAS:
        if key in kept:
            value = kept[key]
            kept[key] = [_schema(s) for s in value] if isinstance(value, list) else _schema(value)
    return kept


def _same(a, b) -> bool:
    return json_values.content_text(a) == json_values.content_text(b)


def webhook_converts(release: Release, name: str, spec: WebhookSpec | None) -> bool:
    """Whether ``name`` converts through a webhook under ``release`` (its manifest says so,
    or the webhook it runs under adds the stanza: ``convert``)."""
    conversion = release.crds[name]["spec"].get("conversion")
    if conversion is None:
        return spec is not None and spec.converts(release.crds[name])
    return conversion.get("strategy") == "Webhook"


def judge(
    previous: Release, candidate: Release, name: str, webhook: WebhookSpec | None
) -> Judgement:
    """Whether the candidate's ``name`` is unchanged from ``previous`` (``webhook``: the
    top-level one, the candidate's, and that of every release that names none)."""
    number = previous.index + 1
    if name not in previous.crds:
        return Judgement(False, f"new in this release (release {number} has no {name})")
    old, new = previous.crds[name], candidate.crds[name]
    if not _same(stripped(old), stripped(new)):
        return Judgement(False, f"changed since release {number}")
    text = "identical" if _same(old, new) else "documentation only"
    old_spec = previous.webhook or webhook  # the webhook each release runs under
    if webhook_converts(previous, name, old_spec) or webhook_converts(candidate, name, webhook):
        if previous.webhook is None:
            return Judgement(
                False,
                f"{text}, but converted by a webhook and release {number} names none of its "
                f"own (crds[{previous.index}].webhook): the gate cannot tell it is the same",
            )
        if previous.webhook != webhook:
            return Judgement(
                False, f"{text}, but release {number}'s webhook is not the candidate's"
            )
        how = f"the same webhook under both (crds[{previous.index}].webhook is `webhook:`)"
    else:
        how = "strategy None"
    return Judgement(True, f"unchanged: {text} (since release {number}; {how})")


def crds(releases: list[Release], webhook: WebhookSpec | None) -> dict[str, str]:
    """The candidate's unchanged CRDs (name -> the one line that says why); none without a
    release before it."""
    if len(releases) < 2:
        return {}
    previous, candidate = releases[-2], releases[-1]
    judged = {name: judge(previous, candidate, name, webhook) for name in candidate.crds}
    return {name: j.why for name, j in judged.items() if j.unchanged}


def group_changed(
    releases: list[Release], unchanged, name: str, webhook: WebhookSpec | None = None
) -> bool:
    """Whether ``name``'s old objects still go through the upgrade: it converts through a
    webhook (``webhook``: the top-level one, as in ``judge``) and another CRD of its group
    changed in the candidate (changed, added or dropped) — a cheap witness of the one thing
    a group's CRDs share that their manifests do not show. Under strategy None nothing is
    shared: the API server stores and serves each CRD on its own, so an identical CRD reads
    and writes the same whatever its neighbours do."""
    previous, candidate = releases[-2], releases[-1]
    if not (
        webhook_converts(previous, name, previous.webhook or webhook)
        or webhook_converts(candidate, name, webhook)
    ):
        return False
    group = candidate.crds[name]["spec"].get("group")
    return any(
        other not in unchanged
        for release in (previous, candidate)
        for other, manifest in release.crds.items()
        if other != name and manifest["spec"].get("group") == group
    )
