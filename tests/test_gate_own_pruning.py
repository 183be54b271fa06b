"""Issue 33, a loss the gate made itself: a body of version A sent at version B (with B's
apiVersion) has the fields B's schema does not declare pruned by the API server before any
conversion; that loss is the gate's own request's, never the webhook's finding."""

from pathlib import Path

from crdharness.gate.checks import object_round_trip, round_trip_steps
from crdharness.gate.checks.pair_record import PairRecord
from crdharness.gate.evidence import objects, pruning
from crdharness.gate.given.config import GateConfig
from crdharness.gate.given.manifests import Release
from crdharness.gate.results import CheckResult
from crdharness.gate.run.context import GateContext

NAME = "widgets.example.com"


def version(name: str, spec: dict, **root) -> dict:
    schema = {
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": spec}},
        **root,
    }
    return {"name": name, "served": True, "schema": {"openAPIV3Schema": schema}}


# v1 declares spec.legacy; v2 does not (its webhook keeps it in an annotation, say).
V1 = version("v1", {"size": {"type": "integer"}, "legacy": {"type": "string"}})
V2 = version("v2", {"size": {"type": "integer"}})


def test_a_field_only_a_declares_sent_at_b_and_read_back_without_it_is_no_finding():
    body = {"spec": {"size": 3, "legacy": "kept-by-v1-only"}}
    # The API server's answer to the create at v2: spec.legacy pruned before any conversion.
    created = {"apiVersion": "example.com/v2", "metadata": {"name": "w"}, "spec": {"size": 3}}
    lost, notes = round_trip_steps.lost_on_write(V2, "v2", body, {"name": "w"}, created)
    assert lost == []
    assert notes == [
        "spec.legacy: pruned by the gate's own request at v2 (not the webhook's): v2's "
        "schema does not declare it"
    ]


def test_a_field_b_declares_read_back_without_it_is_still_a_loss():
    body = {"spec": {"size": 3, "legacy": "x"}}
    created = {"metadata": {"name": "w"}, "spec": {"legacy": "x"}}
    lost, notes = round_trip_steps.lost_on_write(V1, "v1", body, {"name": "w"}, created)
    assert [(d.path, d.change) for d in lost] == [("spec.size", "lost")]
    assert notes == []


def test_what_a_schema_prunes():
    schema = version(
        "v1",
        {
            "known": {"type": "string"},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "open": {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
                "properties": {"strict": {"type": "object", "properties": {"a": {}}}},
            },
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "rules": {
                "type": "object",
                "additionalProperties": {"type": "object", "properties": {"on": {}}},
            },
            "items": {"type": "array", "items": {"type": "object", "properties": {"n": {}}}},
            "pod": {"type": "object", "x-kubernetes-embedded-resource": True},
            "empty": {"type": "object"},
        },
    )
    body = {
        "spec": {
            "known": "k",
            "gone": 1,
            "free": {"anything": {"deep": [1]}},
            "open": {"extra": 1, "strict": {"a": 1, "b": 2}},
            "labels": {"x.io/y": "v"},
            "rules": {"r.1": {"on": True, "off": False}},
            "items": [{"n": 1}, {"n": 2, "m": 3}],
            "pod": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}},
            "empty": {"x": 1},
        },
        "status": {"phase": "Ready"},
    }
    kept, paths = pruning.split(schema, body)
    assert paths == [
        "spec.gone",
        "spec.open.strict.b",
        "spec.rules.r.1.off",
        "spec.items[1].m",
        "spec.pod.spec",
        "spec.empty.x",
        "status",
    ]
    assert kept["spec"]["free"] == body["spec"]["free"]
    assert kept["spec"]["open"] == {"extra": 1, "strict": {"a": 1}}
    assert kept["spec"]["items"] == [{"n": 1}, {"n": 2}]
    assert kept["spec"]["pod"] == {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}
    assert body["spec"]["items"][1] == {"n": 2, "m": 3}  # the caller's body is untouched
    # A root that preserves unknown fields prunes nothing at the top; no schema says nothing.
    assert (
        pruning.pruned(
            version("v1", {}, **{"x-kubernetes-preserve-unknown-fields": True}), {"other": 1}
        )
        == []
    )
    assert pruning.pruned({"name": "v1"}, {"spec": {"x": 1}}) == []


