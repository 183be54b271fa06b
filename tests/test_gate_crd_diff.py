"""The whole CRD diffed (``crd_diff``, ``version_diff``, ``schema_walk``, ``schema_rules``):
every difference between two releases' specs is a row or a counted documentation change;
computed from manifests alone, before any cluster."""

from __future__ import annotations

import copy
from collections import Counter
from pathlib import Path

import pytest

from crdharness.gate.evidence import changes
from crdharness.gate.given import gate_file, manifests
from crdharness.gate.given.manifests import Release

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "gate"
DOCUMENTATION = {"description", "example", "externalDocs", "title"}


def differences(old, new, path: str = "spec") -> list[str]:
    """Every JSON path at which ``new`` differs from ``old`` (versions matched by name),
    written independently of the diff under test."""
    if isinstance(old, dict) and isinstance(new, dict):
        found = []
        for key in sorted(set(old) | set(new)):
            if key not in old or key not in new:
                found.append(f"{path}.{key}")
            else:
                found += differences(old[key], new[key], f"{path}.{key}")
        return found
    if path.endswith("spec.versions") and isinstance(old, list) and isinstance(new, list):
        by_name = {v["name"]: v for v in old}, {v["name"]: v for v in new}
        found = []
        for name in sorted(set(by_name[0]) | set(by_name[1])):
            here = f"{path}[{name}]"
            if name not in by_name[0] or name not in by_name[1]:
                found.append(here)
            else:
                found += differences(by_name[0][name], by_name[1][name], here)
        return found
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [
            d
            for i, (a, b) in enumerate(zip(old, new, strict=True))
            for d in differences(a, b, f"{path}[{i}]")
            for i, (a, b) in enumerate(zip(old, new, strict=True))
            for d in differences(a, b, f"{path}[{i}]")
        ]
    return [] if old == new else [path]


def documentation(path: str) -> bool:
    """A documentation key of a schema node (not a field of that name, under properties)."""
    parent, _, key = path.rpartition(".")
    return key in DOCUMENTATION and ".schema." in path and not parent.endswith(".properties")


def accounted(found: list[changes.Change], docs: Counter, old: dict, new: dict) -> None:
    keys = [k for c in found for k in c.keys]
    paths = differences(old, new)
    doc_paths = [p for p in paths if documentation(p) and not _under_any(p, keys)]
    assert sum(docs.values()) == len(doc_paths), (docs, doc_paths)
    missed = [p for p in paths if p not in doc_paths and not _under_any(p, keys)]
    assert missed == [], missed


def _under_any(path: str, keys: list[str]) -> bool:
    return any(path == k or path.startswith((f"{k}.", f"{k}[")) for k in keys)


def _histories():
    for gate in sorted(EXAMPLES.glob("*/*.yaml")):
        try:
            config = gate_file.load(gate)
        except Exception:  # a gate file of another kind: not a history
            continue
        releases = manifests.load_history(config.crds, gate.parent)
        for i in range(1, len(releases)):
            for name in releases[i].crds:
                if name in releases[i - 1].crds:
                    yield pytest.param(
                        releases[i - 1],
                        releases[i],
                        name,
                        id=f"{gate.parent.name}/{gate.name}:{i}:{name}",
                    )


@pytest.mark.parametrize(("previous", "release", "name"), list(_histories()))
def test_every_difference_of_every_example_is_a_row_or_counted(previous, release, name):
    docs: Counter = Counter()
    found = changes.between(previous, release, name, docs)
    accounted(found, docs, previous.crds[name]["spec"], release.crds[name]["spec"])
    assert all(c.kind != "unclassified" for c in found), [c.detail for c in found]


ROOT = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "description": "the spec",
            "properties": {
                "replicas": {"type": "integer", "description": "how many"},
                "colour": {"type": "string"},
                "title": {"type": "string", "title": "a field called title"},
            },
        },
        "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
    },
}


def crd(schema: dict, **version) -> dict:
    entry = {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}
    return {
        "metadata": {"name": "gizmos.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "gizmos", "kind": "Gizmo", "shortNames": ["gz"]},
            "versions": [{**entry, **version}],
        },
    }


def diffed(old: dict, new: dict) -> tuple[list[changes.Change], Counter]:
    docs: Counter = Counter()
    found = changes.between(
        Release(0, "r1", {"gizmos.example.com": old}),
        Release(1, "r2", {"gizmos.example.com": new}),
        "gizmos.example.com",
        docs,
    )
    accounted(found, docs, old["spec"], new["spec"])
    return found, docs


