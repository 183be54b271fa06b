"""The gate's pure parts: the clientConfig rewrite, the JSON-path diff, version priority,
schema translation for generation, the check plan, and conduct judgement."""

import copy
from pathlib import Path

from crdharness.binaries import versions
from crdharness.gate import diff
from crdharness.gate.checks import migration
from crdharness.gate.checks.conduct import conduct_problems
from crdharness.gate.checks.deprecation import default_warning, priority
from crdharness.gate.evidence import objects, sample_mutations, schemas
from crdharness.gate.given import manifests
from crdharness.gate.given.config import GateConfig, Migration, WebhookSpec
from crdharness.gate.given.manifests import Release
from crdharness.gate.phases import kubernetes_upgrade
from crdharness.gate.phases.runner import PHASES, GateRun
from crdharness.gate.results import CheckResult
from crdharness.gate.run import plan
from crdharness.gate.run.context import GateContext
from crdharness.gate.webhook.proxy import Exchange

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "things.example.com"},
    "spec": {
        "group": "example.com",
        "names": {"plural": "things", "kind": "Thing"},
        "versions": [
            {"name": "v1", "served": True, "storage": True},
            {"name": "v2", "served": True, "storage": False},
        ],
        "conversion": {
            "strategy": "Webhook",
            "webhook": {
                "conversionReviewVersions": ["v1"],
                "clientConfig": {
                    "service": {"namespace": "system", "name": "hook", "path": "/convert"},
                    "caBundle": "b2xk",
                },
            },
        },
    },
}