def widget_crd() -> dict:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": NAME},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{**V1, "storage": True}, V2],
        },
    }


def test_a_body_found_at_another_version_is_sent_without_what_b_prunes(monkeypatch):
    crd = widget_crd()
    config = GateConfig(Path("gate.yaml"), crds=[], generate=0)
    ctx = GateContext(None, config, [Release(0, "r0", {NAME: crd})], {}, lambda line: None)
    sent = []

    def create(manifest, entry, at, name, namespace, body, refusals=None):
        sent.append(objects.manifest(manifest, at, name, namespace, body))
        return None  # refused: the round trip ends here

    monkeypatch.setattr(ctx, "create", create)
    seen = PairRecord()
    found_at_v1 = {"spec": {"size": 3, "legacy": "x"}, objects.METADATA: {"labels": {"a": "b"}}}
    assert object_round_trip.run(ctx, crd, V2, "v2", "v1", found_at_v1, seen) is None
    assert sent[0]["spec"] == {"size": 3}
    assert sent[0]["metadata"]["labels"] == {"a": "b"}
    assert [note.split(":")[0] for note in seen.pruned] == ["spec.legacy"]
    assert "not the webhook's" in seen.pruned[0]


def test_pruned_notes_reach_the_report_and_never_fail_the_check(tmp_path):
    from crdharness.gate.reporting import report

    result = CheckResult("round-trip", f"{NAME} v2->v1", evidence="30 objects equal")
    part = result.part()
    part.pruned.append(pruning.note("spec.legacy", "v2"))
    result.add(part)
    assert result.passed is True
    assert result.as_json()["pruned"] == [pruning.note("spec.legacy", "v2")]
    report.write(tmp_path, report.Report([result], "1.33"))
    text = (tmp_path / "report.md").read_text()
    assert "Pruned by the gate's own request (not the webhook's; never findings):" in text
    assert f"- {pruning.note('spec.legacy', 'v2')}" in text


def test_an_expectation_file_is_sent_without_what_its_version_prunes(tmp_path, monkeypatch):
    from crdharness.gate.api import Answer
    from crdharness.gate.checks import expectations
    from crdharness.gate.given.config import Expectation

    crd = widget_crd()
    at_v2 = tmp_path / "v2.yaml"  # holds spec.legacy, which v2 does not declare
    at_v2.write_text("apiVersion: example.com/v2\nkind: Widget\nspec: {size: 3, legacy: x}\n")
    at_v1 = tmp_path / "v1.yaml"
    at_v1.write_text("apiVersion: example.com/v1\nkind: Widget\nspec: {size: 3, legacy: x}\n")
    config = GateConfig(Path("gate.yaml"), crds=[], expect=[Expectation(at_v2, at_v1)])
    ctx = GateContext(None, config, [Release(0, "r0", {NAME: crd})], {}, lambda line: None)
    stored: dict = {}
    sent = []

    def create(manifest, entry, at, name, namespace, body, refusals=None):
        sent.append(objects.intent(body))
        stored[name] = objects.manifest(manifest, at, name, namespace, body)
        return stored[name]

    def call(cluster, method, path, body=None):  # a webhook that carries every field
        name = path.rsplit("/", 1)[-1]
        return Answer(200, stored.get(name, {}), [], "")

    monkeypatch.setattr(ctx, "create", create)
    monkeypatch.setattr(expectations, "call", call)
    expectations.check(ctx)
    result = ctx.result("expected-conversion", "v2.yaml = v1.yaml")
    assert sent[0] == {"spec": {"size": 3}}  # written at v2: spec.legacy left out
    assert sent[1] == {"spec": {"size": 3, "legacy": "x"}}  # written at v1: all of it
    assert result.status == "not proven"
    assert result.pruned == [pruning.note("spec.legacy", "v2")]
    assert "spec.legacy" in result.evidence


