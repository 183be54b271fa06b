"""The parts of ``--from-cluster`` that need no cluster: which objects are read, which version
each was written at, what may be shown of them, and the connection that cannot write."""

from __future__ import annotations

import pytest
import yaml
from kubernetes import client

from crdharness.errors import HarnessError
from crdharness.gate.given import cluster_source, source_http, source_selection
from crdharness.gate.redaction import HIDDEN, Redaction, secret_values
from crdharness.gate.results import CheckResult


def _item(name: str, spec: dict, *writers: tuple[str, str]) -> dict:
    return {
        "apiVersion": "example.com/v1beta1",
        "kind": "Tunnel",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "resourceVersion": "7",
            "uid": "u",
            "managedFields": [{"apiVersion": v, "time": t} for v, t in writers],
            "annotations": {cluster_source.LAST_APPLIED: "{...}", "team": "a"},
        },
        "spec": spec,
    }


def test_an_object_was_written_at_its_newest_writers_version_where_served():
    item = _item(
        "a",
        {},
        ("example.com/v1beta1", "2026-01-02T00:00:00Z"),
        ("example.com/v1alpha1", "2026-03-01T00:00:00Z"),
    )
    assert source_selection.written_at(item, ["v1alpha1", "v1beta1"]) == "v1alpha1"
    assert source_selection.written_at(item, ["v1beta1"]) == "v1beta1"  # v1alpha1 no longer served


def test_every_shape_is_chosen_before_more_of_the_same():
    same = [_item(f"same-{i}", {"mode": "direct"}, ("example.com/v1beta1", "t")) for i in range(5)]
    other_fields = _item("fields", {"mode": "relay", "token": "x"}, ("example.com/v1beta1", "t"))
    other_writer = _item("writer", {"mode": "direct"}, ("example.com/v1alpha1", "t"))
    chosen = source_selection.choose([*same, other_fields, other_writer], 3)
    assert [i["metadata"]["name"] for i in chosen] == ["same-0", "fields", "writer"]
    assert source_selection.choose(same, 10) == same


def test_every_object_is_chosen_when_no_cap_is_set():
    many = [_item(f"o-{i}", {"mode": "direct"}, ("example.com/v1beta1", "t")) for i in range(3000)]
    assert source_selection.choose(many, None) == many


@pytest.mark.parametrize("empty", [{}, [], ""])
def test_a_field_present_but_empty_is_a_shape_of_its_own(empty):
    """``route: {}`` may be exactly what the release refuses: under a cap it is chosen
    before more objects without the field."""
    absent = [
        _item(f"absent-{i}", {"mode": "direct"}, ("example.com/v1beta1", "t")) for i in range(3)
    ]
    held = _item("held", {"mode": "direct", "route": {"via": "a"}}, ("example.com/v1beta1", "t"))
    empty_one = _item("empty", {"mode": "direct", "route": empty}, ("example.com/v1beta1", "t"))
    chosen = source_selection.choose([*absent, held, empty_one], 3)
    assert [i["metadata"]["name"] for i in chosen] == ["absent-0", "held", "empty"]
    assert source_selection.shape(empty_one) != source_selection.shape(absent[0])


def test_server_written_metadata_and_the_last_applied_copy_are_not_captured():
    stripped = cluster_source._stripped(_item("a", {"mode": "direct"}))
    assert stripped["metadata"] == {"name": "a", "namespace": "ns", "annotations": {"team": "a"}}


def test_the_source_connection_refuses_every_write_before_sending_it():
    configuration = client.Configuration()
    configuration.host = "https://127.0.0.1:1"  # nothing listens: a request sent would fail
    http = source_http.ReadOnlyHttp(configuration)
    for method in ("POST", "PUT", "PATCH", "DELETE"):
        with pytest.raises(HarnessError, match="never writes"):
            http.request(method, "/api/v1/namespaces")


