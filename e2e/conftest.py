"""Everything under e2e/ runs against the session's cluster."""

from pathlib import Path

import pytest
import yaml

MANIFESTS = Path(__file__).resolve().parent.parent / "manifests"


def pytest_collection_modifyitems(items):
    for item in items:
        if Path(str(item.fspath)).is_relative_to(Path(__file__).parent):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def manifests():
    """Load a manifest from manifests/ by file name."""

    def load(name: str) -> dict:
        return yaml.safe_load((MANIFESTS / name).read_text())

    load.path = lambda name: MANIFESTS / name
    return load


@pytest.fixture
def group(request):
    """An API group of the test's own."""
    from crdharness.versioned import unique_group

    return unique_group(request.node.originalname or request.node.name)


@pytest.fixture
def make_crd(cluster):
    """Create versioned CRDs (from manifests) that are deleted when the test ends."""
    from crdharness.versioned import VersionedCRD

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
    from crdharness.versioned import (
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