def test_the_history_writes_a_sample_without_what_an_older_release_prunes(monkeypatch):
    from crdharness.gate.api import Answer
    from crdharness.gate.phases import history_writes

    crd = widget_crd()
    config = GateConfig(Path("gate.yaml"), crds=[], generate=0)
    older = Release(0, "r0", {NAME: crd})
    ctx = GateContext(None, config, [older], {}, lambda line: None)
    sent = []

    def create(manifest, entry, at, name, namespace, body, refusals=None):
        sent.append(objects.intent(body))
        return {"metadata": {"name": name}, **objects.intent(body)}

    monkeypatch.setattr(ctx, "create", create)
    monkeypatch.setattr(history_writes, "call", lambda *args, **kwargs: Answer(404, {}, [], ""))
    sample = objects.sample_body({"kind": "Widget", "spec": {"size": 1, "legacy": "new-in-v1"}})
    record = history_writes.write_one(ctx, older, NAME, V2, sample, "w", None)
    assert record is not None
    assert sent == [{"spec": {"size": 1}}]
    assert record.sent == {"spec": {"size": 1}}


def test_a_status_kept_is_judged_against_what_the_new_release_reads_not_the_old():
    from crdharness.gate.api import Answer
    from crdharness.gate.checks import crd_behaviour
    from crdharness.gate.evidence import crd_diff
    from crdharness.gate.evidence.changes import Change

    change = Change(NAME, 1, "v1", "", crd_diff.STATUS_ADDED, "status subresource added")
    # Release i read a status field release i+1's schema prunes on every read.
    base = {"metadata": {"name": "w"}, "status": {"phase": "Ready", "legacy": "x"}}
    probe = crd_behaviour.Probe(change, "/apis/example.com/v1/namespaces/n/widgets/w", base)
    read = {"metadata": {"name": "w"}, "status": {"phase": "Ready"}}
    answers = {"current": Answer(200, read, [], ""), "read": Answer(200, read, [], "")}
    finding, _ = crd_behaviour._judge(probe, answers, Release(1, "r1", {}))
    assert "a status sent through the main resource is now dropped" in finding


def test_the_upgrade_writes_send_only_what_was_read_at_the_same_version(monkeypatch):
    """A guard: every write again (update, annotated update, server-side apply, /status,
    re-create, status anew) sends a body the server answered at the version written at, so
    the version's schema has nothing left to prune."""
    from crdharness.gate import api
    from crdharness.gate.api import Answer
    from crdharness.gate.checks import upgrade_writes

    sent: list[tuple[str, str, dict]] = []

    def at(path: str) -> str:
        return path.split("/")[3]  # /apis/<group>/<version>/...

    def call(cluster, method, path, body=None):
        if body is not None:
            sent.append((method, path, body))
        version = at(path)
        obj = {
            "apiVersion": f"example.com/{version}",
            "kind": "Widget",
            "metadata": {"name": "w", "namespace": "n", "resourceVersion": "1"},
            "spec": {"size": 3},
            "status": {"phase": "Ready"},
        }
        return Answer(200, obj, [], "")

    def apply(cluster, path, body, manager):
        return call(cluster, "PATCH", path, body)

    monkeypatch.setattr(api, "call", call)
    monkeypatch.setattr(upgrade_writes, "call", call)
    monkeypatch.setattr(upgrade_writes, "apply", apply)
    path = "/apis/example.com/v2/namespaces/n/widgets/w"
    assert upgrade_writes.rewrite(None, path, "v2", has_status=True).refused == []
    assert len(sent) >= 6
    for method, where, body in sent:
        assert body["apiVersion"] == f"example.com/{at(where)}", (method, where)