def test_the_rbac_grants_get_on_the_crds_and_get_list_on_their_objects():
    crd = {"spec": {"group": "example.com", "names": {"plural": "tunnels"}}}
    role = yaml.safe_load(cluster_source.rbac({"tunnels.example.com": crd}))
    assert role["rules"] == [
        {
            "apiGroups": ["apiextensions.k8s.io"],
            "resources": ["customresourcedefinitions"],
            "resourceNames": ["tunnels.example.com"],
            "verbs": ["get"],
        },
        {"apiGroups": ["example.com"], "resources": ["tunnels"], "verbs": ["get", "list"]},
    ]


SCHEMA = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "auth": {"type": "string", "format": "password"},
                "apiToken": {"type": "string"},
                "endpoint": {"type": "string"},
            },
        }
    },
}


def test_secret_like_fields_are_found_by_name_and_by_format():
    obj = {"spec": {"auth": "hunter22", "apiToken": "tk-123", "endpoint": "tcp://a"}}
    assert secret_values(obj, SCHEMA) == {"hunter22", "tk-123"}


def test_a_result_shows_names_paths_and_messages_never_a_secret_or_without_asking_a_value():
    redaction = Redaction(show_values=False, secrets={"tk-123"})
    result = CheckResult("upgrade", "release 1->2")
    result.fail('ns/a: spec.apiToken: Invalid value: "tk-123": too long', "ns/a: tk-123 again")
    result.objects.append(
        (
            "ns/a at v1",
            {
                "apiVersion": "x/v1",
                "metadata": {"name": "a"},
                "spec": {"endpoint": "tcp://a", "apiToken": "tk-123", "replicas": 2},
            },
        )
    )
    redaction.result(result)
    assert "tk-123" not in repr(result)
    assert result.evidence == f'ns/a: spec.apiToken: Invalid value: "{HIDDEN}": too long'
    _, shown = result.objects[0]
    assert shown == {
        "apiVersion": "x/v1",
        "metadata": {"name": "a"},
        "spec": {"endpoint": "<string>", "apiToken": HIDDEN, "replicas": "<int>"},
    }
    redaction.result(result)  # again: the same
    assert result.objects[0][1] == shown


def test_show_values_shows_values_but_never_a_secret():
    redaction = Redaction(show_values=True, secrets={"tk-123"})
    shown = redaction.obj({"spec": {"endpoint": "tcp://a", "apiToken": "tk-123"}})
    assert shown == {"spec": {"endpoint": "tcp://a", "apiToken": HIDDEN}}


def test_differences_the_gate_describes_lose_their_values_unless_asked():
    from crdharness.gate.diff import Difference

    lines = [
        Difference("spec.endpoint", "changed", "tcp://a", "tcp://b").describe(),
        Difference("spec.replicas", "lost", 3).describe(),
        Difference("spec.labels", "added", None, {"a": "b"}).describe(),
    ]
    hidden = [Redaction().text(f"ns/a at v1: {line}") for line in lines]
    assert hidden == [
        "ns/a at v1: spec.endpoint: <value> -> <value>",
        "ns/a at v1: spec.replicas: lost (was <value>)",
        "ns/a at v1: spec.labels: appeared (<value>)",
    ]
    assert [Redaction().text(h) for h in hidden] == hidden
    assert Redaction(show_values=True).text(lines[0]) == lines[0]
    server = 'spec.mode: Unsupported value: "legacy": supported values: "direct", "relay"'
    assert Redaction().text(server) == server  # the API server's words are shown as said


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("password", True),
        ("apiToken", True),
        ("clientSecret", True),
        ("privateKey", True),
        ("credentials", True),
        ("secretName", False),  # where a secret is kept, not the secret
        ("tokenSecretRef", False),
        ("azureKeyVault", False),
        ("key", False),  # a Secret's key name
        ("monkey", False),
    ],
)
def test_a_field_is_secret_like_by_the_last_word_of_its_name(name, secret):
    from crdharness.gate.redaction import secret_like

    assert secret_like(name) is secret


def test_a_secret_value_is_taken_out_as_a_word_not_from_inside_other_words():
    redaction = Redaction(secrets={"none"})
    assert redaction.text('nonexistent: none, "none"') == f'nonexistent: {HIDDEN}, "{HIDDEN}"'
