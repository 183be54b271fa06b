"""The siblings a CEL rule above a path selects, set so that an object holding the path can
be created (``gate.evidence.rule_literals``), without a cluster."""

from crdharness.gate.evidence import rule_literals

SCHEMA = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "x-kubernetes-validations": [
                {"rule": "!has(self.sts) || self.provider == 'aws' || self.provider == 'generic'"},
                {"rule": "!has(self.account) || self.provider == 'aws'"},
            ],
            "properties": {
                "provider": {"type": "string", "enum": ["generic", "aws", "gcp"]},
                "account": {"type": "string"},
                "sts": {
                    "type": "object",
                    "x-kubernetes-validations": [
                        {"rule": "!has(self.certRef) || self.kind == 'ldap'"}
                    ],
                    "properties": {
                        "kind": {"type": "string"},
                        "certRef": {"type": "object", "properties": {"name": {"type": "string"}}},
                    },
                },
            },
        }
    },
}


def test_the_rules_above_a_path_give_values_to_the_siblings_they_compare():
    found = rule_literals.assignments(SCHEMA, "spec.sts.certRef.name")
    # an enum's values, a string's from the rule's own literals; has(self.x) alone: untouched
    assert found == [
        {"spec.provider": "generic", "spec.sts.kind": "ldap"},
        {"spec.provider": "aws", "spec.sts.kind": "ldap"},
        {"spec.provider": "gcp", "spec.sts.kind": "ldap"},
    ]


def test_a_field_only_tested_for_presence_is_never_set():
    found = rule_literals.assignments(SCHEMA, "spec.account")
    assert all("spec.account" not in a and "spec.sts" not in str(a) for a in found)
    assert {"spec.provider": "aws"} in found


def test_no_rule_above_the_path_gives_nothing():
    sts = SCHEMA["properties"]["spec"]["properties"]["sts"]
    assert rule_literals.assignments(sts["properties"]["certRef"], "name") == []
    assert rule_literals.assignments(sts, "kind") == []  # the path's own field: its values


def test_an_assignment_is_applied_where_the_object_holding_it_exists():
    body = {"spec": {"sts": {"certRef": {"name": "a"}}, "items": [{}]}}
    done = rule_literals.applied(
        body, {"spec.provider": "aws", "spec.items[].on": True, "spec.tls.mode": "x"}
    )
    assert done == {
        "spec": {"sts": {"certRef": {"name": "a"}}, "items": [{"on": True}], "provider": "aws"}
    }  # no spec.tls made up: it may require more than the rule names
    assert body == {"spec": {"sts": {"certRef": {"name": "a"}}, "items": [{}]}}
