"""Coverage objects (which reach every declared path, at any depth) hold values a lossy
encoding at another version changes (issue 43): a list item or map value holding the
characters a webhook may join items with and split them back on, and a duration with a
fraction of a second beside the whole-second one. A webhook keeping a list joined with ","
in an annotation (capsule's forbidden label lists) turns one item into two: a loss, never a
re-spelling; one keeping a duration as whole seconds (api-gateway's CORS ``maxAge``) drops
the fraction: a loss, while ``1h30m`` read back as Go's ``1h30m0s`` stays the same value."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crdharness.gate.evidence import coverage, coverage_objects
from tests.gate_cli import report_of, run_gate


def obj(properties: dict, **more) -> dict:
    return {"type": "object", "properties": properties, **more}


def deep(path: str, leaf: dict) -> dict:
    """A body schema holding ``leaf`` at ``spec.a.b...`` (below the random draws' depth)."""
    node = leaf
    for key in reversed(path.split(".")):
        node = obj({key: node})
    return node


STRINGS = {"type": "array", "items": {"type": "string"}}


def test_list_items_and_map_values_hold_separators_where_the_schema_allows_them():
    schema = obj(
        {
            "spec": obj(
                {
                    "tags": STRINGS,
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "name": {"type": "string"},  # not in a list: one value, as before
                    "owners": {"type": "array", "items": obj({"name": {"type": "string"}})},
                    "short": {"type": "array", "items": {"type": "string", "maxLength": 12}},
                    "lower": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+$"}},
                    "kinds": {"type": "array", "items": {"type": "string", "enum": ["A", "B"]}},
                    "hosts": {"type": "array", "items": {"type": "string", "format": "hostname"}},
                }
            )
        }
    )
    values = {leaf.path: leaf.values for leaf in coverage.leaves(schema)}
    assert values["spec.tags[]"] == [coverage.TEXT, coverage.SEPARATED]
    assert values["spec.labels.*"] == [coverage.TEXT, coverage.SEPARATED]
    assert all(s in coverage.SEPARATED for s in ",;= ")
    assert values["spec.name"] == [coverage.TEXT]
    assert values["spec.owners[].name"] == [coverage.TEXT, coverage.SEPARATED]
    assert coverage.SEPARATED not in values["spec.short[]"]  # too long for maxLength
    assert coverage.SEPARATED not in values["spec.lower[]"]  # the pattern refuses it
    assert values["spec.kinds[]"] == ["A", "B"]
    assert values["spec.hosts[]"] == [coverage.FORMATS["hostname"]]
    # One object holds both items (a list takes several values): no object more.
    (body,) = coverage_objects.packed(obj({"spec": obj({"tags": STRINGS})}))
    assert body["spec"]["tags"] == [coverage.TEXT, coverage.SEPARATED]


def test_a_duration_is_held_with_a_fraction_of_a_second_too():
    schema = obj(
        {
            "spec": obj(
                {
                    "every": {"type": "string", "format": "duration"},
                    "timeout": {"type": "string", "pattern": r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$"},
                    "tiny": {"type": "string", "format": "duration", "maxLength": 4},
                }
            )
        }
    )
    values = {leaf.path: leaf.values for leaf in coverage.leaves(schema)}
    assert values["spec.every"] == [coverage.FORMATS["duration"], coverage.SUB_SECOND]
    assert values["spec.timeout"][1:] == [coverage.SUB_SECOND]
    assert coverage.SUB_SECOND not in values["spec.tiny"]
    bodies = coverage_objects.packed(schema)
    assert {b["spec"].get("every") for b in bodies} == {"1h30m", "1h30m0.5s"}


EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "gate" / "workspaces"
DENIED = "spec.options.forbidden.labels.denied"
SECONDS_AT = "spec.route.cors.policy.maxAge"


@pytest.fixture(scope="module")
def workspaces(tmp_path_factory) -> dict:
    """The example's run (one control plane for both tests): its report.json, exit 1."""
    where = tmp_path_factory.mktemp("workspaces")
    done = run_gate(EXAMPLE / "gate.yaml", where / "gate", cwd=where)
    report = report_of(done, where / "gate" / "report.json")
    assert done.returncode == 1, done.stdout[-3000:]
    return report


def pair(report: dict, a: str, b: str) -> dict:
    (found,) = [
        c for c in report["checks"] if c["check"] == "round-trip" and f"{a}->{b}" in c["subject"]
    ]
    return found


@pytest.mark.e2e
@pytest.mark.slow
def test_a_list_kept_joined_in_an_annotation_and_split_back_is_named_changed(workspaces):
    """v2 declares the list five levels down (random draws do not reach it), v1 does not:
    the webhook keeps it at v1 in one annotation joined with ",". The item holding a comma
    comes back from v1 as two: the pair fails naming the list, and it is no re-spelling
    (the object reads the same at v1 before and after, as for a real re-spelling)."""
    failing = pair(workspaces, "v2", "v1")
    assert failing["status"] == "FAIL", failing
    said = json.dumps(failing)
    assert DENIED in said, said
    assert "re-spelt" not in said, said
    assert f'{DENIED}[1]: \\"gate-value,b;c=d e\\" -> \\"gate-value\\"' in said, said
    # Objects carrying the webhook's annotation at v1 whose round trip failed: what v1 shows
    # of them was not probed (seen_at_b), and that is said.
    assert any("not probed on" in n for n in failing["unseen_at_b"]), failing


@pytest.mark.e2e
@pytest.mark.slow
def test_a_duration_kept_as_whole_seconds_loses_the_fraction_and_keeps_whole_ones(workspaces):
    """v1 holds a Go duration (``format: duration``) four levels down, v2 whole seconds (an
    integer): ``1h30m0.5s`` written at v1 comes back as ``1h30m0s`` (a loss, named),
    ``1h30m`` as ``1h30m0s`` (Go's spelling of the same duration: normalised, no finding)."""
    failing = pair(workspaces, "v1", "v2")
    assert failing["status"] == "FAIL", failing
    details = " ".join(failing["details"])
    assert f'{SECONDS_AT}: "1h30m0.5s" -> "1h30m0s"' in details, details
    assert '"1h30m" -> "1h30m0s"' not in details, details  # the same duration


@pytest.mark.e2e
@pytest.mark.slow
def test_what_a_client_of_v2_does_not_see_is_named_though_every_round_trip_is_exact(tmp_path):
    """The webhook keeps v1's whole ``spec.route`` in an annotation at v2, beside ``maxAge``
    as whole seconds, and v2's labels whole in an annotation at v1: every round trip comes
    back equal, yet ``1h30m0.5s`` reads ``5400`` at v2. Each path is named as held there
    only in the webhook's annotations, not a finding; the paths-that-differ row for the
    labels says so instead of "cleared". The one FAIL is the ``0s`` that v2 refuses."""
    done = run_gate(EXAMPLE / "gate-kept-copy.yaml", tmp_path / "gate", cwd=tmp_path)
    report = report_of(done, tmp_path / "gate" / "report.json")
    assert done.returncode == 1, done.stdout[-3000:]
    down, up = pair(report, "v1", "v2"), pair(report, "v2", "v1")
    assert down["status"] == up["status"] == "pass", (down, up)
    said = f'{SECONDS_AT}: "1h30m0.5s" -> "1h30m0s" (v2 shows 5400; both read the same at v2)'
    assert any(said in n for n in down["unseen_at_b"]), down
    assert any("spec.options: lost" in n and "v1 has no field" in n for n in up["unseen_at_b"])
    failed = [c for c in report["checks"] if c["status"] == "FAIL"]
    assert [(c["check"], c["subject"]) for c in failed] == [
        ("convertibility", "workspaces.gate.example.com v1->v2")
    ], failed
    assert "greater than or equal to 1" in failed[0]["evidence"], failed
    (labels,) = [
        row
        for row in report["version_pair_differences"]
        if row["version"] == "v2->v1" and row["path"] == "spec.options"
    ]
    assert labels["decision"] == "kept only in the webhook's annotations", labels