def test_the_rewrite_keeps_the_service_path_and_sets_the_ca():
    pointed = manifests.point_conversion(
        CRD, manifests.url_reach("https://127.0.0.1:5000", "bmV3"), WebhookSpec()
    )
    config = pointed["spec"]["conversion"]["webhook"]["clientConfig"]
    assert config == {"url": "https://127.0.0.1:5000/convert", "caBundle": "bmV3"}
    assert CRD["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["name"] == "hook"


def test_the_rewrite_keeps_a_urls_path():
    crd = copy.deepcopy(CRD)
    crd["spec"]["conversion"]["webhook"]["clientConfig"] = {"url": "https://hook:443/v/convert"}
    pointed = manifests.point_conversion(
        crd, manifests.url_reach("https://127.0.0.1:1", "Y2E="), WebhookSpec()
    )
    assert pointed["spec"]["conversion"]["webhook"]["clientConfig"]["url"] == (
        "https://127.0.0.1:1/v/convert"
    )


def test_a_crd_without_conversion_gets_one_only_when_declared():
    crd = copy.deepcopy(CRD)
    del crd["spec"]["conversion"]
    untouched = manifests.point_conversion(
        crd, manifests.url_reach("https://127.0.0.1:1", "Y2E="), WebhookSpec()
    )
    assert "conversion" not in untouched["spec"]
    spec = WebhookSpec(convert=["things.example.com"], path="/c", review_versions=["v1"])
    pointed = manifests.point_conversion(
        crd, manifests.url_reach("https://127.0.0.1:1", "Y2E="), spec
    )
    assert pointed["spec"]["conversion"] == {
        "strategy": "Webhook",
        "webhook": {
            "conversionReviewVersions": ["v1"],
            "clientConfig": {"url": "https://127.0.0.1:1/c", "caBundle": "Y2E="},
        },
    }


def test_convert_patterns_name_every_multi_version_crd_they_match():
    # Crossplane adds a conversion stanza to each multi-version CRD of a provider at install:
    # one pattern, not 300 names, says so to the gate.
    crd = copy.deepcopy(CRD)
    del crd["spec"]["conversion"]
    single = copy.deepcopy(crd)
    single["spec"]["versions"] = single["spec"]["versions"][:1]
    reach = manifests.url_reach("https://127.0.0.1:1", "Y2E=")
    for given in (["*"], ["*.example.com"], ["things.*"]):
        spec = WebhookSpec(convert=given)
        assert spec.converts(crd), given
        assert manifests.point_conversion(crd, reach, spec)["spec"]["conversion"]["strategy"] == (
            "Webhook"
        )
        assert not spec.converts(single), given  # one version: nothing to convert
        assert "conversion" not in manifests.point_conversion(single, reach, spec)["spec"]
    assert not WebhookSpec(convert=["*.example.org"]).converts(crd)
    assert WebhookSpec(convert=["things.example.com"]).converts(single)  # named: as asked


def test_admission_configurations_are_pointed_hook_by_hook():
    configuration = {
        "kind": "ValidatingWebhookConfiguration",
        "webhooks": [
            {"name": "a", "clientConfig": {"service": {"name": "s", "path": "/validate-a"}}},
            {"name": "b", "clientConfig": {"service": {"name": "s", "path": "/validate-b"}}},
        ],
    }
    pointed = manifests.point_admission(
        configuration, manifests.url_reach("https://127.0.0.1:9", "Y2E="), None
    )
    assert [h["clientConfig"]["url"] for h in pointed["webhooks"]] == [
        "https://127.0.0.1:9/validate-a",
        "https://127.0.0.1:9/validate-b",
    ]


def test_the_diff_names_each_path_lost_changed_or_added():
    before = {"spec": {"a": 1, "list": [{"n": "x"}, {"n": "y"}]}, "status": {"conditions": [{}]}}
    after = {"spec": {"a": 1.0, "list": [{"n": "x"}, {"n": "z"}], "b": True}}
    found = {d.path: d.change for d in diff.differences(before, after)}
    assert found == {"status": "lost", "spec.list[1].n": "changed", "spec.b": "added"}
    assert diff.differences({"x": True}, {"x": 1}) != []  # true is not 1 in JSON


def test_an_empty_value_read_back_absent_is_normalised_not_lost():
    before = {
        "status": {"conditions": []},  # no data in it either
        "spec": {"a": [], "b": [1], "image": "", "replicas": 0, "on": False, "c": [{}]},
    }
    found = diff.differences(before, {"spec": {}})
    assert {d.path: d.normalised for d in found} == {
        "status": True,
        "spec.a": True,
        "spec.b": False,
        "spec.image": True,  # Go's omitempty drops "": no data lost
        "spec.replicas": False,  # a zero value: the schema decides (test_gate_zero_values)
        "spec.on": False,
        "spec.c": False,  # an item, if an empty one
    }


def test_leaves_name_every_scalar_by_its_path_and_schema_path():
    obj = {"spec": {"ports": [{"name": "a", "port": 1}], "on": True}}
    assert diff.leaves(obj) == {
        "spec.ports[0].name": "a",
        "spec.ports[0].port": 1,
        "spec.on": True,
    }
    assert diff.schema_path("spec.ports[12].name") == "spec.ports[].name"


def test_apply_patches_are_json_the_api_servers_yaml_decoder_reads_unchanged():
    import yaml

    from crdharness.gate.api import yaml_safe_json

    # YAML refuses the surrogate pairs JSON escapes astral characters as, and folds NEL and
    # U+2028 as line breaks: the value the server reads must be the value sent.
    for text in ["a\x9ab", "\U0001f600", "x\x00y", "line\x85break", "sep\u2028", "\ufeff", "é"]:
        body = {"spec": {"text": text}}
        assert yaml.safe_load(yaml_safe_json(body)) == body


def test_comparable_drops_what_every_write_changes():
    obj = {
        "apiVersion": "example.com/v1",
        "metadata": {
            "name": "n",
            "resourceVersion": "9",
            "managedFields": [],
            "annotations": {"t": "1"},
        },
    }
    assert diff.comparable(obj, ignore_annotations=("t",)) == {"metadata": {"name": "n"}}


def test_priority_orders_versions_as_the_documentation_does():
    declared = ["foo10", "v11beta2", "v1", "v12alpha1", "v3beta1", "foo1", "v10beta3", "v11alpha2"]
    documented = [
        "v1",
        "v11beta2",
        "v10beta3",
        "v3beta1",
        "v12alpha1",
        "v11alpha2",
        "foo1",
        "foo10",
    ]
    assert sorted(declared, key=priority, reverse=True) == documented


def test_the_default_deprecation_text_names_a_replacement_above_it():
    versions = [
        {"name": "v1alpha1", "served": True, "deprecated": True},
        {"name": "v1beta1", "served": True},
        {"name": "v1", "served": True},
    ]
    assert (
        default_warning("g", "v1alpha1", "K", versions) == "g/v1alpha1 K is deprecated; use g/v1 K"
    )
    assert default_warning("g", "v1", "K", versions) == "g/v1 K is deprecated"


def test_generated_values_follow_the_structural_schema():
    import re

    schema = {
        "type": "object",
        "required": ["n", "code", "items", "kind"],
        "properties": {
            "n": {"type": "integer", "format": "int32", "minimum": 3},
            "ios": {"x-kubernetes-int-or-string": True},
            "maybe": {"type": "string", "nullable": True},
            "kind": {"type": "string", "enum": ["A", "B"]},
            "code": {"type": "string", "pattern": "^[a-z]{2}-[0-9]+$"},
            "items": {
                "type": "array",
                "minItems": 1,
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {
                    "type": "object",
                    "required": ["name"],
                    "properties": {"name": {"type": "string", "maxLength": 3}},
                },
            },
        },
    }
    version = {
        "schema": {
            "openAPIV3Schema": {
                "type": "object",
                "properties": {"spec": schema},
                "required": ["spec"],
            }
        }
    }
    for body in objects.first_examples(version, 60, 0):
        spec = body["spec"]
        assert 3 <= spec["n"] < 2**31
        assert spec["kind"] in ("A", "B")
        assert re.fullmatch("[a-z]{2}-[0-9]+", spec["code"])
        names = [i["name"] for i in spec["items"]]
        assert names and len(names) == len(set(names)) and all(len(n) <= 3 for n in names)
        assert isinstance(spec.get("ios", 0), (int, str))
        assert spec.get("maybe", "") is None or isinstance(spec.get("maybe", ""), str)
        assert set(spec) <= set(schema["properties"])  # nothing the server would prune


def test_deep_optional_fields_stop_at_a_depth():
    node = {"type": "object", "properties": {"leaf": {"type": "string"}}}
    for _ in range(8):
        node = {"type": "object", "properties": {"next": node}}
    version = {"schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": node}}}}

    def depth(value) -> int:
        return (
            1 + max((depth(v) for v in value.values()), default=0) if isinstance(value, dict) else 0
        )

    assert (
        max(depth(b) for b in objects.first_examples(version, 40, 0)) <= objects.OPTIONAL_DEPTH + 1
    )


