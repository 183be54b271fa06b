"""CRD fixtures: an API group of the test's own (so tests run in any order and in parallel:
CRDs and short names are cluster-wide), CRDs made from manifests and deleted after the test,
and the documented webhook CronTab."""

from __future__ import annotations

import pytest


@pytest.fixture
def group(request):
    """An API group of the test's own."""
    from crdharness.scenarios.versioned import unique_group

    return unique_group(request.node.originalname or request.node.name)


@pytest.fixture
def make_crd(cluster):
    """``make_crd(manifest, create=True, on=None)``: a ``VersionedCRD`` from a CRD manifest
    (a dict), created and Established in ``on`` (default: the session's cluster), deleted when
    the test ends."""
    from crdharness.scenarios.versioned import VersionedCRD

    made = []

    def make(manifest: dict, create: bool = True, on=None) -> VersionedCRD:
        crd = VersionedCRD(on or cluster, manifest)
        if create:
            crd.create()
        made.append(crd)
        return crd

    yield make
    for crd in made:
        crd.delete()


@pytest.fixture
def webhook_crd(make_crd, group):
    """The documented webhook CronTab (v1beta1 hostPort, v1 host/port) in the test's group,
    converted by ``webhook``, reached by URL with its CA as caBundle."""
    from crdharness.scenarios.versioned import (
        HOSTPORT_SCHEMA,
        crontab_manifest,
        version,
        webhook_conversion,
    )

    def make(
        webhook,
        on=None,
        storage="v1beta1",
        review_versions=("v1", "v1beta1"),
        status=False,
        v1_schema=None,
    ):
        sub = {"status": {}} if status else None
        manifest = crontab_manifest(
            group,
            [
                version(
                    "v1beta1",
                    storage=storage == "v1beta1",
                    schema=HOSTPORT_SCHEMA,
                    subresources=sub,
                ),
                version("v1", storage=storage == "v1", schema=v1_schema, subresources=sub),
            ],
            webhook_conversion(webhook, review_versions=review_versions),
        )
        return make_crd(manifest, on=on)

    return make
