"""What the release did not change is never its finding (``evidence.unchanged``,
``checks.debt``), and what the gate could not do is "not proven" (``evidence.refusal``):
decided from manifests and results alone, without a cluster."""

from __future__ import annotations

import argparse
import copy
from pathlib import Path

import pytest

from crdharness.errors import HarnessError
from crdharness.gate import cli
from crdharness.gate.checks import debt
from crdharness.gate.evidence import refusal, unchanged
from crdharness.gate.given import gate_file, manifests
from crdharness.gate.given.config import GateConfig, WebhookSpec
from crdharness.gate.given.manifests import Release
from crdharness.gate.results import CheckResult, Form, Found
from crdharness.gate.run import plan
from crdharness.gate.run.context import GateContext

NAME = "gauges.unchanged.example.com"
EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "gate" / "unchanged"


def crd(name: str = NAME, group: str = "unchanged.example.com", **spec) -> dict:
    schema = {
        "type": "object",
        "description": "A gauge.",
        "properties": {
            "spec": {
                "type": "object",
                "description": "What it measures.",
                "properties": {
                    "unit": {"type": "string", "maxLength": 8, "description": "The unit."},
                    "description": {"type": "string", "maxLength": 80},
                    "range": {"type": "object", "default": {"description": "all"}},
                    "limits": {"type": "array", "items": {"type": "integer", "title": "a limit"}},
                },
            }
        },
    }
    versions = [
        {
            "name": v,
            "served": True,
            "storage": v == "v1",
            "schema": {"openAPIV3Schema": copy.deepcopy(schema)},
            "additionalPrinterColumns": [
                {"name": "Unit", "type": "string", "jsonPath": ".spec.unit", "description": "u"}
            ],
        }
        for v in ("v1", "v2")
    ]
    manifest = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": name, "annotations": {}, "labels": {}},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": name.split(".")[0], "kind": "Gauge"},
            "versions": versions,
            **spec,
        },
    }
    return manifest


def node(manifest: dict, *path: str, version: int = 0) -> dict:
    found = manifest["spec"]["versions"][version]["schema"]["openAPIV3Schema"]
    for key in path:
        found = found["properties"][key]
    return found


def history(old: dict | list[dict], new: dict | list[dict], webhook=None) -> list[Release]:
    olds, news = (x if isinstance(x, list) else [x] for x in (old, new))
    return [
        Release(0, "r1", {m["metadata"]["name"]: m for m in olds}, webhook),
        Release(1, "r2", {m["metadata"]["name"]: m for m in news}),
    ]


def judged(old: dict, new: dict, top=None, own=None) -> unchanged.Judgement:
    previous, candidate = history(old, new, own)
    return unchanged.judge(previous, candidate, NAME, top)


# -- the unchanged-CRD rule -----------------------------------------------------------------


def test_an_identical_crd_is_unchanged():
    found = judged(crd(), crd())
    assert found == unchanged.Judgement(
        True, "unchanged: identical (since release 1; strategy None)"
    )


def test_descriptions_titles_and_column_descriptions_only_leave_it_unchanged():
    new = crd()
    node(new, "spec", "unit")["description"] = "The unit it reads in, reworded."
    node(new)["description"] = "Another gauge."
    node(new, "spec", "limits")["items"]["title"] = "another title"
    node(new, "spec")["example"] = {"unit": "kPa"}
    new["spec"]["versions"][1]["additionalPrinterColumns"][0]["description"] = "the unit"
    found = judged(crd(), new)
    assert found.unchanged and found.why.startswith("unchanged: documentation only"), found


def test_the_version_stamps_in_annotations_and_labels_leave_it_unchanged():
    old, new = crd(), crd()
    old["metadata"]["annotations"]["controller-gen.kubebuilder.io/version"] = "v0.15.0"
    new["metadata"]["annotations"]["controller-gen.kubebuilder.io/version"] = "v0.16.4"
    new["metadata"]["labels"] |= {"helm.sh/chart": "gauges-1.2.3", "app.kubernetes.io/version": "2"}
    new["metadata"]["resourceVersion"] = "42"  # what a server wrote: not the release's
    assert judged(old, new).unchanged