def test_mutated_samples_replace_one_subtree_and_keep_the_rest():
    from hypothesis import given, settings

    spec = {
        "type": "object",
        "properties": {
            "schedule": {"type": "string", "maxLength": 30},
            "retentionDays": {"type": "integer", "minimum": 1, "maximum": 9},
        },
    }
    status = {"type": "object", "properties": {"phase": {"type": "string", "enum": ["A", "B"]}}}
    root = {"type": "object", "properties": {"spec": spec, "status": status}}
    version = {"schema": {"openAPIV3Schema": root}}
    sample = objects.sample_body(
        {
            "kind": "B",
            "metadata": {"name": "s", "labels": {"a": "b"}},
            "spec": {"schedule": "0 3 * * *", "retentionDays": 5},
            "status": {"phase": "A"},
        }
    )
    seen = []

    @settings(max_examples=80, database=None)
    @given(sample_mutations.mutations(version, [sample]))
    def check(body):
        assert body[objects.METADATA] == {"labels": {"a": "b"}}  # metadata kept
        # One subtree replaced: the other top-level field is the sample's own.
        assert body["spec"] == sample["spec"] or body["status"] == sample["status"]
        seen.append(body)

    check()
    assert any(b["spec"].get("schedule") not in (None, "0 3 * * *") for b in seen)
    assert any(b["status"] != sample["status"] for b in seen)


def test_a_top_level_field_a_sample_leaves_out_is_drawn_and_added():
    from hypothesis import given, settings

    conditions = {
        "type": "array",
        "items": {"type": "object", "properties": {"type": {"type": "string"}}},
    }
    status = {"type": "object", "properties": {"conditions": conditions}}
    spec = {"type": "object", "properties": {"schedule": {"type": "string"}}}
    root = {"type": "object", "properties": {"spec": spec, "status": status}}
    version = {"schema": {"openAPIV3Schema": root}}
    sample = objects.sample_body({"kind": "B", "spec": {"schedule": "0 3 * * *"}})
    with_status = []

    @settings(max_examples=60, database=None)
    @given(sample_mutations.mutations(version, [sample]))
    def check(body):
        if "status" in body:
            assert body["spec"] == sample["spec"]  # added beside the sample's own spec
            with_status.append(body)

    check()
    assert with_status, "no mutation added a status to a sample without one"


def test_generated_objects_repeat_for_a_seed():
    version = {
        "schema": {"openAPIV3Schema": {"type": "object", "properties": {"a": {"type": "string"}}}}
    }
    assert objects.first_examples(version, 5, 1) == objects.first_examples(version, 5, 1)
    assert objects.first_examples(version, 5, 1) != objects.first_examples(version, 5, 2)


def release(index: int, versions: list[dict]) -> Release:
    crd = copy.deepcopy(CRD)
    crd["spec"]["versions"] = versions
    return Release(index, f"r{index}", {"things.example.com": crd})


def test_the_plan_names_every_check_the_history_calls_for():
    history = [
        release(0, [{"name": "v1alpha1", "served": True, "storage": True}]),
        release(
            1,
            [
                {"name": "v1alpha1", "served": True, "storage": False, "deprecated": True},
                {"name": "v1", "served": True, "storage": True},
            ],
        ),
        release(2, [{"name": "v1", "served": True, "storage": True}]),
    ]
    config = GateConfig(source=None, crds=[], webhook=WebhookSpec(command=["x"]))
    ids = [f"{c.check}[{c.subject}]" for c in plan.plan(config, history)]
    assert ids == [
        "install[release 1]",
        "install[release 2]",
        "install[release 3]",
        "upgrade[release 1->2]",
        "migration[release 2]",
        "upgrade[release 2->3]",
        "migration[release 2->3]",
        "deprecation[release 2->3]",
        "deprecation[release 2]",
        "schemas-vs-strategy[things.example.com]",
        "webhook-conduct[webhook]",
    ]


