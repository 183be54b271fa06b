"""The manifest reader's own promises, without kubectl (test_manifests_yaml_kubectl.py holds
it to kubectl's reading): the YAML that PyYAML reads another way, and the gate reading it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crdharness import manifests_yaml
from crdharness.errors import HarnessError
from crdharness.gate.given import manifests


def one(text: str):
    (document,) = manifests_yaml.load_all(text)
    return document


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("=", "="),  # PyYAML: the !!value tag, which it cannot construct
        ("y", True),
        ("N", False),
        ("off", False),
        ("~", None),
        ("", None),
        ("0x1F", 31),
        ("017", 15),
        ("0o17", 15),
        ("08", 8),
        ("1_000", 1000),
        ("1e3", 1000),
        ("1.0", 1),
        ("1.5e3", 1500),
        ("-.5", -0.5),
        ("1e400", "1e400"),
        ("2001-12-14", "2001-12-14"),
        ("2001-12-14t21:59:43.10-05:00", "2001-12-14t21:59:43.10-05:00"),
        ("1:30", "1:30"),  # PyYAML: 90, a base-60 int
        ("!hostile.example.com/tag text", "text"),
    ],
)
def test_a_scalar_reads_as_kubectl_reads_it(text, value):
    read = one(f"x: {text}\n")["x"]
    assert read == value and type(read) is type(value)


def test_keys_are_strings_and_the_last_setting_wins():
    text = "1: a\ntrue: b\n1.5: c\n1e6: d\nk: first\nk: second\n"
    assert one(text) == {"1": "a", "true": "b", "1.5": "c", "1e+06": "d", "k": "second"}


def test_a_merge_sets_its_keys_where_it_stands():
    text = "base: &b {a: 1, b: 1}\nafter: {a: 2, <<: *b}\nbefore: {<<: *b, a: 2}\n"
    document = one(text)
    assert document["after"] == {"a": 1, "b": 1}  # go-yaml v2: the later << wins
    assert document["before"] == {"a": 2, "b": 1}
    document["before"]["b"] = 9
    assert document["base"]["b"] == 1  # an alias is a copy of its own


def test_json_first_then_yaml_as_kubectl_sniffs():
    assert manifests_yaml.load_all('{"a": 1.0}\n{"b": 1e3}') == [{"a": 1}, {"b": 1000}]
    assert manifests_yaml.load_all('{"a": NaN}') == [{"a": "NaN"}]  # not JSON: YAML


def test_a_list_is_its_items_which_take_its_kind():
    text = (
        "apiVersion: hostile.example.com/v1\nkind: HazardList\n"
        "items:\n- metadata: {name: a}\n- {apiVersion: v1, kind: ConfigMap}\n---\n~\n"
    )
    objects = [o for d in manifests_yaml.load_all(text) for o in manifests_yaml.objects(d)]
    assert objects == [
        {"metadata": {"name": "a"}, "apiVersion": "hostile.example.com/v1", "kind": "Hazard"},
        {"apiVersion": "v1", "kind": "ConfigMap"},
    ]


CRD_WITH_EQUALS = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: hazards.hostile.example.com}
spec:
  group: hostile.example.com
  names: {plural: hazards, singular: hazard, kind: Hazard}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          operator:
            type: string
            enum:
            - =
            - "!="
"""


def test_the_gate_reads_a_crd_whose_enum_holds_an_equals_sign(tmp_path):
    (tmp_path / "crd.yaml").write_text(CRD_WITH_EQUALS)
    ((path, crd),) = manifests.documents([tmp_path])
    assert path == tmp_path / "crd.yaml"
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert schema["properties"]["operator"]["enum"] == ["=", "!="]
    (release,) = manifests.load_history([[tmp_path / "crd.yaml"]], tmp_path)
    assert release.served("hazards.hostile.example.com") == ["v1"]


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ("a: 1\nb: [c\n", 3, "expected ',' or ']'"),
        ("a: 1\nb: .inf\n", 2, "json: unsupported value: +Inf"),
        ("a: 1\n--- b: 2\n", 2, "invalid Yaml document separator: b: 2"),
    ],
)
def test_a_file_kubectl_cannot_read_is_one_line_with_its_line(tmp_path, text, line, problem):
    (tmp_path / "bad.yaml").write_text(text)
    with pytest.raises(HarnessError) as raised:
        manifests.documents([tmp_path / "bad.yaml"])
    message = str(raised.value)
    assert message.startswith(f"{tmp_path / 'bad.yaml'}:{line}: not valid YAML: ")
    assert problem in message and "\n" not in message


def test_libyaml_parses_every_manifest_of_the_repository_as_pyyaml_does():
    """The fast parser (libyaml's) is only a speed-up: each file under examples/, tests/data/
    and manifests/ reads the same through it as through PyYAML's own parser, which the
    kubectl comparison was first made with; PyYAML's wheels ship libyaml, so it is there."""
    import yaml

    assert manifests_yaml.KubeCLoader is not None, "PyYAML was built without libyaml"
    root = Path(__file__).resolve().parent.parent
    files = [
        path
        for folder in ("examples", "tests/data", "manifests")
        for path in sorted((root / folder).rglob("*"))
        if path.suffix in (".yaml", ".yml") and not path.read_text().lstrip().startswith("{")
    ]
    assert len(files) > 100
    for path in files:
        text = path.read_text()
        try:
            slow = list(yaml.load_all(text, Loader=manifests_yaml.KubeLoader))
        except yaml.YAMLError:
            continue  # a file made to be refused: the refusal is PyYAML's own (next test)
        fast = list(yaml.load_all(text, Loader=manifests_yaml.KubeCLoader))
        assert json.dumps(fast, sort_keys=True) == json.dumps(slow, sort_keys=True), path


def test_excessive_aliasing_is_refused_through_libyaml_too():
    laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(7)
    )
    with pytest.raises(manifests_yaml.ManifestSyntaxError, match="excessive aliasing"):
        manifests_yaml.load_all(laughs)


def test_a_release_is_shown_without_its_manifests():
    release = manifests.Release(0, "release 1", {"a.example.com": {"spec": {"x": "y" * 10_000}}})
    assert len(repr(release)) < 200 and "release 1" in repr(release)


def test_crds_read_share_their_keys_and_short_strings_and_keep_long_ones(tmp_path):
    # A provider's thousands of CRDs repeat the same keys: each is kept once (interned).
    long_text = "a description " * 10
    for name in ("one", "two"):
        crd = {
            "apiVersion": manifests.CRD_API,
            "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{name}s.share.example.com"},
            "spec": {"versions": [{"name": "v1", "description": long_text, "type": "object"}]},
        }
        (tmp_path / f"{name}.json").write_text(json.dumps(crd))
    (release,) = manifests.load_history([[tmp_path]], tmp_path)
    one, two = (
        release.crds[f"{n}s.share.example.com"]["spec"]["versions"][0] for n in ("one", "two")
    )
    assert one == two and one["description"] == long_text
    assert [k for k in one] == ["name", "description", "type"]
    key_one, key_two = next(iter(one)), next(iter(two))
    assert key_one is key_two and one["type"] is two["type"]