def test_a_projects_own_release_stamp_leaves_it_unchanged_and_any_other_value_is_a_change():
    # gateway-api v1.2.0 -> v1.2.1: only `gateway.networking.k8s.io/bundle-version` differs.
    key = "gateway.networking.k8s.io/bundle-version"
    old, new = crd(), crd()
    old["metadata"]["annotations"][key] = "v1.2.0"
    new["metadata"]["annotations"][key] = "v1.2.1"
    new["metadata"]["labels"]["example.com/version"] = "2.0.0-rc.1"
    assert judged(old, new).unchanged
    for value in ("gold", "latest", "v1"):  # not a release number: a value like any other
        new["metadata"]["annotations"][key] = value
        assert not judged(old, new).unchanged, value
    new["metadata"]["annotations"][key] = "v1.2.1"
    new["metadata"]["annotations"]["example.com/versions"] = "v1.2.1"  # not a version key
    assert not judged(old, new).unchanged


def test_any_other_annotation_or_label_is_a_change():
    new = crd()
    new["metadata"]["annotations"]["api-approved.kubernetes.io"] = "https://example.com/pr/1"
    assert not judged(crd(), new).unchanged
    new = crd()
    new["metadata"]["labels"]["tier"] = "gold"
    assert not judged(crd(), new).unchanged


@pytest.mark.parametrize(
    "change",
    [
        # a field named "description" is data, not documentation
        lambda m: node(m, "spec", "description").update(maxLength=40),
        # a default holding a key named "description" is a value
        lambda m: node(m, "spec", "range").update(default={"description": "none"}),
        lambda m: node(m, "spec", "unit").update(maxLength=4),
        lambda m: node(m, "spec", "unit", version=1).update(enum=["kPa"]),
        lambda m: node(m, "spec")["properties"].pop("limits"),
        lambda m: m["spec"]["versions"][1].update(deprecated=True),
        lambda m: m["spec"]["versions"][0]["additionalPrinterColumns"][0].update(priority=1),
        # the same meaning spelt otherwise is still a change here: the diff decides it
        lambda m: m["spec"].update(preserveUnknownFields=False),
        lambda m: m["spec"]["names"].update(shortNames=["gg"]),
    ],
    ids=[
        "field-named-description",
        "default-value",
        "bound",
        "enum-at-one-version",
        "field-removed",
        "deprecated",
        "printer-column",
        "spelt-out-false",
        "short-names",
    ],
)
def test_a_changed_schema_or_spec_is_not_unchanged(change):
    new = crd()
    change(new)
    found = judged(crd(), new)
    assert not found.unchanged and found.why == "changed since release 1", found


def test_a_new_crd_is_not_unchanged():
    previous, candidate = history(crd("others.unchanged.example.com"), crd())
    assert not unchanged.judge(previous, candidate, NAME, None).unchanged


HOOK = WebhookSpec(command=["{binary}", "--port={port}"], convert=[NAME])
WEBHOOK = {"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"]}}


def test_behind_a_webhook_the_release_before_must_name_the_same_one():
    old, new = crd(conversion=WEBHOOK), crd(conversion=WEBHOOK)
    # Release 1 names no webhook of its own: it runs the candidate's, which may have changed.
    found = judged(old, new, top=HOOK)
    assert not found.unchanged and "names none of its own" in found.why
    # It names one, and it is another: changed.
    other = WebhookSpec(command=["{binary}", "--port={port}", "--v1-compat"], convert=[NAME])
    found = judged(old, new, top=HOOK, own=other)
    assert not found.unchanged and "webhook is not the candidate's" in found.why
    # The same spec (built from the same directory, run the same way): unchanged.
    found = judged(old, new, top=HOOK, own=copy.deepcopy(HOOK))
    assert found.unchanged and "the same webhook under both" in found.why


def test_a_webhook_the_stanza_leaves_to_convert_counts_as_a_webhook():
    # No conversion stanza in the manifests: the webhook's `convert` adds it at deploy time.
    found = judged(crd(), crd(), top=HOOK)
    assert not found.unchanged and "names none of its own" in found.why
    assert judged(crd(), crd(), top=WebhookSpec(command=["x"])).unchanged  # converts nothing