def test_a_release_that_ships_a_migration_plans_its_migration_check():
    history = [
        release(0, [{"name": "v1alpha1", "served": True, "storage": True}]),
        release(1, [{"name": "v1alpha1", "served": True, "storage": True}]),
    ]
    config = GateConfig(source=None, crds=[], migrations={1: Migration("rewrite")})
    assert "migration[release 2]" in [f"{c.check}[{c.subject}]" for c in plan.plan(config, history)]
    config.migrations = {}
    assert "migration[release 2]" not in [
        f"{c.check}[{c.subject}]" for c in plan.plan(config, history)
    ]


def test_removal_advice_says_whether_rewriting_can_migrate_the_data():
    def version(name, field, storage):
        schema = {
            "type": "object",
            "properties": {"spec": {"type": "object", "properties": {field: {"type": "string"}}}},
        }
        return {
            "name": name,
            "served": True,
            "storage": storage,
            "schema": {"openAPIV3Schema": schema},
        }

    same = [
        release(0, [version("v1alpha1", "colour", True)]),
        release(1, [version("v1alpha1", "colour", False), version("v1", "colour", True)]),
        release(2, [version("v1", "colour", True)]),
    ]
    config = GateConfig(source=None, crds=[])
    advice = migration.removal_advice(same, same[2], "things.example.com", ["v1alpha1"], config)
    assert advice[0] == "v1alpha1 has been in status.storedVersions since release 1 stored it"
    assert "a conversion path to v1 exists" in advice[1]
    assert "migrate: rewrite" in advice[1]
    renamed = [
        same[0],
        release(1, [version("v1alpha1", "colour", False), version("v1", "color", True)]),
        release(2, [version("v1", "color", True)]),
    ]
    for r in renamed:  # strategy None: rewriting changes only apiVersion
        r.crds["things.example.com"]["spec"].pop("conversion")
    advice = migration.removal_advice(
        renamed, renamed[2], "things.example.com", ["v1alpha1"], config
    )
    assert "rewriting cannot migrate the data" in advice[1]
    assert "spec.colour exists at v1alpha1 but not at v1" in advice[1]


def test_schema_differences_are_grouped_by_subtree():
    def version(name, spec):
        root = {"type": "object", "properties": {"spec": {"type": "object", "properties": spec}}}
        return {
            "name": name,
            "served": True,
            "storage": name == "v1",
            "schema": {"openAPIV3Schema": root},
        }

    legacy = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}}
    r = release(
        0,
        [
            version("v1", {"legacy": legacy, "n": {"type": "integer"}}),
            version("v2", {"n": {"type": "string"}}),
        ],
    )
    assert schemas.schema_differences(r, "things.example.com", "v1", "v2") == [
        "spec.legacy (and 2 fields under it) exists at v1 but not at v2: lost when read at v2",
        "spec.n is integer at v1 but string at v2: invalid at v2",
    ]


def test_a_phase_that_raises_leaves_every_check_it_had_not_decided_not_proven():
    history = [release(0, [{"name": "v1", "served": True, "storage": True}])]
    config = GateConfig(source=None, crds=[])
    checks = plan.plan(config, history)
    ctx = GateContext(None, config, history, {}, lambda line: None, planned=checks)

    def history_phase(ctx):
        ctx.result("install", "release 1").evidence = "1 CRDs created"  # decided: stays
        raise ConnectionError("the API server went away\nsecond line")

    run = GateRun(ctx, {**PHASES, "history": history_phase})
    run.run("history")
    assert run.decision(checks[0]).status == "pass"
    undecided = [c for c in checks if c.phase == "history" and c.key != checks[0].key]
    for check in undecided:
        result = run.decision(check)
        assert result.status == "not proven"
        assert result.evidence == (
            "not proven: the gate could not finish this check: "
            "ConnectionError: the API server went away"
        )
        assert result.details[0].startswith("raised at gate/")
    # A phase that never ran says so; none shows pass without evidence.
    strategy = run.decision(next(c for c in checks if c.phase == "candidate"))
    assert strategy.status == "not proven" and "not run" in strategy.evidence
    assert {r.key for r in run.decide_all()} >= {c.key for c in checks}


def test_a_check_the_gate_fails_in_is_not_proven_and_what_it_had_found_stays_a_finding():
    from crdharness.gate.results import CheckResult
    from crdharness.gate.run.own_failures import contained

    clean, found = CheckResult("round-trip", "a"), CheckResult("round-trip", "b")
    found.fail("v1->v2->v1 lost spec.x")
    with contained(clean, found):
        [][0]  # the gate's own bug, half way through both checks
    assert clean.status == "not proven"
    assert clean.evidence.startswith("not proven: the gate could not finish this check: IndexError")
    assert clean.details == ["raised outside the harness"]  # here: in the test's own code
    assert found.status == "FAIL" and found.evidence == "v1->v2->v1 lost spec.x"
    assert found.details[0].startswith("(and then the gate could not finish this check")


