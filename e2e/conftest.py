"""Everything under e2e/ runs against the session's cluster. The fixtures these tests use
(``cluster``, ``group``, ``make_crd``, ``webhook_crd``, the webhooks) come from the harness's
pytest plugin, loaded by the top-level conftest."""

from pathlib import Path

import pytest

from crdharness import manifests_yaml

MANIFESTS = Path(__file__).resolve().parent.parent / "manifests"


def pytest_collection_modifyitems(items):
    for item in items:
        if Path(str(item.fspath)).is_relative_to(Path(__file__).parent):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def manifests():
    """Load a manifest from manifests/ by file name (its one object, as kubectl reads it)."""

    def load(name: str) -> dict:
        (document,) = manifests_yaml.read(MANIFESTS / name)
        return document

    load.path = lambda name: MANIFESTS / name
    return load