def kinds(found) -> dict[tuple[str, str], str]:
    return {(c.path, c.kind): c.decision for c in found}


def test_a_rule_at_the_schema_root_is_a_row():
    new = copy.deepcopy(ROOT)
    new["x-kubernetes-validations"] = [{"rule": "self.spec.replicas <= 5", "message": "few"}]
    found, _ = diffed(crd(ROOT), crd(new))
    assert kinds(found) == {("", "rule added"): ""}
    assert not changes.on_the_crd(found[0])  # objects are built for it


def test_rule_messages_reasons_and_field_paths_are_rows():
    old = copy.deepcopy(ROOT)
    old["properties"]["spec"]["x-kubernetes-validations"] = [
        {"rule": "self.replicas >= 0", "message": "a"}
    ]
    new = copy.deepcopy(old)
    new["properties"]["spec"]["x-kubernetes-validations"] = [
        {"rule": "self.replicas >= 0", "message": "b", "reason": "FieldValueForbidden"}
    ]
    (row,), _ = diffed(crd(old), crd(new))
    assert row.kind == "rule details changed" and "message" in row.detail and "reason" in row.detail


def test_descriptions_are_ignored_and_counted_a_field_named_title_is_not():
    new = copy.deepcopy(ROOT)
    new["properties"]["spec"]["description"] = "the desired state"
    new["properties"]["spec"]["properties"]["replicas"]["description"] = "how many pods"
    new["properties"]["spec"]["properties"]["title"]["title"] = "renamed"
    found, docs = diffed(crd(ROOT), crd(new))
    assert found == [] and docs == Counter(description=2, title=1)


def test_subresources_selectable_fields_and_printer_columns_are_rows():
    status = {
        "status": {},
        "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"},
    }
    old = crd(
        ROOT,
        subresources=status,
        selectableFields=[{"jsonPath": ".spec.colour"}],
        additionalPrinterColumns=[{"name": "Colour", "type": "string", "jsonPath": ".spec.colour"}],
    )
    new = crd(ROOT, subresources={"scale": {**status["scale"], "specReplicasPath": ".spec.size"}})
    found, _ = diffed(old, new)
    assert {c.kind: c.decision for c in found} == {
        "status subresource removed": "",
        "scale subresource changed": "",
        "selectable field removed": "",
        "printer columns changed": "reported",
    }
    assert all(changes.on_the_crd(c) for c in found)
    found, _ = diffed(crd(ROOT), crd(ROOT, subresources={"status": {}}))
    assert [c.kind for c in found] == ["status subresource added"]


def test_names_conversion_served_and_deprecation_are_rows():
    old = crd(ROOT)
    new = copy.deepcopy(old)
    new["spec"]["names"].update(shortNames=[], categories=["all"], singular="gizmo")
    new["spec"]["versions"][0].update(deprecated=True, deprecationWarning="use v2")
    new["spec"]["conversion"] = {"strategy": "None"}
    found, _ = diffed(old, new)
    # singular "gizmo" and strategy None spelt out are the defaults: the same meaning
    assert {c.kind for c in found} == {
        "same meaning",
        "shortNames changed",
        "categories changed",
        "version deprecated",
        "deprecation warning changed",
    }
    new["spec"]["conversion"] = {
        "strategy": "Webhook",
        "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {"url": "https://x"}},
    }
    assert {c.path for c in found if c.kind == "same meaning"} == {""}
    assert all(c.decision == "reported" for c in found if c.kind == "same meaning")
    found, _ = diffed(old, new)
    (strategy,) = [c for c in found if c.kind == "conversion strategy changed"]
    assert "round trips run under the candidate's strategy" in strategy.evidence


def test_a_difference_no_rule_classifies_is_unclassified_not_proven():
    new = copy.deepcopy(ROOT)
    new["properties"]["spec"]["properties"]["colour"]["x-gate-made-up"] = True
    new["properties"]["spec"]["additionalProperties"] = False
    found, _ = diffed(crd(ROOT), crd(new))
    assert {(c.path, c.kind) for c in found} == {
        ("spec", "unclassified"),
        ("spec.colour", "unclassified"),
    }
    assert all(c.as_json()["decision"] == "not proven" for c in found)


def test_the_schema_of_a_version_nobody_served_is_reported():
    old = crd(ROOT, served=False)
    new = copy.deepcopy(old)
    new["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["required"] = [
        "colour"
    ]
    found, _ = diffed(old, new)
    assert kinds(found) == {("spec.colour", "required added"): "reported"}