def test_the_kubernetes_upgrade_is_planned_only_in_the_run_on_the_oldest_listed_version():
    history = [release(0, [{"name": "v1", "served": True, "storage": True}])]
    config = GateConfig(source=None, crds=[], webhook=None)
    path = plan.kubernetes_path(["1.37", "1.35", "1.36"], "1.35")
    assert [r.minor for r in path] == ["1.35", "1.36", "1.37"]
    ids = [f"{c.check}[{c.subject}]" for c in plan.plan(config, history, path)]
    assert ids[-2:] == ["kubernetes-upgrade[1.35->1.36]", "kubernetes-upgrade[1.36->1.37]"]
    assert plan.kubernetes_path(["1.36", "1.37"], "1.37") == []
    assert plan.kubernetes_path(["1.37"], "1.37") == []


class UpgradeComparison:
    """The kubernetes-upgrade judgement on reads made up here (no cluster)."""

    def __init__(self, revisions_after: dict[str, int]):
        self.revisions_after = revisions_after

    def judge(self, before, after, revisions_before) -> CheckResult:
        result = CheckResult("kubernetes-upgrade", "1.36->1.37")
        older, newer = versions.resolve("1.36"), versions.resolve("1.37")
        kubernetes_upgrade.judge(
            result, before, after, revisions_before, self.revisions_after, older, newer
        )
        return result


def read(name, rv="5", **spec):
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": rv}, "spec": spec}


def test_the_kubernetes_upgrade_check_fails_on_a_changed_field_or_a_rewrite():
    key = ("things.example.com", "v2", "ns", "a")
    same = UpgradeComparison({"k/a": 7}).judge(
        {key: read("a", x=1)}, {key: read("a", x=1)}, {"k/a": 7}
    )
    assert same.passed and "stored bytes untouched" in same.evidence
    changed = UpgradeComparison({"k/a": 7}).judge(
        {key: read("a", x=1)}, {key: read("a", x=2)}, {"k/a": 7}
    )
    assert changed.passed is False
    assert "things.example.com ns/a at v2: spec.x: 1 -> 2" in changed.details
    missing = UpgradeComparison({}).judge({key: read("a", x=1)}, {}, {"k/a": 7})
    assert missing.passed is False and "not under v1.37.2" in missing.evidence
    rewritten = UpgradeComparison({"k/a": 9}).judge(
        {key: read("a", x=1)}, {key: read("a", x=1)}, {"k/a": 7}
    )
    assert rewritten.passed is False and "rewritten" in rewritten.evidence
    # Written meanwhile by someone else (a new resourceVersion): counted, not judged.
    moved = UpgradeComparison({"k/a": 9}).judge(
        {key: read("a", x=1)}, {key: read("a", rv="6", x=2)}, {"k/a": 7}
    )
    assert moved.passed and moved.counts["written_meanwhile"] == 1


def review(objects_in, answer_objects, **response):
    request = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": "u1", "desiredAPIVersion": "example.com/v2", "objects": objects_in},
    }
    answer = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "response": {
            "uid": "u1",
            "result": {"status": "Success"},
            "convertedObjects": answer_objects,
            **response,
        },
    }
    return Exchange("/convert", request, 200, answer, 0.01)


def test_conduct_accepts_a_correct_answer_and_names_each_misdeed():
    sent = [{"apiVersion": "example.com/v1", "metadata": {"name": "a", "uid": "1"}}]
    good = [
        {
            "apiVersion": "example.com/v2",
            "metadata": {"name": "a", "uid": "1", "labels": {"x": "y"}},
        }
    ]
    assert conduct_problems(review(sent, good)) == []
    renamed = [{"apiVersion": "example.com/v2", "metadata": {"name": "b", "uid": "1"}}]
    assert "must have the same name: 'a' != 'b'" in conduct_problems(review(sent, renamed))[0]
    assert "answered uid u2" in conduct_problems(review(sent, good, uid="u2"))[0]
    assert "1 objects sent, 0 returned" in conduct_problems(review(sent, []))[0]
    # A CRD has no timeoutSeconds for conversion: kube-apiserver's fixed 30 s is the limit.
    slow = review(sent, good)
    slow.seconds = 12
    assert conduct_problems(slow) == []
    slow.seconds = 31
    assert "kube-apiserver gives up after 30 s" in conduct_problems(slow)[0]


