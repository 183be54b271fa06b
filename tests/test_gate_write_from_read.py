"""An old object's writes start from the gate's last read of it (``upgrade_writes.rewrite``
with ``read``): one request fewer per object and release, never a write from a stale copy —
the server refuses an update naming a resourceVersion the object has moved past (409), and
the gate reads it again."""

import pytest

from crdharness.gate.checks.upgrade_objects import Written
from crdharness.scenarios import crds


def test_a_read_is_current_only_under_its_release_and_until_the_next_write():
    obj = Written("widgets.example.com", "v1", "w", "ns")
    obj.read_now(0, "v1", {"spec": {"size": 1}})
    assert obj.read_at(0, "v1") == {"spec": {"size": 1}}
    assert obj.read_at(0, "v2") is None  # never read there
    assert obj.read_at(1, "v1") is None  # read under another release's CRDs
    obj.read_now(1, "v2", {"spec": {"size": 2}})  # the next release: its reads only
    assert obj.read_at(1, "v1") is None and obj.read_at(1, "v2") == {"spec": {"size": 2}}
    obj.written_now()
    assert obj.read_at(1, "v2") is None


def _widgets(group: str) -> dict:
    schema = {
        "type": "object",
        "properties": {
            "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
            "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
        },
    }
    entry = crds.version("v1", schema)
    entry["subresources"] = {"status": {}}
    return crds.manifest(group, "Widget", [entry])


@pytest.fixture
def counted(cluster, monkeypatch):
    """The requests the gate sends to the API server, as (method, path) in order."""
    sent: list[tuple[str, str]] = []
    original = cluster.http.exchange

    def exchange(method, path, *args, **kwargs):
        sent.append((method, path.split("?")[0]))
        return original(method, path, *args, **kwargs)

    monkeypatch.setattr(cluster.http, "exchange", exchange)
    return sent


@pytest.mark.e2e
def test_the_writes_start_from_a_current_read_and_read_again_past_a_stale_one(
    cluster, make_crd, namespace, group, counted
):
    from crdharness.gate.api import call
    from crdharness.gate.checks.upgrade_writes import rewrite

    crd = make_crd(_widgets(group))
    crd.create_object("v1", namespace, "w", spec={"size": 1})
    path = crd.path("v1", namespace, "w")
    read = call(cluster, "GET", path).body

    # Current: the first update is sent from it, no read before it; every write passes.
    counted.clear()
    assert rewrite(cluster, path, "v1", has_status=True, read=read).refused == []
    assert counted[0] == ("PUT", path), counted[:3]
    without_read = len(counted)
    counted.clear()
    assert rewrite(cluster, path, "v1", has_status=True).refused == []
    assert counted[0] == ("GET", path) and len(counted) == without_read + 1, counted

    # Stale: the object moved on (another client's update) since the gate's read. The server
    # refuses the update sent from the old copy (409), the gate reads it again, and the
    # writes go on from what is stored: nothing of the other client's update is undone.
    stale = call(cluster, "GET", path).body
    newer = call(cluster, "PUT", path, {**stale, "spec": {"size": 7}})
    assert newer.ok, newer.message
    counted.clear()
    assert rewrite(cluster, path, "v1", has_status=True, read=stale).refused == []
    assert counted[:3] == [("PUT", path), ("GET", path), ("PUT", path)], counted[:3]
    assert call(cluster, "GET", path).body["spec"] == {"size": 7}
