"""webhook-conduct judges returned metadata as kube-apiserver does (``webhookConverter``'s
``validateConvertedObject`` and ``restoreObjectMeta``): what it refuses is misconduct; what
it copies back from the object sent (Go's ``creationTimestamp: null``) is not."""

import copy

from crdharness.gate.checks import returned_metadata
from crdharness.gate.checks.conduct import conduct_problems
from tests.test_gate_parts import review

SENT = {
    "apiVersion": "example.com/v1",
    "kind": "Widget",
    "metadata": {
        "name": "a",
        "namespace": "ns",
        "uid": "1",
        "resourceVersion": "7",
        "generation": 2,
        "creationTimestamp": "2026-01-02T03:04:05Z",
        "labels": {"app": "w"},
        "annotations": {"note": "x"},
    },
    "spec": {"paused": True},
}


def answer(**metadata) -> dict:
    """SENT converted to v2, its metadata updated with ``metadata`` (None deletes a key)."""
    obj = copy.deepcopy(SENT)
    obj["apiVersion"] = "example.com/v2"
    for key, value in metadata.items():
        if value is None:
            obj["metadata"].pop(key, None)
        else:
            obj["metadata"][key] = value
    return obj


def judged(converted: dict) -> tuple[list[str], list[str]]:
    restored: list[str] = []
    problems = conduct_problems(review([SENT], [converted]), restored)
    return problems, restored


def test_creation_timestamp_null_from_a_go_webhook_is_restored_not_misconduct():
    go = answer()
    go["metadata"]["creationTimestamp"] = None
    problems, restored = judged(go)
    assert problems == []
    assert restored == ['metadata.creationTimestamp: "2026-01-02T03:04:05Z" -> null']


def test_other_metadata_the_server_copies_back_is_not_misconduct():
    problems, restored = judged(
        answer(resourceVersion=None, generation=None, finalizers=["x"], managedFields=None)
    )
    assert problems == []
    assert sorted(restored) == [
        'metadata.finalizers: appeared (["x"])',
        "metadata.generation: lost (was 2)",
        'metadata.resourceVersion: lost (was "7")',
    ]


def test_a_changed_name_namespace_or_uid_is_refused():
    for key, value in (("name", "b"), ("namespace", "other"), ("uid", "2")):
        problems, _ = judged(answer(**{key: value}))
        assert len(problems) == 1, problems
        refused = "kube-apiserver refuses the object it returned: must have the same"
        assert f"{refused} {key}" in problems[0]
    # Absent reads as "" (unstructured's getters): a dropped uid is a changed one.
    problems, _ = judged(answer(uid=None))
    assert problems and "must have the same uid: '1' != ''" in problems[0]


def test_a_changed_kind_or_missing_metadata_is_refused():
    renamed = answer()
    renamed["kind"] = "Gadget"
    assert "must have the same kind: 'Widget' != 'Gadget'" in judged(renamed)[0][0]
    bare = answer()
    del bare["metadata"]
    problems, _ = judged(bare)
    assert any("missing metadata in converted object" in p for p in problems), problems


def test_labels_and_annotations_change_as_the_server_allows():
    # Changed to valid values, or dropped: the server takes them from the answer.
    assert judged(answer(labels={"app": "w", "tier": "db"}))[0] == []
    assert judged(answer(labels=None, annotations=None))[0] == []
    # Invalid ones it refuses (metav1validation.ValidateLabels, ValidateAnnotations).
    assert "invalid value" in judged(answer(labels={"app": "not valid!"}))[0][0]
    assert "invalid key" in judged(answer(labels={"-bad": "w"}))[0][0]
    assert "invalid key" in judged(answer(annotations={"a/b/c": "x"}))[0][0]
    assert "must be a string" in judged(answer(labels={"app": 1}))[0][0]
    assert "invalid metadata.labels of type list" in judged(answer(labels=["a"]))[0][0]
    # Unchanged, they are not validated again (the server compares first).
    odd = copy.deepcopy(SENT)
    odd["metadata"]["labels"] = {"app": "x" * 70}
    converted = copy.deepcopy(odd)
    converted["apiVersion"] = "example.com/v2"
    assert conduct_problems(review([odd], [converted])) == []


def test_label_keys_and_values_follow_apimachinery():
    assert returned_metadata._label_key("example.com/My.name_1")
    assert returned_metadata._label_key("A" * 63)
    assert not returned_metadata._label_key("A" * 64)
    assert not returned_metadata._label_key("Example.com/name")  # the prefix is lower case
    assert not returned_metadata._label_key("/name")
    assert not returned_metadata._label_key("name\n")  # Go's $ is the end of the text
    big = {"k": "v" * returned_metadata.ANNOTATIONS_LIMIT}
    problems = returned_metadata.refusals(SENT, answer(annotations=big))
    assert problems and "over 262144" in problems[0]


def test_problems_differing_only_in_review_object_count_or_byte_count_are_one_line():
    from crdharness.gate.checks.conduct import folded, kind

    said = (
        "kube-apiserver refuses the object it returned: metadata.annotations: {} bytes, over 262144"
    )
    problems = [
        f"review u1 (1 objects to g/v1alpha1): {said.format(650476)}",
        f"review u2 (2 objects to g/v1alpha1): {said.format(650760)}",
        f"review u3 (1 objects to g/v1alpha1): {said.format(650392)}",
        f"review u4 (1 objects to g/v1): {said.format(650392)}",  # another kind of review
    ]
    lines = folded(problems)
    assert lines == [
        f"{problems[0]} (and 2 more reviews alike, 650392 to 650760 bytes)",
        problems[3],
    ], lines
    # A folded line is of the kind of what it folds (a shard's line, another's the same).
    assert kind(lines[0]) == kind(problems[1]) != kind(problems[3])
