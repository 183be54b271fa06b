"""What a gate file asks that its history cannot give, refused in one line before anything
starts: a run that would silently ignore part of the file is worse than no run.

- ``allow:`` paths that name no field of any version of any release (a typo, or a path
  written another way) would excuse nothing, silently.
- ``webhook:`` given while no CRD would call it (several versions, no ``spec.conversion``
  stanza, not in ``webhook.convert``) and no ``admission:``: the webhook would never be
  started, and ``schemas-vs-strategy`` would blame the project for it.
- a release's own ``webhook:`` (``crds[i].webhook``) while none of its CRDs converts through
  a webhook: it would never be called.
- no ``webhook:`` while a release naming none of its own converts through one (or
  ``admission:`` is given): said with the releases, and, where the candidate itself dropped
  its webhook, how to give an earlier release its own.
"""

from __future__ import annotations

from crdharness.errors import HarnessError
from crdharness.gate.evidence import schemas
from crdharness.gate.given import manifests
from crdharness.gate.given.config import GateConfig
from crdharness.gate.given.manifests import Release, uses_webhook


def check(config: GateConfig, releases: list[Release], admission: list[dict]) -> None:
    """Raise a HarnessError naming the first thing of the file the history cannot honour."""
    for i, allowance in enumerate(config.allow):
        if not _declared_anywhere(allowance.path, releases):
            raise HarnessError(
                f"allow[{i}].path: {allowance.path} is no field of any version of "
                f"{', '.join(_crd_names(releases))}; write it as report.md prints paths "
                "(e.g. spec.routes[].regex), from the object's root"
            )
    for release in releases:
        if release.webhook is not None and not uses_webhook(release, release.webhook):
            raise HarnessError(
                f"crds[{release.index}].webhook: release {release.index + 1} "
                f"({release.label}) converts nothing through a webhook (no CRD with strategy "
                "Webhook, none in its webhook.convert): its webhook would never be called"
            )
    if config.webhook is None and (
        admission or any(uses_webhook(r, None) for r in releases if r.webhook is None)
    ):
        raise HarnessError(manifests.missing_webhook(releases))
    if config.webhook is None or admission:
        return
    if any(uses_webhook(r, config.webhook) for r in releases if r.webhook is None):
        return
    unconverted = sorted(
        name
        for release in releases
        for name, crd in release.crds.items()
        if len(crd["spec"].get("versions") or []) > 1 and "conversion" not in crd["spec"]
    )
    if unconverted:
        names = ", ".join(dict.fromkeys(unconverted))
        raise HarnessError(
            f"webhook: is given, but no CRD would call it: {names} (several versions, no "
            "spec.conversion, as controller-gen writes it before kustomize patches it in): "
            "list them under webhook.convert (names, or patterns such as '*.example.com' "
            "or '*')"
        )


def _declared_anywhere(path: str, releases: list[Release]) -> bool:
    return any(
        schemas.declares(version, path)
        for release in releases
        for name in release.crds
        for version in release.versions(name)
    )


def _crd_names(releases: list[Release]) -> list[str]:
    return list(dict.fromkeys(name for release in releases for name in release.crds))