def test_the_unchanged_crds_of_a_release_and_whether_their_group_changed():
    other = "dials.unchanged.example.com"
    elsewhere = "meters.elsewhere.example.com"
    changed_dial = crd(other, conversion=WEBHOOK)
    node(changed_dial, "spec", "unit").update(maxLength=2)
    old = [crd(conversion=WEBHOOK), crd(other, conversion=WEBHOOK)]
    old.append(crd(elsewhere, "elsewhere.example.com", conversion=WEBHOOK))
    new = [crd(conversion=WEBHOOK), changed_dial]
    new.append(crd(elsewhere, "elsewhere.example.com", conversion=WEBHOOK))
    releases = history(old, new, webhook=HOOK)
    found = unchanged.crds(releases, HOOK)
    assert set(found) == {NAME, elsewhere}
    assert unchanged.group_changed(releases, found, NAME, HOOK)  # the dial of its group changed
    assert not unchanged.group_changed(releases, found, elsewhere, HOOK)
    # A CRD of its group dropped: a change too.
    dropped = history([crd(conversion=WEBHOOK), crd(other)], [crd(conversion=WEBHOOK)], HOOK)
    assert unchanged.group_changed(dropped, unchanged.crds(dropped, HOOK), NAME, HOOK)
    assert unchanged.crds(history(crd(), crd())[1:], None) == {}  # no release before it


def test_under_strategy_none_a_changed_neighbour_leaves_an_unchanged_crd_alone():
    # Nothing is shared between two CRDs under strategy None: the API server stores and
    # serves each on its own, so the unchanged one's old objects need not be upgraded.
    other = "dials.unchanged.example.com"
    changed_dial = crd(other)
    node(changed_dial, "spec", "unit").update(maxLength=2)
    releases = history([crd(), crd(other)], [crd(), changed_dial])
    found = unchanged.crds(releases, None)
    assert set(found) == {NAME}
    assert not unchanged.group_changed(releases, found, NAME, None)


def test_which_releases_write_objects_of_an_unchanged_crd():
    """``writes_for``: the candidate never; release N only behind a webhook whose group
    changed (the witness of what the group shares), never under strategy None."""
    other = "dials.unchanged.example.com"
    for conversion, hook, witnessed in ((WEBHOOK, HOOK, True), (None, None, False)):
        extra = {"conversion": conversion} if conversion else {}
        changed_dial = crd(other, **extra)
        node(changed_dial, "spec", "unit").update(maxLength=2)
        releases = history([crd(**extra), crd(other, **extra)], [crd(**extra), changed_dial], hook)
        config = GateConfig(Path("gate.yaml"), [[Path("r1")], [Path("r2")]], webhook=hook)
        ctx = GateContext(None, config, releases, {}, lambda line: None)  # type: ignore[arg-type]
        ctx.unchanged = unchanged.crds(releases, hook)
        assert NAME in ctx.unchanged
        assert not ctx.writes_for(releases[1], NAME)
        assert ctx.writes_for(releases[0], NAME) is witnessed
        assert ctx.writes_for(releases[0], other) and ctx.writes_for(releases[1], other)


# -- listed, not judged again, unless full ----------------------------------------------------


def planned(releases: list[Release], full: bool) -> list[str]:
    config = GateConfig(Path("gate.yaml"), [[Path("r1")], [Path("r2")]], full=full)
    found = plan.plan(config, releases, (), unchanged.crds(releases, None))
    return [f"{c.check}[{c.subject}]" for c in found]


def test_an_unchanged_crd_is_one_row_and_none_of_its_own_checks_unless_full():
    releases = history(crd(), crd())
    listed = planned(releases, full=False)
    assert f"unchanged[{NAME}]" in listed
    assert not [c for c in listed if c.startswith(("round-trip", "convertibility", "schemas-vs"))]
    assert "upgrade[release 1->2]" in listed and "install[release 2]" in listed
    full = planned(releases, full=True)
    assert f"unchanged[{NAME}]" in full
    assert f"round-trip[{NAME} v1->v2]" in full and f"schemas-vs-strategy[{NAME}]" in full


def test_full_is_a_gate_file_key_and_a_command_line_flag(tmp_path):
    (tmp_path / "r.yaml").write_text((EXAMPLE / "release-1.yaml").read_text())
    gate = tmp_path / "gate.yaml"
    gate.write_text("crds: [r.yaml, r.yaml]\nfull: true\n")
    assert gate_file.load(str(gate)).full is True
    gate.write_text("crds: [r.yaml, r.yaml]\nfull: everything\n")
    with pytest.raises(HarnessError, match="full"):
        gate_file.load(str(gate))
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    assert parser.parse_args([str(gate), "--full"]).full is True
    assert parser.parse_args([str(gate)]).full is False


def test_the_examples_descriptions_only_checkup_is_unchanged():
    config = gate_file.load(str(EXAMPLE / "gate.yaml"))
    releases = manifests.load_history(config.crds, config.root)
    assert unchanged.crds(releases, config.webhook) == {
        "checkups.unchanged.gate.example.com": (
            "unchanged: documentation only (since release 1; strategy None)"
        )
    }