def test_on_kind_the_users_image_runs_behind_a_service(tmp_path):
    import base64

    from crdharness import certs
    from crdharness.gate.webhook import kind_webhook

    spec = WebhookSpec(
        image="example.com/conv:1",
        port=9443,
        cert_dir="/certs",
        args=["--cert-dir={cert_dir}", "--port={port}"],
        env={"TLS": "{tls_cert}"},
    )
    ca = certs.CertificateAuthority(tmp_path)
    serving = ca.issue_server("s", kind_webhook.SERVICE_HOST)
    docs = {d["kind"]: d for d in kind_webhook.manifests(spec, serving, ca.pem)}
    pod = docs["Deployment"]["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["image"] == "example.com/conv:1"
    assert container["args"] == ["--cert-dir=/certs", "--port=9443"]
    assert container["env"] == [{"name": "TLS", "value": "/certs/tls.crt"}]
    assert container["volumeMounts"][0]["mountPath"] == "/certs"
    assert pod["volumes"][0]["secret"]["secretName"] == docs["Secret"]["metadata"]["name"]
    assert base64.b64decode(docs["Secret"]["data"]["tls.key"]) == serving.key.read_bytes()
    assert docs["Service"]["spec"]["ports"][0] == {
        "name": "webhook",
        "port": 443,
        "targetPort": "webhook",
    }
    pointed = manifests.point_conversion(CRD, kind_webhook.service_reach(ca.bundle_b64), spec)
    assert pointed["spec"]["conversion"]["webhook"]["clientConfig"] == {
        "service": {
            "namespace": "crdharness-gate",
            "name": "gate-webhook",
            "path": "/convert",
            "port": 443,
        },
        "caBundle": ca.bundle_b64,
    }


def test_on_kind_what_the_gate_runs_is_load_apply_and_rollout(tmp_path):
    import yaml

    from crdharness.gate.webhook.kind_webhook import KindUserWebhook

    class Cluster:
        calls: list = []  # noqa: RUF012 (a recorder)

        def kubectl(self, *args, input=None, check=True):
            self.calls.append((args, yaml.safe_load_all(input) if input else None))
            return type("Done", (), {"returncode": 0, "stdout": "", "stderr": ""})()

    loaded = []
    cluster = Cluster()
    spec = WebhookSpec(image="example.com/conv:1", ready_timeout=60)
    hook = KindUserWebhook(
        spec, tmp_path, cluster, lambda image, d: loaded.append(image), ready_path="/convert"
    )
    hook.start()
    hook.stop()
    assert loaded == ["example.com/conv:1"]
    verbs = [args[0] for args, _ in cluster.calls]
    assert verbs == ["apply", "rollout", "delete"]
    assert cluster.calls[1][0][:3] == ("rollout", "status", "deployment/gate-webhook")
    assert "--timeout=60s" in cluster.calls[1][0]


def test_on_kind_a_command_webhook_is_refused_in_one_line(tmp_path):
    import pytest

    from crdharness.errors import HarnessError
    from crdharness.gate.webhook.kind_webhook import KindUserWebhook

    with pytest.raises(HarnessError, match="give `image:`"):
        KindUserWebhook(WebhookSpec(command=["x"]), tmp_path, None, None)


def test_generated_objects_do_not_depend_on_which_local_modules_are_loaded(tmp_path, monkeypatch):
    """The same seed gives the same objects whatever else was imported: hypothesis would
    otherwise also draw literals from the source of every local module loaded."""
    strings = {"a": {"type": "string"}, "b": {"type": "string"}}
    spec = {"type": "object", "properties": strings}
    entry = {
        "name": "v1",
        "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}},
    }
    before = objects.first_examples(entry, 60, seed=7)
    literals = "\n".join(f'L{i} = "local-literal-{i}"' for i in range(200))
    (tmp_path / "literals_module.py").write_text(literals + "\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    __import__("literals_module")
    after = objects.first_examples(entry, 60, seed=7)
    assert after == before
    assert "local-literal" not in repr(after)


def _search_with(
    attempt, monkeypatch, stall: float | None = None, shrink_seconds=20.0, as_found=lambda f: False
):
    """``drawn_search.search`` over a one-field schema, with ``attempt`` standing for a
    round trip (no API server: what is tested is when the search stops)."""
    from types import SimpleNamespace

    from crdharness.gate.checks import drawn_search

    if stall is not None:
        monkeypatch.setattr(drawn_search, "SHRINK_STALL_SECONDS", stall)
    schema = {"type": "object", "properties": {"size": {"type": "integer", "minimum": 0}}}
    entry = {"name": "v1", "schema": {"openAPIV3Schema": {"properties": {"spec": schema}}}}
    config = GateConfig(Path("gate.yaml"), crds=[], generate=200, shrink_seconds=shrink_seconds)
    ctx = SimpleNamespace(config=config, sample_bodies=lambda crd, version: [])
    return drawn_search.search(
        ctx, "things.example.com", entry, attempt, lambda f: True, [], as_found
    )


def _fails_from(least: int, calls: list):
    from crdharness.gate.results import DataChanged

    def attempt(body):
        calls.append(body)
        size = body.get("spec", {}).get("size")
        if size is not None and size >= least:
            return DataChanged("lost spec.size", [], [], frozenset({"spec.size"}))
        return None

    return attempt


def test_the_search_shrinks_a_failure_to_its_smallest_object(monkeypatch):
    calls: list = []
    # No stall limit here: on a loaded machine 3 s can pass between two smaller failures,
    # and what is tested is where the shrinking ends, not how fast.
    found = _search_with(_fails_from(7, calls), monkeypatch, stall=3600.0, shrink_seconds=3600)
    assert found is not None and found.body["spec"]["size"] == 7
    assert "metadata" not in found.body  # shrunk away: it played no part in the failure


def test_once_shrunk_the_search_makes_no_more_round_trips_to_explain_it(monkeypatch):
    calls: list = []
    found = _search_with(_fails_from(7, calls), monkeypatch, stall=3600.0, shrink_seconds=3600)
    assert found is not None and found.body["spec"]["size"] == 7
    smallest = next(i for i, body in enumerate(calls) if body.get("spec", {}).get("size") == 7)
    # hypothesis's explain phase would try ~60 variations of the minimal object here
    assert len(calls) - smallest - 1 <= 10, f"{len(calls) - smallest - 1} round trips after"


def test_a_failure_to_be_shown_as_found_is_returned_unshrunk_at_once(monkeypatch):
    # The previous release's debt (or a failure shrunk for another pair): no shrinking.
    calls: list = []
    found = _search_with(
        _fails_from(7, calls), monkeypatch, stall=3600.0, shrink_seconds=3600, as_found=bool
    )
    first = next(i for i, body in enumerate(calls) if body.get("spec", {}).get("size", -1) >= 7)
    assert found is not None and found.body is calls[first]
    assert len(calls) == first + 1, "no round trip after the first failure"


def test_the_failures_a_search_keeps_hold_no_frames_of_it(monkeypatch):
    # Raised through hypothesis, each failure's traceback held the search's engine alive for
    # as long as the run kept the failure (to the end: results, same_write).
    kept: list = []

    def attempt(body):
        failure = _fails_from(7, [])(body)
        if failure is not None:
            kept.append(failure)
        return failure

    found = _search_with(attempt, monkeypatch, stall=3600.0, shrink_seconds=3600)
    assert found is not None and len(kept) > 1
    assert [f for f in kept if f.__traceback__ is not None or f.__context__ is not None] == []


def test_the_search_stops_shrinking_once_nothing_smaller_is_found(monkeypatch):
    calls: list = []
    found = _search_with(_fails_from(7, calls), monkeypatch, stall=0.0)
    first = next(i for i, body in enumerate(calls) if body.get("spec", {}).get("size", -1) >= 7)
    assert found is not None and found.body is calls[first]
    assert len(calls) == first + 1, "the search went on shrinking past its stall limit"


def test_a_pairs_not_proven_names_its_own_refusals_not_the_runs(monkeypatch):
    from crdharness.gate.checks import object_round_trip, round_trips

    versions = [{"name": "v1", "served": True, "storage": True}, {"name": "v2", "served": True}]
    config = GateConfig(Path("gate.yaml"), crds=[], generate=0, min_objects=10)
    ctx = GateContext(None, config, [release(0, versions)], {}, lambda line: None)
    ctx.sample_bodies = lambda crd, version: [{"spec": {"n": i}} for i in range(5)]

    def refused_twice_then_created(ctx, manifest, entry, a, b, body, seen, sample=False):
        n = body["spec"]["n"]
        if n < 2:
            said = f'Thing.example.com "o-{n}" is invalid: spec.n: must be at least 2'
            ctx.count("refused by the API server's validation (422)", said)
        seen.counts["created" if n >= 2 else "refused"] += 1
        seen.counts["compared"] += n >= 2

    monkeypatch.setattr(object_round_trip, "run", refused_twice_then_created)
    round_trips.check_pair(ctx, "things.example.com", "v1", "v2")
    round_trips.check_pair(ctx, "things.example.com", "v2", "v1")
    second = ctx.result("round-trip", "things.example.com v2->v1")
    assert second.status == "not proven"
    # This pair's share and causes: the first pair's two refusals are not counted again.
    assert "2 of 5 objects refused (40 %), by: 2x spec.n: must be at least 2" in second.evidence


def test_a_person_sees_only_what_a_finding_names_of_an_object():
    from crdharness.gate.reporting.terminal import relevant

    obj = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "n", "managedFields": [{}], "uid": "u"},
        "spec": {"size": "large", "name": "\u0013\u0080", "nested": {"a": 1, "b": 2}},
        "status": {"conditions": [{"type": "Ready", "reason": "x"}], "phase": "Done"},
    }
    assert relevant(obj, ["spec.nested.a", "status.conditions[].type"]) == {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": {"nested": {"a": 1}},
        "status": {"conditions": [{"type": "Ready"}]},
    }
    # Naming no field: every field, still without what the server writes.
    assert relevant(obj, [])["metadata"] == {"name": "w"}
    assert relevant(obj, [])["spec"]["size"] == "large"


