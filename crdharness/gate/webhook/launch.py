"""Starting the webhooks a gate run needs: the top-level one (the candidate's, every release's
that names none, and the admission webhooks'), and one per history entry that names its own
(``crds[i].webhook``), each in its own directory with its own port and certificates, each
ready only once it answers a review as the API server will call it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from crdharness.cluster import HOST_LOOPBACK, IMAGE_LOADER, SERVICE_ROUTING
from crdharness.errors import HarnessError
from crdharness.gate.given import manifests
from crdharness.gate.given.config import GateConfig, WebhookSpec
from crdharness.gate.given.manifests import Release
from crdharness.gate.webhook.kind_webhook import KindUserWebhook
from crdharness.gate.webhook.user_webhook import UserWebhook
from crdharness.progress import to_stderr


def needs_top_level(config: GateConfig, releases: list[Release], admission: list[dict]) -> bool:
    """Whether a release naming no webhook of its own converts through one, or admission
    webhooks are given: the top-level webhook must run."""
    return bool(admission) or any(
        manifests.uses_webhook(r, config.webhook) for r in releases if r.webhook is None
    )


def start_top_level(
    config: GateConfig, releases: list[Release], cluster, directory: Path
) -> UserWebhook | KindUserWebhook:
    spec = config.webhook
    if spec is None:
        raise HarnessError(manifests.missing_webhook(releases))
    candidates = [r for r in releases if r.webhook is None]
    path, desired = probe_target(spec, candidates)
    webhook: UserWebhook | KindUserWebhook
    if cluster.can(HOST_LOOPBACK):
        webhook = UserWebhook(
            spec, directory, cluster.kubeconfig, config.root, ready_path=path, ready_version=desired
        )
    elif cluster.can(SERVICE_ROUTING) and cluster.can(IMAGE_LOADER):
        # kind: the API server runs in a container; the image goes behind a Service
        assert cluster.load_image is not None  # IMAGE_LOADER says so
        webhook = KindUserWebhook(
            spec, directory, cluster, cluster.load_image, ready_path=path, ready_version=desired
        )
    else:
        raise HarnessError(
            f"the {cluster.backend} cluster can neither reach a webhook on this machine nor "
            "run one behind a Service"
        )
    to_stderr(f"gate: starting the webhook ({spec.form}), ready at {path or '/'}")
    return webhook.start()


def start_releases(
    config: GateConfig,
    releases: list[Release],
    cluster,
    directory: Callable[[str], Path],
    started: dict[int, UserWebhook],
) -> None:
    """Each release's own webhook, started into ``started`` (release index -> webhook) as it
    becomes ready, so that the caller stops every one started, also when a later one fails.
    ``directory(name)`` makes a new directory."""
    own = [r for r in releases if r.webhook is not None]
    if own and not cluster.can(HOST_LOOPBACK):
        raise HarnessError(
            f"crds[{own[0].index}].webhook: a release's own webhook needs the local backend "
            f"(the {cluster.backend} cluster runs only the top-level webhook)"
        )
    for release in own:
        assert release.webhook is not None  # selected so
        path, desired = probe_target(release.webhook, [release])
        webhook = UserWebhook(
            release.webhook,
            directory(f"gate-webhook-release-{release.index + 1}"),
            cluster.kubeconfig,
            config.root,
            ready_path=path,
            ready_version=desired,
        )
        to_stderr(
            f"gate: starting release {release.index + 1}'s own webhook ({release.webhook.form}), "
            f"ready at {path or '/'}"
        )
        try:
            started[release.index] = webhook.start()
        except HarnessError as exc:  # which of the webhooks, then its own cause and lines
            raise HarnessError(
                f"crds[{release.index}].webhook (release {release.index + 1}'s own): {exc}"
            ) from None


def probe_target(spec: WebhookSpec, releases: list[Release]) -> tuple[str | None, str | None]:
    """The path and a desired version for a readiness review: the latest of ``releases``'
    first webhook CRD, as the API server will call it. (None, None) for a webhook serving
    only admission."""
    for release in reversed(releases):
        for crd in release.crds.values():
            pointed = manifests.point_conversion(crd, lambda path: {"path": path}, spec)
            hook = (pointed["spec"].get("conversion") or {}).get("webhook")
            if hook:
                path = hook["clientConfig"]["path"]
                return path, f"{crd['spec']['group']}/{release.storage(crd['metadata']['name'])}"
    return None, None
