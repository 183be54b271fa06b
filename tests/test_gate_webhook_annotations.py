"""The webhook's own annotations (issue 43): keys it writes into objects it converts are
learned from the reviews the gate recorded, objects at the old version carrying them are
round-tripped, and a user's annotation of such a key lost or changed is named; an annotation
the webhook adds and leaves is listed apart, never a finding."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from crdharness.gate import diff
from crdharness.gate.checks import annotation_objects as ao
from crdharness.gate.checks import round_trips as round_trips_module
from crdharness.gate.evidence import objects
from crdharness.scenarios import crds
from tests.gate_cli import gate_crdconvert, two_version_crd

KEY = "example.com/cordoned"


def review(to: str, sent: dict, converted: dict) -> SimpleNamespace:
    """One recorded exchange, as the proxy keeps it."""
    return SimpleNamespace(
        request={"request": {"desiredAPIVersion": f"g.example.com/{to}", "objects": [sent]}},
        answer={"response": {"convertedObjects": [converted]}},
    )


def obj(annotations: dict | None = None, **spec) -> dict:
    metadata = {"name": "x", **({"annotations": annotations} if annotations else {})}
    return {"apiVersion": "g.example.com/v1", "kind": "Box", "metadata": metadata, "spec": spec}


def test_the_keys_the_webhook_adds_are_learned_with_the_objects_it_answered():
    exchanges = [
        review(
            "v1", obj({"gate.example.com/a": "1"}), obj({"gate.example.com/a": "1", KEY: "true"})
        ),
        review("v1", obj(), obj({KEY: "true"})),  # the same value again: not kept twice
        review("v1", obj({KEY: "false"}), obj({KEY: "true"})),  # the user's key: not added
        review("v2", obj(), obj({"other.example.com/up": "x"})),  # to another version
        review("v1", obj(), obj({ao.IGNORED[0]: "v2"})),  # the gate's own write
    ]
    found = ao.written(exchanges, "g.example.com", "Box", "v1")
    assert list(found) == [KEY]
    assert len(found[KEY]) == 1


def test_a_flag_like_value_is_also_tried_flipped_on_the_same_object():
    found = {KEY: [obj({KEY: "true", "gate.example.com/a": "1"}, size=3)]}
    made = ao.bodies(found)
    assert [body[objects.METADATA]["annotations"][KEY] for _, body in made] == [
        "true",
        "false",
        "yes",
    ]
    assert all(body["spec"] == {"size": 3} for _, body in made)
    assert "(as a user sets it)" in made[1][0]
    assert "(a value it never writes, as a user may set it)" in made[2][0]
    blob = {KEY: [obj({KEY: '{"spec": {"x": 1}}'})]}
    assert len(ao.bodies(blob)) == 1  # no other value of a value that is no flag
    # One object carrying two keys goes once; keys holding users' names are capped.
    both = obj({KEY: "{}", "example.com/data": "{}"})
    assert len(ao.bodies({KEY: [both], "example.com/data": [both]})) == 1
    many = {f"example.com/owner-{i}": [obj({f"example.com/owner-{i}": "x"})] for i in range(40)}
    assert len(ao.bodies(many)) == ao.MAX_BODIES


def test_every_flag_is_tried_flipped_and_as_yes_before_any_key_gets_a_second_object():
    # Like capsule's v1alpha1 Tenant: one answer carries eight flag-like keys, a second
    # answer the other value of each; all variants make 34 bodies, over the cap. Each key's
    # own value, flip and "yes" go first; the cut leaves out second objects, and says so.
    keys = [f"example.com/flag-{i}" for i in range(8)]
    first = obj(dict.fromkeys(keys, "true"))
    second = obj(dict.fromkeys(keys, "false"))
    found = {key: [first, second] for key in keys}
    made = ao.bodies(found)
    assert len(made) == ao.MAX_BODIES
    for key in keys:
        values = {body[objects.METADATA]["annotations"][key] for _, body in made}
        assert {"true", "false", "yes"} <= values, key
        labels = [label for label, _ in made]
        assert f"{ao._label(key, 'false')} ({ao.USER})" in labels, key
        assert f"{ao._label(key, 'yes')} ({ao.NEVER_WRITTEN})" in labels, key
    cut = ao.left_out(found)
    assert len(cut) == 34 - ao.MAX_BODIES
    assert not ao.left_out({keys[0]: [first]})


def test_an_annotation_the_user_wrote_is_data_and_one_the_webhook_added_is_its_own():
    sent = obj({"gate.example.com/a": "1", KEY: "false"})
    found = diff.differences(
        diff.comparable(obj({"gate.example.com/a": "1", KEY: "false"})),
        diff.comparable(obj({"gate.example.com/a": "1", "webhook.example.com/seen": "v2"})),
    )
    rest, own = ao.own_annotations(found, sent)
    assert [(d.path, d.change) for d in rest] == [(f"metadata.annotations.{KEY}", "lost")]
    assert [(d.path, d.change) for d in own] == [
        ("metadata.annotations.webhook.example.com/seen", "added")
    ]
    # Written without any: the whole map that appears is the webhook's, key by key.
    whole = diff.differences(diff.comparable(obj()), diff.comparable(obj({"w.example.com/k": "1"})))
    rest, own = ao.own_annotations(whole, obj())
    assert not rest and [d.path for d in own] == ["metadata.annotations.w.example.com/k"]
    assert "removed by the webhook" in ao.notes([diff.Difference("p", "lost", "1")], "v1", "v2")[0]


SIZE = {"size": {"type": "integer"}}
V2_SPEC = {**SIZE, "cordoned": {"type": "boolean"}}


def crd(group: str) -> dict:
    """``v1`` (stored) without ``spec.cordoned``, ``v2`` with it: the webhook keeps it in an
    annotation at v1."""

    def schema(properties: dict) -> dict:
        spec = {"type": "object", "properties": properties}
        return {"type": "object", "properties": {"spec": spec}}

    versions = [crds.version("v1", schema(SIZE)), crds.version("v2", schema(V2_SPEC), False)]
    manifest = crds.manifest(group, "Gadget", versions)
    service = {"namespace": "default", "name": "gadget-conversion", "path": "/convert"}
    manifest["spec"]["conversion"] = {
        "strategy": "Webhook",
        "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {"service": service}},
    }
    return manifest


def gated_with_stash(tmp_path, fault: str, group: str):
    """The gate on a CRD of ``group`` behind crdconvert keeping v2's ``spec.cordoned`` in
    the annotation KEY at v1, by ``fault`` (stash-field, stash-flag)."""
    stash = f"--fault {fault}=v1:spec.cordoned={KEY}"
    return gate_crdconvert(tmp_path, crd(group), stash, generate=10)


def round_trips(report: dict) -> list[dict]:
    return [c for c in report["checks"] if c["check"] == "round-trip"]


@pytest.mark.e2e
@pytest.mark.slow
def test_a_webhook_keeping_a_field_in_its_annotation_whole_passes(tmp_path):
    done, report = gated_with_stash(tmp_path, "stash-field", "stashwhole.example.com")
    assert done.returncode == 0, done.stdout[-3000:]
    # No finding on the objects carrying it; what v1 cannot hold is said as held there only
    # in the webhook's annotation (``seen_at_b``), not a finding.
    assert {p["status"] for p in round_trips(report)} == {"pass"}, round_trips(report)
    unseen = [n for p in round_trips(report) for n in p.get("unseen_at_b", [])]
    assert unseen and all("v1 has no field spec.cordoned" in n for n in unseen), unseen
    carrying = [p["counts"].get(round_trips_module.CARRYING, 0) for p in round_trips(report)]
    assert sum(carrying) >= 3, carrying  # "true", "false" and "yes" at v1 went round


@pytest.mark.e2e
@pytest.mark.slow
def test_a_webhook_losing_a_users_value_of_its_annotation_is_named(tmp_path):
    done, report = gated_with_stash(tmp_path, "stash-flag", "stashflag.example.com")
    assert done.returncode == 1, done.stdout[-3000:]
    failing = [p for p in round_trips(report) if p["status"] == "FAIL"]
    assert failing, round_trips(report)
    said = json.dumps(failing)
    assert f"metadata.annotations.{KEY}" in said, said
    assert "(as a user sets it)" in said, said
    # The object as answered, with the other flag, and with "yes" (no flag Go parses) went.
    carrying = [p["counts"].get(round_trips_module.CARRYING, 0) for p in round_trips(report)]
    assert max(carrying) >= 3, carrying


@pytest.mark.e2e
@pytest.mark.slow
def test_an_annotation_the_webhook_adds_is_listed_apart_and_a_users_value_it_overwrites_named(
    tmp_path,
):
    """crdconvert's ``mutate-annotations`` sets ``crdconvert/converted: "true"`` on every
    object it converts: on objects written without it, its own bookkeeping (listed apart); on
    an object whose user set it to ``"false"``, a user's annotation changed (the only finding,
    in both directions; never a re-spelling, though it reads the same at the other version)."""
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": SIZE}}}
    manifest = two_version_crd("ownannotation.example.com", "Widget", schema)
    done, report = gate_crdconvert(tmp_path, manifest, "--fault mutate-annotations", generate=10)
    assert done.returncode == 1, done.stdout[-3000:]
    pairs = round_trips(report)
    own = [n for p in pairs for n in p.get("own_annotations", [])]
    assert any("crdconvert/converted: added by the webhook" in n for n in own), pairs
    assert [p["status"] for p in pairs] == ["FAIL", "FAIL"], pairs
    for p in pairs:
        assert "metadata.annotations.crdconvert/converted" in p["evidence"], p
        assert '"false" -> "true"' in " ".join(p["details"]), p


@pytest.mark.e2e
@pytest.mark.slow
def test_a_loss_the_release_befores_own_webhook_makes_too_is_its_debt(tmp_path):
    """Release 1 runs its own webhook with the same careless flag: the candidate's loss of a
    user's ``"false"`` is release 1's debt (its round trips carry the keys its own webhook
    wrote), so the candidate passes."""
    import yaml

    from tests.gate_cli import report_of, run_gate

    (tmp_path / "crd.yaml").write_text(yaml.safe_dump(crd("stashdebt.example.com")))
    candidate = crd("stashdebt.example.com")  # a field more at both: judged, not "unchanged"
    for entry in candidate["spec"]["versions"]:
        spec = entry["schema"]["openAPIV3Schema"]["properties"]["spec"]
        spec["properties"]["note"] = {"type": "string"}
    (tmp_path / "candidate.yaml").write_text(yaml.safe_dump(candidate))
    command = (
        "{python} -m crdconvert --host 127.0.0.1 --port {port} --tls-cert {tls_cert} "
        "--tls-key {tls_key} --path /convert --identity Gadget "
        f"--fault stash-flag=v1:spec.cordoned={KEY}"
    )
    webhook = {"command": command, "path": "/convert"}
    gate = {
        "crds": [{"path": "crd.yaml", "webhook": webhook}, "candidate.yaml"],
        "webhook": webhook,
    }
    (tmp_path / "gate.yaml").write_text(yaml.safe_dump({**gate, "generate": 10}))
    done = run_gate(tmp_path / "gate.yaml", tmp_path / "gate", cwd=tmp_path)
    report = report_of(done, tmp_path / "gate" / "report.json")
    assert done.returncode == 0, done.stdout[-3000:]
    owed = [d for d in report["debt"] if d["check"] == "round-trip"]
    assert any(f"metadata.annotations.{KEY}" in d["paths"] for d in owed), report["debt"]