def test_an_allow_entry_may_be_written_as_report_md_prints_paths():
    from crdharness.gate.given.config import Allowance

    printed = Allowance(path="spec.route.matchers[].regex", between=None, reason="r")
    assert printed.covers("spec.route.matchers[3].regex", "v1", "v2")
    assert printed.covers_upgrade("spec.route.matchers[0].regex.inner", "v1")
    assert not printed.covers("spec.route.matchers[3].regexp", "v1", "v2")
    concrete = Allowance(path="spec.route.matchers[3]", between=None, reason="r")
    assert concrete.covers("spec.route.matchers[3].regex", "v1", "v2")
    assert not concrete.covers("spec.route.matchers[2].regex", "v1", "v2")


def test_an_allow_path_is_declared_where_the_schema_has_it_at_any_depth():
    from crdharness.gate.evidence.schemas import declares

    leaf = {"type": "object", "properties": {"regex": {"type": "string"}}}
    version = {
        "schema": {
            "openAPIV3Schema": {
                "type": "object",
                "properties": {
                    "spec": {
                        "type": "object",
                        "properties": {
                            "matchers": {"type": "array", "items": leaf},
                            "labels": {"type": "object", "additionalProperties": leaf},
                            "raw": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                        },
                    }
                },
            }
        }
    }
    for path in (
        "spec.matchers[].regex",
        "spec.matchers[2].regex",
        "spec.labels.anyKey.regex",
        "spec.raw.whatever.below",
        "metadata.labels",
    ):
        assert declares(version, path), path
    for path in ("spec.matcher", "spec.matchers[].regexp", "status"):
        assert not declares(version, path), path