# -- what it owes is the earlier release's by construction -----------------------------------

PAIR = f"{NAME} v1->v2"


def refused_again(path: str) -> CheckResult:
    """A convertibility failure, as ``round_trips`` records it: read at v2, refused again."""
    result = CheckResult("convertibility", PAIR)
    result.counts = {"created": 30}
    evidence = f"read at v2, it cannot be created again as read: {path}: Invalid value: -96"
    found = Found(Form(frozenset({path})), evidence, [evidence], [("o", {})])
    return result.fail(evidence, *found.details, found=[found])


def test_a_failure_the_earlier_release_did_not_hold_is_still_its_debt_when_unchanged():
    path = "spec.livenessProbe.initialDelaySeconds"
    why = {NAME: "unchanged: identical (since release 1; strategy None)"}
    # Release 1's round trips held no such object: its forms are empty for that pair.
    previous = {f"convertibility:{PAIR}": []}
    changed = refused_again(path)
    assert debt.settle([changed], previous, 1, min_objects=10) == []
    assert changed.passed is False  # changed CRD: a finding, as before
    result = refused_again(path)
    owed = debt.settle([result], previous, 1, min_objects=10, unchanged=why)
    assert [(d.check, sorted(d.form.paths)) for d in owed] == [("convertibility", [path])]
    assert result.passed is True
    assert result.evidence.startswith(
        "release 1's debt by construction (unchanged: identical (since release 1; strategy "
        f"None)), not a finding: {path}"
    )
    # Release 1 was not run through the pair at all: the same, by construction.
    result = refused_again(path)
    assert debt.settle([result], {}, 1, min_objects=10, unchanged=why)
    assert result.passed is True
    # `debt: fail` fails it as before, still listed.
    result = refused_again(path)
    owed = debt.settle([result], {}, 1, fail_debt=True, min_objects=10, unchanged=why)
    assert owed and owed[0].fails and result.passed is False


# -- what the gate could not do is not proven -------------------------------------------------


def test_a_refusal_is_known_by_its_cause_not_by_the_object_it_names():
    a = (
        'Sensor.unchanged.gate.example.com "rt-v1-v2-7" is invalid: spec: Invalid value: '
        '"object": the token must be both a and b'
    )
    b = a.replace("rt-v1-v2-7", "cov-3")
    assert refusal.cause(a) == refusal.cause(b)
    assert refusal.cause(a) == 'spec: Invalid value: "object": the token must be both a and b'
    said = refusal.summary({refusal.cause(a): 12, "spec.token: Too long": 3}, 15, 15)
    assert said == (
        '15 of 15 objects refused (100 %), by: 12x spec: Invalid value: "object": the token '
        "must be both a and b; 3x spec.token: Too long"
    )
    assert refusal.summary({}, 0, 0) == "0 of 0 objects refused (0 %)"


def test_nothing_carried_across_a_kubernetes_upgrade_is_not_proven():
    from crdharness.binaries import versions
    from crdharness.gate.phases import kubernetes_upgrade

    result = CheckResult("kubernetes-upgrade", "1.36->1.37")
    older, newer = versions.resolve("1.36"), versions.resolve("1.37")
    kubernetes_upgrade.judge(result, {}, {}, {}, {}, older, newer)
    assert result.passed is None
    assert result.evidence.startswith("not proven: no object of the candidate's CRDs to read")


class Webhook:
    """A webhook whose recording proxy saw no review."""

    def __init__(self):
        self.proxy = argparse.Namespace(exchanges=[])


def conduct_of(releases: list[Release], listed: dict[str, str]) -> CheckResult:
    from crdharness.gate.checks import conduct

    config = GateConfig(Path("gate.yaml"), [], webhook=HOOK)
    ctx = GateContext(None, config, releases, {}, lambda line: None, Webhook())
    ctx.unchanged = listed
    conduct.run(ctx)
    return ctx.result("webhook-conduct", "webhook")


def test_a_webhook_that_saw_no_review_is_not_proven_unless_nothing_judged_converts():
    old, new = crd(conversion=WEBHOOK), crd(conversion=WEBHOOK)
    releases = history(old, new, copy.deepcopy(HOOK))
    seen = conduct_of(releases, {})
    assert seen.passed is None and seen.evidence.startswith("not proven: the webhook answered no")
    why = unchanged.crds(releases, HOOK)
    assert set(why) == {NAME}
    listed = conduct_of(releases, why)  # the one CRD behind it is listed only
    assert listed.passed is True and listed.evidence.startswith("no review: no CRD judged")
