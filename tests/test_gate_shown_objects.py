"""Objects as the gate shows them: ``objects/`` files named by the object (kind, namespace,
name; safe and unique), and no annotation or managedFields entry of the gate's own in any
object shown (files, report.md, pytest's failure text), while the object itself, which the
gate goes on writing and comparing, keeps them."""

from __future__ import annotations

import copy

import yaml

from crdharness.gate.api import MANAGER
from crdharness.gate.checks.upgrade_writes import TOUCHED
from crdharness.gate.reporting import report
from crdharness.gate.results import CheckResult
from crdharness.gate.shown import as_shown, file_names, object_stem

OWN_KEY = f"f:{TOUCHED}"


def _gateway(namespace: str, name: str) -> dict:
    """As the upgrade check reads one back after its writes: its own annotation on it, an
    entry of its server-side apply, and its annotation's key in another entry."""
    return {
        "apiVersion": "example.com/v1",
        "kind": "Gateway",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "annotations": {TOUCHED: "v1", "example.com/owner": "team-b"},
            "managedFields": [
                {"manager": MANAGER, "operation": "Apply", "fieldsV1": {"f:spec": {}}},
                {
                    "manager": "kubectl",
                    "operation": "Update",
                    "fieldsV1": {
                        "f:metadata": {"f:annotations": {OWN_KEY: {}, "f:example.com/owner": {}}},
                        "f:status": {},
                    },
                },
                {
                    "manager": "python-requests",
                    "operation": "Update",
                    "fieldsV1": {"f:metadata": {"f:annotations": {OWN_KEY: {}}}},
                },
            ],
        },
        "status": {"addresses": [{"type": "IPAddress", "value": "pending"}]},
    }


def test_the_gates_own_annotations_and_entries_are_not_shown_and_the_object_keeps_them():
    obj = _gateway("team-b", "status-bad-ip")
    before = copy.deepcopy(obj)
    shown = as_shown(obj)
    assert obj == before, "the object the gate goes on using was changed"
    assert shown["metadata"]["annotations"] == {"example.com/owner": "team-b"}
    assert [e["manager"] for e in shown["metadata"]["managedFields"]] == ["kubectl"]
    assert TOUCHED not in yaml.safe_dump(shown)
    assert shown["status"] == obj["status"]
    only_own = {"metadata": {"name": "x", "annotations": {"gate.crdharness.io/round-trip": "v2"}}}
    assert as_shown(only_own) == {"metadata": {"name": "x"}}
    plain = {"metadata": {"name": "y", "annotations": {"a": "b"}}}
    assert as_shown(plain) is plain


def test_file_names_say_which_object_and_are_safe_and_unique():
    assert object_stem(_gateway("team-b", "status-bad-ip"), "x") == "Gateway_team-b_status-bad-ip"
    cluster_wide = {"kind": "Tunnel", "metadata": {"name": "edge.example.com"}}
    assert object_stem(cluster_wide, "x") == "Tunnel_edge.example.com"
    assert object_stem({"spec": {}}, "release 1->2-0") == "release_1-_2-0"
    long = object_stem({"kind": "K", "metadata": {"name": "a" * 253}}, "x")
    other = object_stem({"kind": "K", "metadata": {"name": "a" * 252 + "b"}}, "x")
    assert len(long) <= 120 and long != other
    names = file_names(["Gateway_a_b.upgrade", "Gateway_a_b.upgrade", "gateway_a_b.upgrade"])
    assert names == ["Gateway_a_b.upgrade.yaml", "Gateway_a_b.upgrade.2.yaml", names[2]]
    assert len({n.lower() for n in names}) == 3


def test_the_report_names_objects_files_by_object_and_shows_none_of_the_gates_own(tmp_path):
    result = CheckResult("upgrade", "release 1->2")
    result.fail("team-b/status-bad-ip: status written anew refused: 422 status.x: Invalid value")
    bad, other = _gateway("team-b", "status-bad-ip"), _gateway("team-a", "dup")
    result.objects = [
        ("team-b/status-bad-ip as read at v1, refused", bad),
        ("team-b/status-bad-ip at v1 after the writes", bad),
        ("team-a/dup as read at v1, refused", other),
    ]
    report.write(tmp_path, report.Report([result], "1.37"))
    files = sorted(p.name for p in (tmp_path / "objects").iterdir())
    assert files == [
        "Gateway_team-a_dup.upgrade.yaml",
        "Gateway_team-b_status-bad-ip.upgrade.2.yaml",
        "Gateway_team-b_status-bad-ip.upgrade.yaml",
    ]
    first = (tmp_path / "objects" / "Gateway_team-b_status-bad-ip.upgrade.yaml").read_text()
    assert first.startswith("# upgrade [release 1->2]: team-b/status-bad-ip as read at v1")
    assert yaml.safe_load(first)["metadata"]["annotations"] == {"example.com/owner": "team-b"}
    for text in [
        *(p.read_text() for p in (tmp_path / "objects").iterdir()),
        (tmp_path / "report.md").read_text(),
        result.explain(),
    ]:
        assert "gate.crdharness.io" not in text and MANAGER not in text
    assert TOUCHED in bad["metadata"]["annotations"], "the object itself lost the annotation"


def test_a_redacted_object_shows_none_of_the_gates_own_either():
    # Redacted, the gate's apply entry's manager is a placeholder: taken out before.
    from crdharness.gate.redaction import Redaction

    result = CheckResult("upgrade", "release 1->2").fail("team-b/status-bad-ip: refused")
    result.objects = [("team-b/status-bad-ip as read at v1, refused", _gateway("team-b", "x"))]
    Redaction().result(result)
    (_, shown), *_ = result.objects
    assert len(shown["metadata"]["managedFields"]) == 1, shown["metadata"]["managedFields"]
    assert "gate.crdharness.io" not in yaml.safe_dump(shown)


def test_an_earlier_runs_object_files_do_not_stay_beside_this_runs(tmp_path):
    failed = CheckResult("upgrade", "release 1->2").fail("team-a/dup: refused")
    failed.objects = [("team-a/dup as read at v1, refused", _gateway("team-a", "dup"))]
    report.write(tmp_path, report.Report([failed], "1.37"))
    other = CheckResult("upgrade", "release 1->2").fail("team-a/web: refused")
    other.objects = [("team-a/web as read at v1, refused", _gateway("team-a", "web"))]
    report.write(tmp_path, report.Report([other], "1.37"))
    assert [p.name for p in (tmp_path / "objects").iterdir()] == ["Gateway_team-a_web.upgrade.yaml"]
    report.write(tmp_path, report.Report([CheckResult("upgrade", "release 1->2")], "1.37"))
    assert not (tmp_path / "objects").exists()


def test_report_md_shows_a_few_objects_briefly_and_objects_keeps_them_whole(tmp_path):
    # A real CRD's report was a megabyte: every object, each with managedFields' trees.
    result = CheckResult("upgrade", "release 1->2")
    result.fail("refused")
    result.objects = [(f"obj-{i} as read", _gateway("team-a", f"obj-{i}")) for i in range(9)]
    report.write(tmp_path, report.Report([result], "1.37"))
    md = (tmp_path / "report.md").read_text()
    assert md.count("```yaml") == report.MD_OBJECTS
    assert f"… {9 - report.MD_OBJECTS} more objects: see objects/" in md
    assert "fieldsV1" not in md and "manager: kubectl" in md  # who wrote it, not the tree
    whole = yaml.safe_load((tmp_path / "objects" / "Gateway_team-a_obj-8.upgrade.yaml").read_text())
    assert any("fieldsV1" in e for e in whole["metadata"]["managedFields"])