def test_a_failure_block_says_how_many_paths_it_left_out_and_shows_the_deep_value():
    from crdharness.gate.reporting import terminal
    from crdharness.gate.results import CheckResult

    deep = {"a": {"b": {"c": {"d": {"e": {"f": {"flag": True}}}}}}}
    obj = {"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "o"}, "spec": deep}
    paths = [f"spec.p{i}" for i in range(6)]
    result = CheckResult("round-trip", "k v1->v2", False, "lost " + ", ".join(paths))
    result.objects = [("sent", obj)]
    block = terminal.failure_block(result, {})
    assert any(line.endswith("(+1 more)") for line in block), block
    shown = terminal.excerpt(
        [f"line {i}" for i in range(5)] + ["      flag: true"] + [f"tail {i}" for i in range(9)],
        ["spec.a.b.c.d.e.f.flag"],
    )
    assert "      flag: true" in shown and shown[0].startswith("… (")
    assert len([line for line in shown if not line.startswith("…")]) == terminal.OBJECT_LINES


def test_a_pair_the_gate_fails_in_stops_only_that_pair_and_the_debt_is_still_settled(monkeypatch):
    from crdharness.gate.phases import candidate

    served = [{"name": v, "served": True, "storage": v == "v1"} for v in ("v1", "v2", "v3")]
    history = [release(0, served), release(1, served)]
    config = GateConfig(source=None, crds=[])
    ctx = GateContext(None, config, history, {}, lambda line: None, planned=[])
    ctx.history_completed = True
    judged: list[tuple[str, str]] = []

    def check_pair(ctx, name, a, b):
        if (a, b) == ("v1", "v2"):
            {}["gate's own bug"]
        judged.append((a, b))

    settled = []
    monkeypatch.setattr(candidate, "ensure_namespace", lambda cluster, ns: None)
    monkeypatch.setattr(candidate.round_trips, "check_pair", check_pair)
    monkeypatch.setattr(candidate.schemas_vs_strategy, "check", lambda ctx, name: None)
    monkeypatch.setattr(candidate, "_settle_debt", lambda ctx: settled.append(True))
    candidate.run(ctx)
    assert len(judged) == 5 and ("v1", "v2") not in judged  # the other pairs went on
    crashed = ctx.result("round-trip", "things.example.com v1->v2")
    assert crashed.status == "not proven" and "KeyError" in crashed.evidence
    assert ctx.result("convertibility", "things.example.com v1->v2").status == "not proven"
    assert settled == [True]


def test_too_few_objects_says_what_to_do_about_its_larger_cause():
    from crdharness.gate.checks.round_trips import too_few

    refused = "5 of 49 objects refused (10 %), by: spec: Invalid value"
    thin = too_few(4, 10, refused, 0)
    assert thin == (
        "not proven: only 4 objects reached this check (at least 10 needed, `min_objects`); "
        f"{refused}: add samples the API server and your admission webhooks accept"
    )
    # kueue's manager runs its controllers beside its webhook: they wrote 31 of the objects.
    busy = too_few(4, 10, refused, 31)
    assert busy.startswith("not proven: only 4 objects reached this check (at least 10 needed")
    assert "; 31 written meanwhile by another client (your controllers" in busy
    assert busy.endswith(
        "run the webhook without the controllers that write these objects (a webhook-only "
        "mode), or add samples the API server and your admission webhooks accept"
    )
