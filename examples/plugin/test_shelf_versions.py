"""A project's own version tests, written with nothing but the harness's pytest plugin:

    pytest -p crdharness.pytest_plugin examples/plugin

The plugin starts a real kube-apiserver and etcd (``cluster``), gives each test a namespace
of its own (``namespace``), and ``make_crd`` creates the CRD and deletes it afterwards.
"""

from pathlib import Path

import pytest
from kubernetes.client import ApiException

from crdharness.manifests_yaml import read

# The CRD as kubectl reads the file (PyYAML alone reads some YAML another way: `- =`, `y`).
(CRD,) = read(Path(__file__).parent / "shelf-crd.yaml")


@pytest.fixture
def shelves(make_crd):
    return make_crd(CRD)


def test_written_at_the_old_version_read_at_the_new(shelves, namespace):
    shelves.create_object("v1alpha1", namespace, "reading-room", spec={"books": 12, "room": "A"})

    read = shelves.get_object("v1", namespace, "reading-room")

    assert read["apiVersion"] == "library.example.org/v1"
    assert read["spec"] == {"books": 12, "room": "A"}
    # etcd holds the object at the storage version, v1, however it was written.
    assert shelves.stored_version_of("reading-room", namespace) == "v1"


def test_the_deprecated_version_warns(shelves, namespace, cluster):
    answer = cluster.http.get(shelves.path("v1alpha1", namespace))

    assert answer.status_code == 200
    assert "Shelf is deprecated; use v1" in answer.headers.get("Warning", "")


def test_every_version_validates_with_its_own_schema(shelves, namespace):
    with pytest.raises(ApiException) as refused:
        shelves.create_object("v1alpha1", namespace, "negative", spec={"books": -1})

    assert refused.value.status == 422
